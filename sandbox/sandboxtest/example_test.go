package sandboxtest_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

// A backend proves itself against the suite from its own tests (its TestMain calls local.Init first).
func Example() {
	_ = func(t *testing.T) {
		sandboxtest.Run(t, func(t *testing.T) sandbox.Backend {
			b, err := local.New(local.WithRoot(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		})
	}
}
