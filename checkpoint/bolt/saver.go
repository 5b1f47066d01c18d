package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/lz"
)

// Keys inside a namespace bucket.
const (
	cpPrefix    = 'c' // 'c' + checkpoint id → record
	writePrefix = 'w' // 'w' + uvarint(len id) + id + write key → write
)

func nsKey(ns string) []byte { return append([]byte{'n'}, ns...) }

func cpKey(id string) []byte { return append([]byte{cpPrefix}, id...) }

// writesPrefix is the common prefix of the writes of checkpoint id; the
// length prefix keeps one id's writes apart from a longer id's.
func writesPrefix(id string) []byte {
	k := make([]byte, 0, 1+binary.MaxVarintLen64+len(id)+32)
	k = append(k, writePrefix)
	k = binary.AppendUvarint(k, uint64(len(id)))
	return append(k, id...)
}

// writeKey identifies a write as PutWrites dedupes them: by task and index,
// or by task and channel on the special channels.
func writeKey(prefix []byte, w *checkpoint.PendingWrite) []byte {
	k := binary.AppendUvarint(prefix, uint64(len(w.TaskID)))
	k = append(k, w.TaskID...)
	if checkpoint.IsSpecialChannel(w.Channel) {
		k = append(k, 0)
		return append(k, w.Channel...)
	}
	k = append(k, 1)
	return binary.BigEndian.AppendUint64(k, uint64(w.Index))
}

// nsBucket returns the bucket of a thread's namespace, or nil.
func nsBucket(tx *bbolt.Tx, threadID, ns string) *bbolt.Bucket {
	tb := tx.Bucket(threadsBucket).Bucket([]byte(threadID))
	if tb == nil {
		return nil
	}
	return tb.Bucket(nsKey(ns))
}

// A checkpoint's value is a record in one of two layouts.
//
// Layout 1 (files of format 1): uvarint(len(md)) + md + cp, the binary forms
// of its Metadata and Checkpoint, metadata first so List filters without
// decoding the rest.
//
// Layout 2 leaves out what the key or the parent already holds: 0x00, 2 (a
// layout 1 record never starts with 0: its metadata is never empty), a
// flags byte, with flagRunSeq the run id's number in the namespace's table
// of run ids (all the checkpoints of a run share one id; the metadata then
// holds none), uvarint(len(md)) + md, the parent id (see flagIDTimes; else
// the length of the prefix it shares with the checkpoint's id and the
// rest), the value
// references, then the Checkpoint's binary form without its id and parent,
// and with task ids that start with the checkpoint's id stored without it
// (flagTaskIDs). A value reference says that a value of this checkpoint
// starts with the first n bytes of the same key's value in an earlier full
// checkpoint of the namespace; the record stores only the rest. A thread's
// full checkpoints mostly repeat the previous one's values (a message list
// that grew), so with references each full checkpoint stores about what
// changed since the previous one. Values are resolved when read; putting a
// checkpoint again under a referenced id first writes the referring values
// out in full. With flagPacked, the references are followed by
// uvarint(count) and the keys, each length-prefixed, of the values stored
// compressed (package internal/lz): what is left of a value of packMin
// bytes or more once its reference is taken, when compressing makes it at
// most three quarters as long (a state's JSON often repeats one message or
// list many times). Values are decompressed before references are
// resolved.
const (
	layout2     = 2
	flagTaskIDs = 1 << 0
	flagRunSeq  = 1 << 1
	// flagIDTimes: the checkpoint's id and its parent's are both of
	// checkpoint.NewID's form; the parent is stored as the difference of
	// their times and its random part, and TS as its difference from the
	// id's time.
	flagIDTimes = 1 << 2
	// flagBody marks a stub: the record is stored under 'v' + id. Records
	// longer than bodyMin are, so that the pages of 'c' keys, which every
	// Put appends to, hold small records only and large ones do not make
	// them grow and be copied at each commit.
	flagBody = 1 << 3
	bodyMin  = 2 << 10
	// flagPacked: some values are stored compressed (format 3); packMin is
	// the shortest value worth trying.
	flagPacked = 1 << 4
	packMin    = 1 << 10
	// refMin is the shortest shared prefix worth a reference.
	refMin = 1 << 10
	// maxRefDepth bounds a chain of references (each full checkpoint refers
	// to the previous one, so chains grow with the log of a thread's size).
	maxRefDepth = 64
)

// Keys of a namespace's table of run ids: 'r' + run id → uvarint(number),
// 's' + uvarint(number) → run id. Numbers come from the bucket's sequence.
const (
	runNumPrefix = 'r'
	runIDPrefix  = 's'
)

// runNumber returns the number of run id in b's table, adding it if new.
func runNumber(b *bbolt.Bucket, runID string) (uint64, error) {
	k := append([]byte{runNumPrefix}, runID...)
	if v := b.Get(k); v != nil {
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return 0, checkpoint.ErrCorrupt
		}
		return n, nil
	}
	n, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	if err := b.Put(k, binary.AppendUvarint(nil, n)); err != nil {
		return 0, err
	}
	return n, b.Put(binary.AppendUvarint([]byte{runIDPrefix}, n), []byte(runID))
}

// runID returns the run id numbered n in b's table.
func runID(b *bbolt.Bucket, n uint64) (string, error) {
	v := b.Get(binary.AppendUvarint([]byte{runIDPrefix}, n))
	if v == nil {
		return "", fmt.Errorf("%w: no run id numbered %d", checkpoint.ErrCorrupt, n)
	}
	return string(v), nil
}

// lastFullKey holds the id of the namespace's latest full checkpoint, the
// one the next full checkpoint's values refer to.
var lastFullKey = []byte{'f'}

// valueRef is a value stored as a prefix of another checkpoint's value
// followed by the record's own bytes.
type valueRef struct {
	key string
	id  string // the checkpoint whose value of key is the prefix
	n   int    // the prefix's length
}

// record is a stored value split into its parts.
type record struct {
	md, cp []byte
	layout byte
	flags  byte
	runNum uint64 // with flagRunSeq
	ts     int64  // with flagIDTimes: TS in Unix nanoseconds
	parent string
	refs   []valueRef
	packed []string // the keys of the compressed values
}

func parseRecord(id string, v []byte) (record, error) {
	if len(v) == 0 || v[0] != 0 {
		md, cp, err := splitRecord(v)
		return record{md: md, cp: cp, layout: 1}, err
	}
	r := record{layout: layout2}
	if len(v) < 3 || v[1] != layout2 {
		return r, checkpoint.ErrCorrupt
	}
	r.flags = v[2]
	v = v[3:]
	if r.flags&flagRunSeq != 0 {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return r, checkpoint.ErrCorrupt
		}
		r.runNum, v = n, v[k:]
	}
	var ok bool
	if r.md, v, ok = lenPrefixed(v); !ok {
		return r, checkpoint.ErrCorrupt
	}
	if r.flags&flagIDTimes != 0 {
		t, _, idOK := parseID(id)
		back, k := binary.Uvarint(v)
		if !idOK || k <= 0 || len(v) < k+6 {
			return r, checkpoint.ErrCorrupt
		}
		rnd := uint64(0)
		for _, c := range v[k : k+6] {
			rnd = rnd<<8 | uint64(c)
		}
		r.parent = formatID(t-back, rnd)
		v = v[k+6:]
		if r.ts, k = binary.Varint(v); k <= 0 {
			return r, checkpoint.ErrCorrupt
		}
		r.ts += int64(t)
		v = v[k:]
	} else {
		shared, k := binary.Uvarint(v)
		if k <= 0 || shared > uint64(len(id)) {
			return r, checkpoint.ErrCorrupt
		}
		var rest []byte
		if rest, v, ok = lenPrefixed(v[k:]); !ok {
			return r, checkpoint.ErrCorrupt
		}
		if shared > 0 || len(rest) > 0 {
			r.parent = id[:shared] + string(rest)
		}
	}
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return r, checkpoint.ErrCorrupt
	}
	v = v[k:]
	for range n {
		var key, rid []byte
		if key, v, ok = lenPrefixed(v); !ok {
			return r, checkpoint.ErrCorrupt
		}
		if rid, v, ok = lenPrefixed(v); !ok {
			return r, checkpoint.ErrCorrupt
		}
		plen, k := binary.Uvarint(v)
		if k <= 0 {
			return r, checkpoint.ErrCorrupt
		}
		v = v[k:]
		r.refs = append(r.refs, valueRef{key: string(key), id: string(rid), n: int(plen)})
	}
	if r.flags&flagPacked != 0 {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)) {
			return r, checkpoint.ErrCorrupt
		}
		v = v[k:]
		for range n {
			var key []byte
			if key, v, ok = lenPrefixed(v); !ok {
				return r, checkpoint.ErrCorrupt
			}
			r.packed = append(r.packed, string(key))
		}
	}
	r.cp = v
	return r, nil
}

// lenPrefixed splits uvarint(n) + n bytes off the front of v.
func lenPrefixed(v []byte) (b, rest []byte, ok bool) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) {
		return nil, nil, false
	}
	return v[k : k+int(n)], v[k+int(n):], true
}

// encodeRecord returns the layout 2 record of cp (whose ID is set), with
// values referring to those of the checkpoint prev when given, and the run id
// stored as runNum when that is not 0.
func encodeRecord(cp *checkpoint.Checkpoint, md *checkpoint.Metadata, prev *checkpoint.Checkpoint, runNum uint64) []byte {
	c := *cp
	c.ID, c.ParentID = "", ""
	var flags byte
	m := *md
	if runNum != 0 {
		flags |= flagRunSeq
		m.RunID = ""
	}
	if len(c.Tasks) > 0 && !slices.ContainsFunc(c.Tasks, func(t checkpoint.Task) bool { return !strings.HasPrefix(t.ID, cp.ID) }) {
		flags |= flagTaskIDs
		c.Tasks = slices.Clone(c.Tasks)
		for i := range c.Tasks {
			c.Tasks[i].ID = c.Tasks[i].ID[len(cp.ID):]
		}
	}
	var refs []valueRef
	var packed []string
	var shorter map[string][]byte // the values stored in part or compressed
	for key, v := range cp.Values {
		rest := v
		if prev != nil {
			if n := sharedPrefix(v, prev.Values[key]); n >= refMin {
				refs = append(refs, valueRef{key: key, id: prev.ID, n: n})
				rest = v[n:]
			}
		}
		if len(rest) >= packMin {
			if p := lz.Append(nil, rest); len(p) <= len(rest)/4*3 {
				packed = append(packed, key)
				rest = p
			}
		}
		if len(rest) < len(v) {
			if shorter == nil {
				shorter = map[string][]byte{}
			}
			shorter[key] = rest
		}
	}
	if shorter != nil {
		c.Values = maps.Clone(cp.Values)
		maps.Copy(c.Values, shorter)
	}
	if packed != nil {
		flags |= flagPacked
	}
	t, _, idOK := parseID(cp.ID)
	pt, prnd, parentOK := parseID(cp.ParentID)
	if idOK && parentOK && pt <= t && time.Unix(0, cp.TS.UnixNano()).Equal(cp.TS) {
		flags |= flagIDTimes
		c.TS = time.Unix(0, 0).UTC()
	}
	mdb, _ := m.AppendBinary(make([]byte, 0, 256))
	rec := make([]byte, 0, 3+len(mdb)+len(cp.ParentID)+64*len(refs)+256)
	rec = append(rec, 0, layout2, flags)
	if runNum != 0 {
		rec = binary.AppendUvarint(rec, runNum)
	}
	rec = binary.AppendUvarint(rec, uint64(len(mdb)))
	rec = append(rec, mdb...)
	if flags&flagIDTimes != 0 {
		rec = binary.AppendUvarint(rec, t-pt)
		rec = append(rec, byte(prnd>>40), byte(prnd>>32), byte(prnd>>24), byte(prnd>>16), byte(prnd>>8), byte(prnd))
		rec = binary.AppendVarint(rec, cp.TS.UnixNano()-int64(t))
	} else {
		shared := sharedPrefix([]byte(cp.ParentID), []byte(cp.ID))
		rec = binary.AppendUvarint(rec, uint64(shared))
		rec = binary.AppendUvarint(rec, uint64(len(cp.ParentID)-shared))
		rec = append(rec, cp.ParentID[shared:]...)
	}
	rec = binary.AppendUvarint(rec, uint64(len(refs)))
	for _, r := range refs {
		rec = binary.AppendUvarint(rec, uint64(len(r.key)))
		rec = append(rec, r.key...)
		rec = binary.AppendUvarint(rec, uint64(len(r.id)))
		rec = append(rec, r.id...)
		rec = binary.AppendUvarint(rec, uint64(r.n))
	}
	if packed != nil {
		rec = binary.AppendUvarint(rec, uint64(len(packed)))
		for _, key := range packed {
			rec = binary.AppendUvarint(rec, uint64(len(key)))
			rec = append(rec, key...)
		}
	}
	rec, _ = c.AppendBinary(rec)
	return rec
}

// parseID returns the time and random parts of an id of the form
// checkpoint.NewID makes, and whether id has that form exactly.
func parseID(id string) (t, r uint64, ok bool) {
	if len(id) != checkpoint.IDLen || id[16] != '-' {
		return 0, 0, false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		var d uint64
		switch {
		case i == 16:
			continue
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, 0, false
		}
		if i < 16 {
			t = t<<4 | d
		} else {
			r = r<<4 | d
		}
	}
	return t, r, true
}

// formatID is the inverse of parseID.
func formatID(t, r uint64) string {
	const hex = "0123456789abcdef"
	var b [checkpoint.IDLen]byte
	for i := 15; i >= 0; i-- {
		b[i] = hex[t&0xf]
		t >>= 4
	}
	b[16] = '-'
	for i := checkpoint.IDLen - 1; i > 16; i-- {
		b[i] = hex[r&0xf]
		r >>= 4
	}
	return string(b[:])
}

// sharedPrefix is the length of the longest common prefix of a and b.
func sharedPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if binary.LittleEndian.Uint64(a[i:]) != binary.LittleEndian.Uint64(b[i:]) {
			break
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// splitRecord returns the metadata and checkpoint parts of a layout 1 value.
func splitRecord(v []byte) (md, cp []byte, err error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) {
		return nil, nil, checkpoint.ErrCorrupt
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

// decodeMetadata decodes the metadata of record r, in bucket b.
func decodeMetadata(b *bbolt.Bucket, r record) (checkpoint.Metadata, error) {
	var md checkpoint.Metadata
	if err := md.UnmarshalBinary(r.md); err != nil {
		return md, err
	}
	if r.flags&flagRunSeq != 0 {
		id, err := runID(b, r.runNum)
		if err != nil {
			return md, err
		}
		md.RunID = id
	}
	return md, nil
}

// decodeCheckpoint decodes the checkpoint with id id from its record r,
// resolving its value references in bucket b; depth counts the references
// followed to get here.
func decodeCheckpoint(b *bbolt.Bucket, id string, r record, depth int) (*checkpoint.Checkpoint, error) {
	cp := new(checkpoint.Checkpoint)
	if err := cp.UnmarshalBinary(r.cp); err != nil {
		return nil, err
	}
	if r.layout == 1 {
		if cp.ID != id {
			return nil, fmt.Errorf("%w: record of %q holds checkpoint %q", checkpoint.ErrCorrupt, id, cp.ID)
		}
		return cp, nil
	}
	cp.ID, cp.ParentID = id, r.parent
	if r.flags&flagIDTimes != 0 {
		cp.TS = time.Unix(0, r.ts).UTC()
	}
	if r.flags&flagTaskIDs != 0 {
		for i := range cp.Tasks {
			cp.Tasks[i].ID = id + cp.Tasks[i].ID
		}
	}
	for i, key := range r.packed {
		p, ok := cp.Values[key]
		if !ok || slices.Contains(r.packed[:i], key) {
			return nil, fmt.Errorf("%w: no compressed value %q, or the key twice", checkpoint.ErrCorrupt, key)
		}
		v, err := lz.AppendDecoded(nil, p)
		if err != nil {
			return nil, fmt.Errorf("%w: value %q: %v", checkpoint.ErrCorrupt, key, err)
		}
		cp.Values[key] = slices.Clip(v)
	}
	for _, ref := range r.refs {
		rest, ok := cp.Values[ref.key]
		if !ok || depth >= maxRefDepth || ref.id == id {
			return nil, fmt.Errorf("%w: bad reference to checkpoint %q", checkpoint.ErrCorrupt, ref.id)
		}
		from, err := readCheckpoint(b, ref.id, depth+1)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %q that %q refers to: %w", ref.id, id, err)
		}
		prefix := from.Values[ref.key]
		if len(prefix) < ref.n {
			return nil, fmt.Errorf("%w: checkpoint %q has no %d bytes of %q to refer to", checkpoint.ErrCorrupt, ref.id, ref.n, ref.key)
		}
		cp.Values[ref.key] = append(prefix[:ref.n:ref.n], rest...)
	}
	return cp, nil
}

// bodyKey is where the record of checkpoint id is when its 'c' key holds
// a stub.
func bodyKey(id string) []byte { return append([]byte{bodyPrefix}, id...) }

const bodyPrefix = 'v'

var stub = []byte{0, layout2, flagBody}

// recordAt parses v, the value of checkpoint id's key in b, following a
// stub to the record.
func recordAt(b *bbolt.Bucket, id string, v []byte) (record, error) {
	if bytes.Equal(v, stub) {
		if v = b.Get(bodyKey(id)); v == nil {
			return record{}, fmt.Errorf("%w: record body missing", checkpoint.ErrCorrupt)
		}
	}
	return parseRecord(id, v)
}

// putRecord stores rec as checkpoint id's record: under its key, or under a
// stub there when it is long.
func putRecord(b *bbolt.Bucket, id string, rec []byte) error {
	if len(rec) < bodyMin {
		if err := b.Delete(bodyKey(id)); err != nil {
			return err
		}
		return b.Put(cpKey(id), rec)
	}
	if err := b.Put(bodyKey(id), rec); err != nil {
		return err
	}
	return b.Put(cpKey(id), stub)
}

// readCheckpoint reads and decodes the checkpoint with id id in bucket b.
func readCheckpoint(b *bbolt.Bucket, id string, depth int) (*checkpoint.Checkpoint, error) {
	v := b.Get(cpKey(id))
	if v == nil {
		return nil, fmt.Errorf("%w: missing", checkpoint.ErrCorrupt)
	}
	r, err := recordAt(b, id, v)
	if err != nil {
		return nil, err
	}
	return decodeCheckpoint(b, id, r, depth)
}

// readTuple decodes the checkpoint with key k and value v, and its writes,
// inside the transaction; the result owns all its memory.
func readTuple(b *bbolt.Bucket, threadID, ns string, k, v []byte) (*checkpoint.Tuple, error) {
	id := string(k[1:])
	r, err := recordAt(b, id, v)
	if err != nil {
		return nil, err
	}
	tp := &checkpoint.Tuple{Config: checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: id}}
	if tp.Metadata, err = decodeMetadata(b, r); err != nil {
		return nil, err
	}
	if tp.Checkpoint, err = decodeCheckpoint(b, id, r, 0); err != nil {
		return nil, err
	}
	if p := tp.Checkpoint.ParentID; p != "" {
		tp.ParentConfig = &checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: p}
	}
	prefix := writesPrefix(id)
	c := b.Cursor()
	for wk, wv := c.Seek(prefix); wk != nil && bytes.HasPrefix(wk, prefix); wk, wv = c.Next() {
		var w checkpoint.PendingWrite
		if err := w.UnmarshalBinary(wv); err != nil {
			return nil, err
		}
		tp.PendingWrites = append(tp.PendingWrites, w)
	}
	slices.SortFunc(tp.PendingWrites, checkpoint.CompareWrites)
	return tp, nil
}

// lastFull returns the namespace's latest full checkpoint for the values of
// a new full checkpoint to refer to, or nil.
func lastFull(b *bbolt.Bucket) *checkpoint.Checkpoint {
	id := b.Get(lastFullKey)
	if id == nil {
		return nil
	}
	cp, err := readCheckpoint(b, string(id), 0)
	if err != nil || !cp.Full {
		return nil
	}
	return cp
}

// unref writes out in full the values of every record that refers to the
// checkpoint id, before that checkpoint is put again.
func unref(b *bbolt.Bucket, id string) error {
	type rewrite struct{ k, v []byte }
	var out []rewrite
	c := b.Cursor()
	for k, v := c.Seek([]byte{cpPrefix}); k != nil && k[0] == cpPrefix; k, v = c.Next() {
		rid := string(k[1:])
		r, err := recordAt(b, rid, v)
		if err != nil || !slices.ContainsFunc(r.refs, func(ref valueRef) bool { return ref.id == id }) {
			continue
		}
		cp, err := decodeCheckpoint(b, rid, r, 0)
		if err != nil {
			return err
		}
		md, err := decodeMetadata(b, r)
		if err != nil {
			return err
		}
		num := r.runNum
		if r.flags&flagRunSeq == 0 && md.RunID != "" {
			if num, err = runNumber(b, md.RunID); err != nil {
				return err
			}
		}
		out = append(out, rewrite{slices.Clone(k), encodeRecord(cp, &md, nil, num)})
	}
	for _, w := range out {
		if err := putRecord(b, string(w.k[1:]), w.v); err != nil {
			return err
		}
	}
	return nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.ThreadID == "" {
		return nil, errNoThread("Get")
	}
	var tp *checkpoint.Tuple
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
		if b == nil {
			return nil
		}
		var k, v []byte
		if cfg.CheckpointID != "" {
			k = cpKey(cfg.CheckpointID)
			v = b.Get(k)
		} else {
			k, v = lastBefore(b.Cursor(), []byte{cpPrefix + 1})
		}
		if v == nil {
			return nil
		}
		var err error
		if tp, err = readTuple(b, cfg.ThreadID, cfg.Namespace, k, v); err != nil {
			return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("Get", err)
	}
	if tp == nil {
		return nil, notFound(cfg)
	}
	return tp, nil
}

// lastBefore returns the checkpoint with the greatest key below limit.
func lastBefore(c *bbolt.Cursor, limit []byte) (k, v []byte) {
	if k, _ = c.Seek(limit); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if len(k) == 0 || k[0] != cpPrefix {
		return nil, nil
	}
	return k, v
}

// Put implements checkpoint.Saver, with the same rules as checkpoint.Memory:
// a checkpoint without an id gets one from checkpoint.NewID; its parent is
// cfg.CheckpointID, or cp.ParentID when cfg names none, and the two must
// agree when both are set; putting a stored id again replaces that
// checkpoint and keeps its pending writes.
func (s *Saver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Config, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Config{}, err
	}
	if cfg.ThreadID == "" {
		return checkpoint.Config{}, errNoThread("Put")
	}
	if cp == nil {
		return checkpoint.Config{}, fmt.Errorf("%w: Put with a nil checkpoint", checkpoint.ErrInvalid)
	}
	if cfg.CheckpointID != "" && cp.ParentID != "" && cfg.CheckpointID != cp.ParentID {
		return checkpoint.Config{}, fmt.Errorf("%w: Put of checkpoint %q: Config names parent %q but the checkpoint's ParentID is %q; make them agree",
			checkpoint.ErrInvalid, cp.ID, cfg.CheckpointID, cp.ParentID)
	}
	id, parent := cp.ID, cp.ParentID
	if id == "" {
		id = checkpoint.NewID()
	}
	if cfg.CheckpointID != "" {
		parent = cfg.CheckpointID
	}
	if parent == id {
		return checkpoint.Config{}, fmt.Errorf("%w: checkpoint %q names itself as parent", checkpoint.ErrInvalid, id)
	}
	c := *cp // a shallow copy, to encode with the resolved ids
	c.ID, c.ParentID = id, parent
	key := cpKey(id)
	err := s.update(func(tx *bbolt.Tx) error {
		tb, err := tx.Bucket(threadsBucket).CreateBucketIfNotExists([]byte(cfg.ThreadID))
		if err != nil {
			return err
		}
		b, err := tb.CreateBucketIfNotExists(nsKey(cfg.Namespace))
		if err != nil {
			return err
		}
		// Checkpoint ids grow with time, so records arrive in key order:
		// fill pages before splitting them instead of splitting in half.
		b.FillPercent = 1
		if b.Get(key) != nil {
			if err := unref(b, id); err != nil {
				return err
			}
		}
		var num uint64
		if md.RunID != "" {
			if num, err = runNumber(b, md.RunID); err != nil {
				return err
			}
		}
		var prev *checkpoint.Checkpoint
		if c.Full {
			if prev = lastFull(b); prev != nil && prev.ID == id {
				prev = nil // being replaced: nothing to refer to
			}
			if err := b.Put(lastFullKey, []byte(id)); err != nil {
				return err
			}
		}
		return putRecord(b, id, encodeRecord(&c, &md, prev, num))
	})
	if err != nil {
		return checkpoint.Config{}, s.wrap("Put", err)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: id}, nil
}

// PutWrites implements checkpoint.Saver with the same rules as
// checkpoint.Memory: the checkpoint must exist; writes are keyed by (task,
// Index), except on the special channels, keyed by (task, channel) and
// replaced; Get returns them in checkpoint.CompareWrites order.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case cfg.ThreadID == "":
		return errNoThread("PutWrites")
	case cfg.CheckpointID == "":
		return fmt.Errorf("%w: PutWrites needs Config.CheckpointID: pass the Config that Put returned", checkpoint.ErrInvalid)
	case taskID == "":
		return fmt.Errorf("%w: PutWrites with an empty task id", checkpoint.ErrInvalid)
	}
	type kv struct {
		k, v    []byte
		replace bool
	}
	prefix := writesPrefix(cfg.CheckpointID)
	kvs := make([]kv, len(writes))
	for i := range writes {
		w := writes[i]
		w.TaskID = taskID
		v, _ := w.AppendBinary(nil)
		kvs[i] = kv{writeKey(slices.Clip(prefix), &w), v, checkpoint.IsSpecialChannel(w.Channel)}
	}
	ckey := cpKey(cfg.CheckpointID)
	err := s.update(func(tx *bbolt.Tx) error {
		b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
		if b == nil || b.Get(ckey) == nil {
			return errMissing
		}
		for _, w := range kvs {
			if !w.replace && b.Get(w.k) != nil {
				continue
			}
			if err := b.Put(w.k, w.v); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errMissing) {
		return fmt.Errorf("PutWrites: %w; Put the checkpoint before its writes", notFound(cfg))
	}
	if err != nil {
		return s.wrap("PutWrites", err)
	}
	return nil
}

var errMissing = errors.New("checkpoint missing")

// listPage is how many checkpoints List reads per read transaction. List
// never holds a transaction while it yields: a caller that writes from its
// loop must not wait on its own reader.
const listPage = 32

// List implements checkpoint.Lister, with the same rules as
// checkpoint.Memory.List. It reads pages of checkpoints, newest first, with
// a cursor seek per page, and filters on the metadata before decoding the
// rest of a record.
func (s *Saver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		if cfg.ThreadID == "" {
			yield(nil, errNoThread("List"))
			return
		}
		limit := []byte{cpPrefix + 1} // keys sort before it
		if opts.Before != "" {
			limit = cpKey(opts.Before)
		}
		if cfg.CheckpointID != "" {
			if only := append(cpKey(cfg.CheckpointID), 0); bytes.Compare(only, limit) < 0 {
				limit = only
			}
		}
		n := 0
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			want := listPage
			if opts.Limit > 0 {
				want = min(want, opts.Limit-n)
			}
			var page []*checkpoint.Tuple
			more := false
			err := s.db.View(func(tx *bbolt.Tx) error {
				b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
				if b == nil {
					return nil
				}
				c := b.Cursor()
				for k, v := lastBefore(c, limit); k != nil; k, v = c.Prev() {
					if k[0] != cpPrefix {
						return nil
					}
					if len(page) == want {
						more = true
						return nil
					}
					limit = slices.Clone(k)
					if len(opts.Filter) > 0 {
						r, err := recordAt(b, string(k[1:]), v)
						if err != nil {
							return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
						}
						md, err := decodeMetadata(b, r)
						if err != nil {
							return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
						}
						if !md.Matches(opts.Filter) {
							continue
						}
					}
					tp, err := readTuple(b, cfg.ThreadID, cfg.Namespace, k, v)
					if err != nil {
						return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
					}
					page = append(page, tp)
				}
				return nil
			})
			if err != nil {
				yield(nil, s.wrap("List", err))
				return
			}
			for _, tp := range page {
				if cfg.CheckpointID != "" && tp.Checkpoint.ID != cfg.CheckpointID {
					return
				}
				n++
				if !yield(tp, nil) {
					return
				}
			}
			if !more || (opts.Limit > 0 && n >= opts.Limit) {
				return
			}
		}
	}
}

// DeleteThread implements checkpoint.ThreadDeleter. Deleting a thread that
// does not exist is not an error.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errNoThread("DeleteThread")
	}
	err := s.update(func(tx *bbolt.Tx) error {
		err := tx.Bucket(threadsBucket).DeleteBucket([]byte(threadID))
		if errors.Is(err, berrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
	return s.wrap("DeleteThread", err)
}

// CopyThread implements checkpoint.ThreadCopier: every checkpoint of every
// namespace, with its metadata and pending writes, under the same ids, in
// one transaction.
func (s *Saver) CopyThread(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if src == "" || dst == "" {
		return errNoThread("CopyThread")
	}
	if src == dst {
		return fmt.Errorf("%w: CopyThread from thread %q to itself", checkpoint.ErrInvalid, src)
	}
	err := s.update(func(tx *bbolt.Tx) error {
		threads := tx.Bucket(threadsBucket)
		sb := threads.Bucket([]byte(src))
		if sb == nil {
			return fmt.Errorf("copy thread %q: %w", src, checkpoint.ErrNotFound)
		}
		if threads.Bucket([]byte(dst)) != nil {
			return fmt.Errorf("copy thread %q to %q: %w; delete it first or pick another id", src, dst, checkpoint.ErrThreadExists)
		}
		db, err := threads.CreateBucket([]byte(dst))
		if err != nil {
			return err
		}
		return sb.ForEachBucket(func(name []byte) error {
			from := sb.Bucket(name)
			to, err := db.CreateBucket(name)
			if err != nil {
				return err
			}
			to.FillPercent = 1 // written in key order: pack pages full
			return from.ForEach(func(k, v []byte) error { return to.Put(k, v) })
		})
	})
	if err != nil && (errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, checkpoint.ErrThreadExists)) {
		return err
	}
	return s.wrap("CopyThread", err)
}

func (s *Saver) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%s on %s: %w: the Saver is closed", op, s.path, err)
	}
	return fmt.Errorf("%s on %s: %w", op, s.path, err)
}

func (s *Saver) corrupt(threadID, ns, id string, err error) error {
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w; the file is damaged", id, threadID, ns, err)
}

func errNoThread(op string) error {
	return fmt.Errorf("%w: %s without a thread id: set Config.ThreadID", checkpoint.ErrInvalid, op)
}

func notFound(cfg checkpoint.Config) error {
	if cfg.CheckpointID == "" {
		return fmt.Errorf("thread %q namespace %q has no checkpoint: %w", cfg.ThreadID, cfg.Namespace, checkpoint.ErrNotFound)
	}
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w", cfg.CheckpointID, cfg.ThreadID, cfg.Namespace, checkpoint.ErrNotFound)
}
