package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func open(t testing.TB, opts ...bolt.Option) *bolt.Saver {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "threads.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t) })
}

func TestConformanceWithoutSync(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, bolt.WithoutSync()) })
}

func BenchmarkSync(b *testing.B) {
	checkpointtest.Benchmark(b, func(b *testing.B) checkpoint.Saver { return open(b) })
}

func BenchmarkWithoutSync(b *testing.B) {
	checkpointtest.Benchmark(b, func(b *testing.B) checkpoint.Saver { return open(b, bolt.WithoutSync()) })
}

func TestPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Path(); got != path {
		t.Errorf("Path() = %q; want %q", got, path)
	}
}
