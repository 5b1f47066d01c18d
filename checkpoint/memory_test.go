package checkpoint_test

import (
	"context"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func TestMemoryConformance(t *testing.T) {
	checkpointtest.Run(t, func(*testing.T) checkpoint.Saver { return checkpoint.NewMemory() })
}

func BenchmarkMemory(b *testing.B) {
	checkpointtest.Benchmark(b, func(*testing.B) checkpoint.Saver { return checkpoint.NewMemory() })
}

// countingSaver is a wrapper that embeds a *Memory and overrides Put.
type countingSaver struct {
	*checkpoint.Memory
	puts int
}

func (s *countingSaver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Config, error) {
	s.puts++
	return s.Memory.Put(ctx, cfg, cp, md)
}

// Adopt takes the bytes over only for a *Memory itself: a wrapper's Put
// is never bypassed.
func TestAdoptGoesThroughAWrappersPut(t *testing.T) {
	s := &countingSaver{Memory: checkpoint.NewMemory()}
	cp := &checkpoint.Checkpoint{ID: checkpoint.NewID(), Values: map[string][]byte{"k": make([]byte, 4096)}}
	if _, err := checkpoint.Adopt(context.Background(), s, checkpoint.Config{ThreadID: "t"}, cp, checkpoint.Metadata{}); err != nil {
		t.Fatal(err)
	}
	if s.puts != 1 {
		t.Fatalf("the wrapper's Put ran %d times, want 1", s.puts)
	}
}
