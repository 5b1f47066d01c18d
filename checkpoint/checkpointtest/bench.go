package checkpointtest

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Benchmark measures the savers newSaver makes on the work a graph does:
// putting a one-message delta checkpoint and reading the latest back, the
// same from 8 goroutines on their own threads (ns/op is then wall time over
// all their operations), getting by id, and listing 100 checkpoints.
// newSaver is called once per sub-benchmark.
func Benchmark(b *testing.B, newSaver func(b *testing.B) checkpoint.Saver) {
	b.Run("PutGetLatest", func(b *testing.B) {
		s := newSaver(b)
		cfg := checkpoint.Config{ThreadID: "bench"}
		cp := DeltaCheckpoint(0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var err error
			cp.ID = checkpoint.NewID() // a Saver keeps no reference to what it was given
			if cfg, err = s.Put(ctx, cfg, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Get(ctx, checkpoint.Config{ThreadID: "bench"}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("PutGetLatest8Threads", func(b *testing.B) {
		s := newSaver(b)
		var threads atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			thread := checkpoint.Config{ThreadID: "bench-" + strconv.FormatInt(threads.Add(1), 10)}
			cfg := thread
			cp := DeltaCheckpoint(0)
			for i := 0; pb.Next(); i++ {
				var err error
				cp.ID = checkpoint.NewID()
				if cfg, err = s.Put(ctx, cfg, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Get(ctx, thread); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("GetByID", func(b *testing.B) {
		s := newSaver(b)
		cfgs := fill(b, s, 1000)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := s.Get(ctx, cfgs[i%len(cfgs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("List100", func(b *testing.B) {
		s := newSaver(b)
		l, ok := s.(checkpoint.Lister)
		if !ok {
			b.Skipf("%T does not implement checkpoint.Lister", s)
		}
		fill(b, s, 1000)
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, err := range l.List(ctx, checkpoint.Config{ThreadID: "bench"}, checkpoint.ListOptions{Limit: 100}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 100 {
				b.Fatalf("listed %d, want 100", n)
			}
		}
	})
}

func fill(b *testing.B, s checkpoint.Saver, n int) []checkpoint.Config {
	cfg := checkpoint.Config{ThreadID: "bench"}
	cfgs := make([]checkpoint.Config, n)
	for i := range cfgs {
		var err error
		if cfg, err = s.Put(ctx, cfg, DeltaCheckpoint(i), checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i}); err != nil {
			b.Fatal(err)
		}
		cfgs[i] = cfg
	}
	return cfgs
}

var benchMessage = []byte(`{"role":"assistant","content":"The answer is 42. I computed it with the sandbox.","tool_calls":null}`)

// DeltaCheckpoint returns the checkpoint of step i of an agent loop that
// appended one message: a delta on "messages", the channel versions, what
// the node had seen, and the next task.
func DeltaCheckpoint(i int) *checkpoint.Checkpoint {
	v := uint64(i + 2)
	return &checkpoint.Checkpoint{
		V:        checkpoint.Version,
		ID:       checkpoint.NewID(),
		TS:       time.Now(),
		Deltas:   map[string][][]byte{"messages": {benchMessage}},
		Versions: map[string]uint64{"messages": v, "branch:to:tools": v},
		Seen:     map[string]map[string]uint64{"agent": {"messages": v - 1}},
		Tasks:    []checkpoint.Task{{ID: "task-" + strconv.Itoa(i), Node: "tools"}},
	}
}
