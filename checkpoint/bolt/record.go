package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Records are a small binary encoding: unsigned and signed varints, strings
// and byte strings prefixed by their length. A byte string or map that may be
// nil is prefixed by its length plus one, zero meaning nil, so that what Get
// returns is what Put was given. The first byte is the record's format.
//
// A checkpoint record holds its metadata first, so List can filter without
// decoding the rest.

const recordFormat = 1

// errCorrupt reports a record that does not decode.
var errCorrupt = errors.New("corrupt record")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

// bytes writes b keeping nil apart from empty.
func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(b)) + 1)
	e.b = append(e.b, b...)
}

// count writes the length of a map that may be nil.
func (e *encoder) count(n int, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string { return string(d.take(d.uvarint())) }

// bytes returns a sub-slice of the decoder's buffer, capped at its length.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	return d.take(n - 1)
}

// count reads the length of a map that may be nil; ok is false for nil. The
// length is bounded by what is left to read, so a corrupt count cannot make
// a huge allocation.
func (d *decoder) count() (n int, ok bool) {
	c := d.uvarint()
	if c == 0 {
		return 0, false
	}
	if c-1 > uint64(len(d.b)) {
		d.fail()
		return 0, false
	}
	return int(c - 1), true
}

func encodeMetadata(e *encoder, md *checkpoint.Metadata) {
	e.str(string(md.Source))
	e.varint(int64(md.Step))
	e.str(md.RunID)
	encodeStrings(e, md.Parents)
	encodeStrings(e, md.Extra)
}

func encodeStrings(e *encoder, m map[string]string) {
	e.count(len(m), m == nil)
	for k, v := range m {
		e.str(k)
		e.str(v)
	}
}

func decodeStrings(d *decoder) map[string]string {
	n, ok := d.count()
	if !ok {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	return m
}

func decodeMetadata(d *decoder) checkpoint.Metadata {
	var md checkpoint.Metadata
	md.Source = checkpoint.Source(d.str())
	md.Step = int(d.varint())
	md.RunID = d.str()
	md.Parents = decodeStrings(d)
	md.Extra = decodeStrings(d)
	return md
}

// encodeRecord appends the record of cp, with parentID as its parent, and
// md to buf. cp.ID is not encoded: it is the record's key.
func encodeRecord(buf []byte, cp *checkpoint.Checkpoint, parentID string, md *checkpoint.Metadata) []byte {
	e := encoder{b: buf}
	e.b = append(e.b, recordFormat)
	encodeMetadata(&e, md)
	e.varint(int64(cp.V))
	e.str(parentID)
	e.varint(cp.TS.Unix())
	e.uvarint(uint64(cp.TS.Nanosecond()))
	if cp.Full {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
	e.count(len(cp.Values), cp.Values == nil)
	for k, v := range cp.Values {
		e.str(k)
		e.bytes(v)
	}
	e.count(len(cp.Deltas), cp.Deltas == nil)
	for k, ws := range cp.Deltas {
		e.str(k)
		e.count(len(ws), ws == nil)
		for _, w := range ws {
			e.bytes(w)
		}
	}
	encodeVersions(&e, cp.Versions)
	e.count(len(cp.Seen), cp.Seen == nil)
	for node, vs := range cp.Seen {
		e.str(node)
		encodeVersions(&e, vs)
	}
	e.count(len(cp.Tasks), cp.Tasks == nil)
	for _, t := range cp.Tasks {
		e.str(t.ID)
		e.str(t.Node)
		e.bytes(t.Input)
	}
	return e.b
}

func encodeVersions(e *encoder, m map[string]uint64) {
	e.count(len(m), m == nil)
	for k, v := range m {
		e.str(k)
		e.uvarint(v)
	}
}

func decodeVersions(d *decoder) map[string]uint64 {
	n, ok := d.count()
	if !ok {
		return nil
	}
	m := make(map[string]uint64, n)
	for range n {
		k := d.str()
		m[k] = d.uvarint()
	}
	return m
}

// decodeHeader checks the record format and decodes the metadata; d is left
// at the checkpoint.
func decodeHeader(d *decoder) (checkpoint.Metadata, error) {
	if len(d.b) == 0 || d.b[0] != recordFormat {
		return checkpoint.Metadata{}, fmt.Errorf("%w: unknown record format", errCorrupt)
	}
	d.b = d.b[1:]
	md := decodeMetadata(d)
	return md, d.err
}

// decodeCheckpoint decodes the rest of a record after decodeHeader. The
// byte strings of the result point into d's buffer, which the caller must
// own.
func decodeCheckpoint(d *decoder, id string) (*checkpoint.Checkpoint, error) {
	cp := &checkpoint.Checkpoint{ID: id}
	cp.V = int(d.varint())
	cp.ParentID = d.str()
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.fail()
	}
	cp.TS = time.Unix(sec, int64(nsec)).UTC()
	flags := d.take(1)
	cp.Full = len(flags) == 1 && flags[0] == 1
	if n, ok := d.count(); ok {
		cp.Values = make(map[string][]byte, n)
		for range n {
			k := d.str()
			cp.Values[k] = d.bytes()
		}
	}
	if n, ok := d.count(); ok {
		cp.Deltas = make(map[string][][]byte, n)
		for range n {
			k := d.str()
			var ws [][]byte
			if m, ok := d.count(); ok {
				ws = make([][]byte, m)
				for i := range ws {
					ws[i] = d.bytes()
				}
			}
			cp.Deltas[k] = ws
		}
	}
	cp.Versions = decodeVersions(d)
	if n, ok := d.count(); ok {
		cp.Seen = make(map[string]map[string]uint64, n)
		for range n {
			node := d.str()
			cp.Seen[node] = decodeVersions(d)
		}
	}
	if n, ok := d.count(); ok {
		cp.Tasks = make([]checkpoint.Task, n)
		for i := range cp.Tasks {
			cp.Tasks[i] = checkpoint.Task{ID: d.str(), Node: d.str(), Input: d.bytes()}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return cp, nil
}

// A pending write's value: channel, index, value. Its task is in its key.
func encodeWrite(buf []byte, w *checkpoint.PendingWrite) []byte {
	e := encoder{b: buf}
	e.str(w.TaskID)
	e.str(w.Channel)
	e.varint(int64(w.Index))
	e.bytes(w.Value)
	return e.b
}

func decodeWrite(d *decoder) (checkpoint.PendingWrite, error) {
	w := checkpoint.PendingWrite{TaskID: d.str(), Channel: d.str(), Index: int(d.varint()), Value: d.bytes()}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return w, d.err
}
