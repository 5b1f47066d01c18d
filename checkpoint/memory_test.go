package checkpoint_test

import (
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
