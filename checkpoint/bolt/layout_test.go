package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func openTemp(t *testing.T) *Saver {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "cp.db"), WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// list is a JSON array of n strings of 100 bytes, as a growing message list
// is stored; their letters are random, so that it does not compress.
func list(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		r := rand.New(rand.NewPCG(uint64(i), 0))
		b.WriteByte('"')
		for range 98 {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.Bytes()
}

func put(t *testing.T, s *Saver, cp *checkpoint.Checkpoint, run string) {
	t.Helper()
	if _, err := s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, RunID: run}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s *Saver, id string) *checkpoint.Tuple {
	t.Helper()
	tp, err := s.Get(context.Background(), checkpoint.Config{ThreadID: "t", CheckpointID: id})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func rawSize(t *testing.T, s *Saver, id string) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bbolt.Tx) error {
		b := nsBucket(tx, "t", "")
		n = len(b.Get(cpKey(id))) + len(b.Get(bodyKey(id)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A full checkpoint's values that begin with the previous full checkpoint's
// are stored as a reference and the rest; reading gives them back whole,
// and putting the referred checkpoint again does not change them.
func TestFullCheckpointsReferToThePreviousFull(t *testing.T) {
	s := openTemp(t)
	ts := time.Now().UTC()
	a := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: ts, Full: true,
		Values: map[string][]byte{"log": list(50), "n": []byte("1")}, Versions: map[string]uint64{"log": 1, "n": 1}}
	put(t, s, a, "run-1")
	b := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), ParentID: a.ID, TS: ts,
		Deltas: map[string][][]byte{"log": {list(1)}}, Versions: map[string]uint64{"log": 2},
		Tasks: []checkpoint.Task{{ID: "", Node: "x"}}}
	put(t, s, b, "run-1")
	c := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), ParentID: b.ID, TS: ts.Add(time.Second), Full: true,
		Values:   map[string][]byte{"log": append(list(50)[:len(list(50))-1:len(list(50))-1], []byte(`,"tail"]`)...), "n": []byte("2")},
		Versions: map[string]uint64{"log": 3, "n": 3}}
	c.Tasks = []checkpoint.Task{{ID: c.ID + "/0", Node: "agent"}, {ID: c.ID + "/1", Node: "tools", Input: []byte(`{}`)}}
	put(t, s, c, "run-2")

	for _, want := range []*checkpoint.Checkpoint{a, b, c} {
		got := get(t, s, want.ID).Checkpoint
		if !reflect.DeepEqual(got, want) {
			t.Errorf("checkpoint %s:\n got %+v\nwant %+v", want.ID, got, want)
		}
	}
	if n := rawSize(t, s, a.ID); n < 5000 {
		t.Errorf("the first full checkpoint takes %d bytes, less than its values", n)
	}
	if n := rawSize(t, s, c.ID); n > 400 {
		t.Errorf("the second full checkpoint takes %d bytes; its values repeat the first's and should take a reference", n)
	}
	if md := get(t, s, c.ID).Metadata; md.RunID != "run-2" {
		t.Errorf("run id %q, want run-2", md.RunID)
	}

	// Put a again with other values: c must keep its own.
	a2 := *a
	a2.Values = map[string][]byte{"log": []byte(`[]`), "n": []byte("0")}
	put(t, s, &a2, "run-3")
	if got := get(t, s, c.ID).Checkpoint; !reflect.DeepEqual(got, c) {
		t.Errorf("after its reference was put again, checkpoint c is %+v", got)
	}
	if got := get(t, s, a.ID).Checkpoint; !reflect.DeepEqual(got, &a2) {
		t.Errorf("checkpoint a put again reads %+v", got)
	}
}

// A long record is stored apart from the key Put appends to, behind a stub;
// putting the checkpoint again with a short record removes it.
func TestLongRecordsBehindAStub(t *testing.T) {
	s := openTemp(t)
	cp := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: time.Now().UTC(),
		Deltas: map[string][][]byte{"log": {list(100)}}}
	put(t, s, cp, "r")
	if got := get(t, s, cp.ID).Checkpoint; !reflect.DeepEqual(got, cp) {
		t.Fatalf("got %+v", got)
	}
	body := func() []byte {
		var v []byte
		_ = s.db.View(func(tx *bbolt.Tx) error { v = nsBucket(tx, "t", "").Get(bodyKey(cp.ID)); return nil })
		return v
	}
	if len(body()) < 10000 {
		t.Fatalf("long record stored under its key")
	}
	cp.Deltas = map[string][][]byte{"log": {list(1)}}
	put(t, s, cp, "r")
	if got := get(t, s, cp.ID).Checkpoint; !reflect.DeepEqual(got, cp) {
		t.Fatalf("put again: got %+v", got)
	}
	if body() != nil {
		t.Errorf("the long record outlived the short one that replaced it")
	}
}

// Ids not made by checkpoint.NewID are stored as they are.
func TestOtherIDs(t *testing.T) {
	s := openTemp(t)
	ts := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	first := &checkpoint.Checkpoint{V: checkpoint.Version, ID: "step-1", TS: ts, Full: true, Values: map[string][]byte{"k": []byte(`"v"`)}}
	second := &checkpoint.Checkpoint{V: checkpoint.Version, ID: "step-2", ParentID: "step-1", TS: ts,
		Tasks: []checkpoint.Task{{ID: "step-2/0", Node: "a"}, {ID: "other", Node: "b"}}}
	put(t, s, first, "")
	put(t, s, second, "")
	for _, want := range []*checkpoint.Checkpoint{first, second} {
		if got := get(t, s, want.ID).Checkpoint; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	}
}

// A file of format 1 opens, its records read as before, and new records
// are written in layout 2 beside them.
func TestFormat1FilesStillOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: time.Now().UTC(), Full: true,
		Values: map[string][]byte{"k": []byte(`"v"`)}, Tasks: []checkpoint.Task{{ID: "t/0", Node: "a"}}}
	md := checkpoint.Metadata{Source: checkpoint.SourceInput, RunID: "r"}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, _ := tx.CreateBucket(metaBucket)
		if err := meta.Put(formatKey, []byte(format1)); err != nil {
			return err
		}
		threads, _ := tx.CreateBucket(threadsBucket)
		tb, _ := threads.CreateBucket([]byte("t"))
		nb, err := tb.CreateBucket(nsKey(""))
		if err != nil {
			return err
		}
		mdb, _ := md.MarshalBinary()
		rec := binary.AppendUvarint(nil, uint64(len(mdb)))
		rec = append(rec, mdb...)
		rec, _ = old.AppendBinary(rec)
		return nb.Put(cpKey(old.ID), rec)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := get(t, s, old.ID)
	if !reflect.DeepEqual(tp.Checkpoint, old) || tp.Metadata.RunID != "r" {
		t.Fatalf("format 1 record reads %+v %+v", tp.Checkpoint, tp.Metadata)
	}
	next := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), ParentID: old.ID, TS: time.Now().UTC(), Full: true,
		Values: map[string][]byte{"k": []byte(`"w"`)}}
	put(t, s, next, "r")
	if got := get(t, s, next.ID).Checkpoint; !reflect.DeepEqual(got, next) {
		t.Fatalf("got %+v", got)
	}
	var format string
	_ = s.db.View(func(tx *bbolt.Tx) error { format = string(tx.Bucket(metaBucket).Get(formatKey)); return nil })
	if format != Format {
		t.Errorf("file format %q after opening, want %q", format, Format)
	}
}

// Values that repeat themselves are stored compressed, also what is left of
// one after a reference, and read back whole.
func TestRepeatingValuesAreCompressed(t *testing.T) {
	s := openTemp(t)
	msg := `{"role":"tool","content":"` + strings.Repeat("3f2b8c1e-5d6a-4e7f-9a0b-1c2d3e4f5a6b", 20) + `"}`
	msgs := func(n int) []byte { return []byte("[" + strings.Repeat(msg+",", n-1) + msg + "]") }
	ts := time.Now().UTC()
	a := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: ts, Full: true,
		Values:   map[string][]byte{"messages": msgs(1000), "noise": list(30), "n": []byte("1")},
		Versions: map[string]uint64{"messages": 1, "noise": 1, "n": 1}}
	put(t, s, a, "r")
	b := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), ParentID: a.ID, TS: ts, Full: true,
		Values:   map[string][]byte{"messages": msgs(2000), "noise": list(31), "n": []byte("2")},
		Versions: map[string]uint64{"messages": 2, "noise": 2, "n": 2}}
	put(t, s, b, "r")
	for _, want := range []*checkpoint.Checkpoint{a, b} {
		if got := get(t, s, want.ID).Checkpoint; !reflect.DeepEqual(got, want) {
			t.Errorf("checkpoint %s reads back different", want.ID)
		}
		if n := rawSize(t, s, want.ID); n > len(list(31))+1000 {
			t.Errorf("checkpoint %s with %d bytes of values takes %d bytes", want.ID, len(want.Values["messages"])+len(want.Values["noise"]), n)
		}
	}
}

// A file of format 2 opens, its records read as before, and it is marked
// as format 3.
func TestFormat2FilesStillOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: time.Now().UTC(), Full: true,
		Values: map[string][]byte{"k": list(20)}, Versions: map[string]uint64{"k": 1}}
	put(t, s, old, "r")
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(metaBucket).Put(formatKey, []byte(format2)) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := get(t, s, old.ID).Checkpoint; !reflect.DeepEqual(got, old) {
		t.Fatalf("format 2 record reads %+v", got)
	}
	var format string
	_ = s.db.View(func(tx *bbolt.Tx) error { format = string(tx.Bucket(metaBucket).Get(formatKey)); return nil })
	if format != Format {
		t.Errorf("file format %q after opening, want %q", format, Format)
	}
}

// A record that names a compressed value twice is damage, not a value decompressed twice.
func TestPackedKeyTwiceIsCorrupt(t *testing.T) {
	id := checkpoint.NewID()
	cp := &checkpoint.Checkpoint{V: checkpoint.Version, ID: id, TS: time.Now().UTC(), Full: true,
		Values:   map[string][]byte{"blob": []byte(`"` + strings.Repeat("abcdefgh", 1000) + `"`)},
		Versions: map[string]uint64{"blob": 1}}
	rec := encodeRecord(cp, &checkpoint.Metadata{}, nil, 0)
	r, err := parseRecord(id, rec)
	if err != nil || len(r.packed) != 1 {
		t.Fatalf("the record of a repetitive value: packed %v, %v", r.packed, err)
	}
	if _, err := decodeCheckpoint(nil, id, r, 0); err != nil {
		t.Fatalf("the record as written: %v", err)
	}
	once := []byte{1, 4, 'b', 'l', 'o', 'b'}
	i := bytes.Index(rec, once)
	if i < 0 {
		t.Fatal("no list of compressed keys in the record")
	}
	damaged := append(append(append([]byte(nil), rec[:i]...), 2, 4, 'b', 'l', 'o', 'b', 4, 'b', 'l', 'o', 'b'), rec[i+len(once):]...)
	r, err = parseRecord(id, damaged)
	if err != nil {
		t.Fatalf("parse the damaged record: %v", err)
	}
	if _, err := decodeCheckpoint(nil, id, r, 0); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("a compressed key named twice: %v, want ErrCorrupt", err)
	}
}
