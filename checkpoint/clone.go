package checkpoint

// Size is the number of encoded bytes cp carries: its values, its deltas and
// its tasks' inputs.
func (cp *Checkpoint) Size() int {
	n := 0
	for _, v := range cp.Values {
		n += len(v)
	}
	for _, ws := range cp.Deltas {
		for _, w := range ws {
			n += len(w)
		}
	}
	for _, t := range cp.Tasks {
		n += len(t.Input)
	}
	return n
}

// Clone returns a deep copy of cp that shares no maps, slices or bytes with
// it. The encoded bytes of the copy live in one allocation, each slice capped
// at its length so that appending to one never overwrites another.
func (cp *Checkpoint) Clone() *Checkpoint {
	if cp == nil {
		return nil
	}
	a := arena(make([]byte, 0, cp.Size()))
	c := &Checkpoint{V: cp.V, ID: cp.ID, ParentID: cp.ParentID, TS: cp.TS, Full: cp.Full}
	if cp.Values != nil {
		c.Values = make(map[string][]byte, len(cp.Values))
		for k, v := range cp.Values {
			c.Values[k] = a.copy(v)
		}
	}
	if cp.Deltas != nil {
		c.Deltas = make(map[string][][]byte, len(cp.Deltas))
		for k, ws := range cp.Deltas {
			var cws [][]byte
			if ws != nil {
				cws = make([][]byte, len(ws))
				for i, w := range ws {
					cws[i] = a.copy(w)
				}
			}
			c.Deltas[k] = cws
		}
	}
	if cp.Versions != nil {
		c.Versions = make(map[string]uint64, len(cp.Versions))
		for k, v := range cp.Versions {
			c.Versions[k] = v
		}
	}
	if cp.Seen != nil {
		c.Seen = make(map[string]map[string]uint64, len(cp.Seen))
		for node, vs := range cp.Seen {
			var cvs map[string]uint64
			if vs != nil {
				cvs = make(map[string]uint64, len(vs))
				for k, v := range vs {
					cvs[k] = v
				}
			}
			c.Seen[node] = cvs
		}
	}
	if cp.Tasks != nil {
		c.Tasks = make([]Task, len(cp.Tasks))
		for i, t := range cp.Tasks {
			c.Tasks[i] = Task{ID: t.ID, Node: t.Node, Input: a.copy(t.Input)}
		}
	}
	return c
}

// arena hands out capped sub-slices of one backing array.
type arena []byte

func (a *arena) copy(b []byte) []byte {
	if b == nil {
		return nil
	}
	start := len(*a)
	*a = append(*a, b...)
	return (*a)[start:len(*a):len(*a)]
}

// cloneWrites returns a copy of ws whose values share one allocation.
func cloneWrites(ws []PendingWrite) []PendingWrite {
	if ws == nil {
		return nil
	}
	n := 0
	for _, w := range ws {
		n += len(w.Value)
	}
	a := arena(make([]byte, 0, n))
	out := make([]PendingWrite, len(ws))
	for i, w := range ws {
		w.Value = a.copy(w.Value)
		out[i] = w
	}
	return out
}
