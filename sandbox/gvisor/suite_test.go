//go:build linux

package gvisor_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/gvisor"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

// newBackend opens a backend on a fresh root and checks, when the test ends, that no container of it is
// left in runsc's records. Without root or runsc the test is skipped, except under CI, where it fails.
func newBackend(t testing.TB, opts ...gvisor.Option) *gvisor.Backend {
	t.Helper()
	base := []gvisor.Option{gvisor.WithRoot(t.TempDir())}
	// A runsc of its own for the tests (CI builds a newer one than Debian 12's, whose statx breaks ls -l).
	if p := os.Getenv("AGENTGRAPH_RUNSC"); p != "" {
		base = append(base, gvisor.WithRunsc(p))
	}
	b, err := gvisor.New(append(base, opts...)...)
	if errors.Is(err, sandbox.ErrUnsupported) {
		if os.Getenv("CI") != "" {
			t.Fatalf("gVisor backend unavailable under CI: %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		if left := containers(t, b); len(left) > 0 {
			t.Errorf("containers left in runsc's records: %v", left)
		}
	})
	return b
}

// containers lists the ids runsc still records for the backend.
func containers(t testing.TB, b *gvisor.Backend) []string {
	t.Helper()
	out, err := exec.Command(b.Runsc(), "-root", b.Root()+"/.runsc", "list", "-quiet").Output()
	if err != nil {
		t.Fatalf("runsc list: %v", err)
	}
	return strings.Fields(string(out))
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return newBackend(t) })
}
