package checkpoint_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func sampleCheckpoints() map[string]*checkpoint.Checkpoint {
	return map[string]*checkpoint.Checkpoint{
		"zero":  {TS: time.Time{}.UTC()},
		"delta": checkpointtest.DeltaCheckpoint(7),
		"nil and empty": {
			ID: "x", TS: time.Unix(0, 1).UTC(),
			Values:   map[string][]byte{"nil": nil, "empty": {}},
			Deltas:   map[string][][]byte{"nil": nil, "empty": {}, "one nil": {nil}},
			Versions: map[string]uint64{},
			Seen:     map[string]map[string]uint64{"nil": nil, "empty": {}},
			Tasks:    []checkpoint.Task{},
		},
		"everything": {
			V: 1, ID: "01", ParentID: "00", Full: true,
			TS:       time.Date(2262, 1, 1, 0, 0, 0, 999999999, time.UTC), // past the int64 nanosecond range
			Values:   map[string][]byte{"a": []byte(`"x"`), "b": {0, 0xff}},
			Deltas:   map[string][][]byte{"messages": {[]byte(`1`), []byte(`2`)}},
			Versions: map[string]uint64{"a": 1, "b": 1<<64 - 1},
			Seen:     map[string]map[string]uint64{"n": {"a": 1}},
			Tasks:    []checkpoint.Task{{ID: "t", Node: "n", Input: []byte(`{}`)}, {ID: "u", Node: "m"}},
		},
	}
}

func TestCheckpointBinaryRoundTrip(t *testing.T) {
	for name, cp := range sampleCheckpoints() {
		cp.TS = cp.TS.Round(0).UTC()
		b, err := cp.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got checkpoint.Checkpoint
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(&got, cp) {
			t.Errorf("%s: round trip\n got  %#v\n want %#v", name, &got, cp)
		}
		// The result shares no memory with the input.
		for i := range b {
			b[i] = 0
		}
		if !reflect.DeepEqual(&got, cp) {
			t.Errorf("%s: decoded checkpoint changed when its input was overwritten", name)
		}
	}
}

func TestMetadataAndWriteBinaryRoundTrip(t *testing.T) {
	for _, md := range []checkpoint.Metadata{
		{},
		{Source: checkpoint.SourceInput, Step: -1},
		{Source: checkpoint.SourceLoop, Step: 1 << 40, RunID: "r", Parents: map[string]string{"": "p"}, Extra: map[string]string{}},
	} {
		b, _ := md.MarshalBinary()
		var got checkpoint.Metadata
		if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, md) {
			t.Errorf("metadata round trip: %#v, %v; want %#v", got, err, md)
		}
	}
	for _, w := range []checkpoint.PendingWrite{
		{},
		{TaskID: "t", Index: -3, Channel: checkpoint.ErrorChannel, Value: []byte("boom")},
		{TaskID: "t", Index: 7, Channel: "ch", Value: []byte{}},
	} {
		b, _ := w.MarshalBinary()
		var got checkpoint.PendingWrite
		if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("write round trip: %#v, %v; want %#v", got, err, w)
		}
	}
}

// Every truncation of a valid encoding, and data of the wrong kind, fail
// with ErrCorrupt instead of panicking or decoding to something else.
func TestBinaryRejectsDamage(t *testing.T) {
	for name, cp := range sampleCheckpoints() {
		b, _ := cp.MarshalBinary()
		for n := range len(b) {
			var got checkpoint.Checkpoint
			if err := got.UnmarshalBinary(b[:n]); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("%s cut to %d of %d bytes: %v, want ErrCorrupt", name, n, len(b), err)
			}
		}
		var got checkpoint.Checkpoint
		if err := got.UnmarshalBinary(append(b, 0)); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("%s with a trailing byte: %v, want ErrCorrupt", name, err)
		}
		var md checkpoint.Metadata
		if err := md.UnmarshalBinary(b); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("a checkpoint decoded as metadata: %v, want ErrCorrupt", err)
		}
	}
}

func FuzzCheckpointUnmarshalBinary(f *testing.F) {
	for _, cp := range sampleCheckpoints() {
		b, _ := cp.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cp checkpoint.Checkpoint
		if err := cp.UnmarshalBinary(data); err != nil {
			return
		}
		// What decodes re-encodes to something that decodes to the same.
		b, _ := cp.MarshalBinary()
		var again checkpoint.Checkpoint
		if err := again.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(&again, &cp) {
			t.Fatalf("re-encoding changed the checkpoint: %v\n%#v\n%#v", err, &again, &cp)
		}
	})
}

// BenchmarkEncoding compares the binary form with JSON on the checkpoint
// of a step that appended one message.
func BenchmarkEncoding(b *testing.B) {
	cp := checkpointtest.DeltaCheckpoint(7)
	bin, _ := cp.MarshalBinary()
	js, _ := json.Marshal(cp)
	b.Run("Binary/Marshal", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf, _ = cp.AppendBinary(buf[:0])
		}
		b.ReportMetric(float64(len(bin)), "bytes")
	})
	b.Run("Binary/Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c checkpoint.Checkpoint
			if err := c.UnmarshalBinary(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JSON/Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(cp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(js)), "bytes")
	})
	b.Run("JSON/Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c checkpoint.Checkpoint
			if err := json.Unmarshal(js, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
