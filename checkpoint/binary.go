package checkpoint

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"
)

// The binary forms of Checkpoint, Metadata and PendingWrite are what the
// savers of this module store: a fraction of the size of JSON and several
// times faster to write and read. Each starts with a format byte, then
// unsigned and signed varints, and strings prefixed by their length. A byte
// string, slice or map that may be nil is prefixed by its length plus one,
// zero meaning nil, so a value decodes to exactly what was encoded, nil or
// empty. The channel values inside are the Codec's bytes, stored as they are.
//
// Map entries are written in map order, so two encodings of one value may
// differ byte for byte; they decode to equal values.

const (
	binCheckpoint = 0xc1
	binMetadata   = 0xa1
	binWrite      = 0xb1
)

// ErrCorrupt reports binary data that does not decode: truncated, damaged,
// or not of the expected kind.
var ErrCorrupt = errors.New("checkpoint: corrupt binary data")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(b)) + 1)
	e.b = append(e.b, b...)
}

// count writes the length of a map or slice that may be nil.
func (e *encoder) count(n int, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

func (e *encoder) strings(m map[string]string) {
	e.count(len(m), m == nil)
	for k, v := range m {
		e.str(k)
		e.str(v)
	}
}

func (e *encoder) versions(m map[string]uint64) {
	e.count(len(m), m == nil)
	for k, v := range m {
		e.str(k)
		e.uvarint(v)
	}
}

// decoder reads from a buffer it owns. Byte strings it returns are capped
// sub-slices of b, and strings are substrings of s, a string copy of b made
// once, so decoding allocates for neither.
type decoder struct {
	b   []byte
	s   string
	pos int
	bad bool
}

func newDecoder(b []byte) decoder { return decoder{b: b, s: string(b)} }

func (d *decoder) fail() {
	d.bad = true
	d.pos = len(d.b)
}

func (d *decoder) byte() byte {
	if d.pos >= len(d.b) {
		d.fail()
		return 0
	}
	d.pos++
	return d.b[d.pos-1]
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

// span advances over n bytes and returns where they start.
func (d *decoder) span(n uint64) (start, end int, ok bool) {
	if n > uint64(len(d.b)-d.pos) {
		d.fail()
		return 0, 0, false
	}
	start = d.pos
	d.pos += int(n)
	return start, d.pos, true
}

func (d *decoder) str() string {
	i, j, ok := d.span(d.uvarint())
	if !ok {
		return ""
	}
	return d.s[i:j]
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	i, j, ok := d.span(n - 1)
	if !ok {
		return nil
	}
	return d.b[i:j:j]
}

// count reads a length written by encoder.count; ok is false for nil. A
// length above what is left to read is corrupt, so damaged data cannot
// cause a huge allocation.
func (d *decoder) count() (n int, ok bool) {
	c := d.uvarint()
	if c == 0 {
		return 0, false
	}
	if c-1 > uint64(len(d.b)-d.pos) {
		d.fail()
		return 0, false
	}
	return int(c - 1), true
}

func (d *decoder) strings() map[string]string {
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

func (d *decoder) versions() map[string]uint64 {
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

// end reports an error unless exactly everything was read.
func (d *decoder) end() error {
	if d.bad || d.pos != len(d.b) {
		return ErrCorrupt
	}
	return nil
}

// own returns a decoder over a copy of data, so that what it hands out is
// not shared with the caller's buffer.
func own(data []byte) decoder { return newDecoder(append([]byte(nil), data...)) }

// AppendBinary appends the binary form of cp to b (encoding.BinaryAppender).
func (cp *Checkpoint) AppendBinary(b []byte) ([]byte, error) {
	// Size the buffer once: values can be megabytes, and growing by
	// doubling would copy them over and over.
	n := 128 + len(cp.ID) + len(cp.ParentID)
	for k, v := range cp.Values {
		n += len(k) + len(v) + 2*binary.MaxVarintLen64
	}
	for k, ws := range cp.Deltas {
		n += len(k) + binary.MaxVarintLen64
		for _, w := range ws {
			n += len(w) + binary.MaxVarintLen64
		}
	}
	for _, t := range cp.Tasks {
		n += len(t.ID) + len(t.Node) + len(t.Input) + 3*binary.MaxVarintLen64
	}
	n += (len(cp.Versions) + 4*len(cp.Seen)) * 32
	b = slices.Grow(b, n)
	e := encoder{b: b}
	e.b = append(e.b, binCheckpoint)
	e.varint(int64(cp.V))
	e.str(cp.ID)
	e.str(cp.ParentID)
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
	e.versions(cp.Versions)
	e.count(len(cp.Seen), cp.Seen == nil)
	for node, vs := range cp.Seen {
		e.str(node)
		e.versions(vs)
	}
	e.count(len(cp.Tasks), cp.Tasks == nil)
	for _, t := range cp.Tasks {
		e.str(t.ID)
		e.str(t.Node)
		e.bytes(t.Input)
	}
	return e.b, nil
}

// MarshalBinary returns the binary form of cp (encoding.BinaryMarshaler).
func (cp *Checkpoint) MarshalBinary() ([]byte, error) { return cp.AppendBinary(nil) }

// UnmarshalBinary sets cp from its binary form (encoding.BinaryUnmarshaler).
// It copies data: the byte strings of cp share one allocation and its
// strings another. TS
// comes back in UTC. It returns an error wrapping ErrCorrupt when data is
// not the binary form of a Checkpoint.
func (cp *Checkpoint) UnmarshalBinary(data []byte) error {
	d := own(data)
	if d.byte() != binCheckpoint {
		return ErrCorrupt
	}
	c := Checkpoint{V: int(d.varint()), ID: d.str(), ParentID: d.str()}
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.fail()
	}
	c.TS = time.Unix(sec, int64(nsec)).UTC()
	c.Full = d.byte() == 1
	if n, ok := d.count(); ok {
		c.Values = make(map[string][]byte, n)
		for range n {
			k := d.str()
			c.Values[k] = d.bytes()
		}
	}
	if n, ok := d.count(); ok {
		c.Deltas = make(map[string][][]byte, n)
		for range n {
			k := d.str()
			var ws [][]byte
			if m, ok := d.count(); ok {
				ws = make([][]byte, m)
				for i := range ws {
					ws[i] = d.bytes()
				}
			}
			c.Deltas[k] = ws
		}
	}
	c.Versions = d.versions()
	if n, ok := d.count(); ok {
		c.Seen = make(map[string]map[string]uint64, n)
		for range n {
			node := d.str()
			c.Seen[node] = d.versions()
		}
	}
	if n, ok := d.count(); ok {
		c.Tasks = make([]Task, n)
		for i := range c.Tasks {
			c.Tasks[i] = Task{ID: d.str(), Node: d.str(), Input: d.bytes()}
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	*cp = c
	return nil
}

// AppendBinary appends the binary form of md to b (encoding.BinaryAppender).
func (md Metadata) AppendBinary(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.b = append(e.b, binMetadata)
	e.str(string(md.Source))
	e.varint(int64(md.Step))
	e.str(md.RunID)
	e.strings(md.Parents)
	e.strings(md.Extra)
	return e.b, nil
}

// MarshalBinary returns the binary form of md (encoding.BinaryMarshaler).
func (md Metadata) MarshalBinary() ([]byte, error) { return md.AppendBinary(nil) }

// UnmarshalBinary sets md from its binary form (encoding.BinaryUnmarshaler).
// It returns an error wrapping ErrCorrupt when data is not the binary form
// of a Metadata.
func (md *Metadata) UnmarshalBinary(data []byte) error {
	d := newDecoder(data) // only strings come out, and they are copies
	if d.byte() != binMetadata {
		return ErrCorrupt
	}
	m := Metadata{Source: Source(d.str()), Step: int(d.varint()), RunID: d.str()}
	m.Parents = d.strings()
	m.Extra = d.strings()
	if err := d.end(); err != nil {
		return err
	}
	*md = m
	return nil
}

// AppendBinary appends the binary form of w to b (encoding.BinaryAppender).
func (w PendingWrite) AppendBinary(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.b = append(e.b, binWrite)
	e.str(w.TaskID)
	e.varint(int64(w.Index))
	e.str(w.Channel)
	e.bytes(w.Value)
	return e.b, nil
}

// MarshalBinary returns the binary form of w (encoding.BinaryMarshaler).
func (w PendingWrite) MarshalBinary() ([]byte, error) { return w.AppendBinary(nil) }

// UnmarshalBinary sets w from its binary form (encoding.BinaryUnmarshaler),
// copying data. It returns an error wrapping ErrCorrupt when data is not the
// binary form of a PendingWrite.
func (w *PendingWrite) UnmarshalBinary(data []byte) error {
	d := own(data)
	if d.byte() != binWrite {
		return ErrCorrupt
	}
	pw := PendingWrite{TaskID: d.str(), Index: int(d.varint()), Channel: d.str(), Value: d.bytes()}
	if err := d.end(); err != nil {
		return err
	}
	*w = pw
	return nil
}
