//go:build linux

package local_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

// newBackend opens a backend on a fresh root that is closed when the test ends.
func newBackend(t testing.TB, opts ...local.Option) *local.Backend {
	t.Helper()
	b, err := local.New(append([]local.Option{local.WithRoot(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newBackend(t) })
}
