package bolt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/bolt"
	"github.com/agentgraph/agentgraph/store/storetest"
)

// TestMain fails the package if a test left a sweeper running.
func TestMain(m *testing.M) {
	code := m.Run()
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); code == 0 && strings.Contains(stacks, "sweepLoop") {
		fmt.Fprintln(os.Stderr, "a sweeper goroutine outlived the tests:\n"+stacks)
		code = 1
	}
	os.Exit(code)
}

func open(t testing.TB, opts ...bolt.OpenOption) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), opts...)
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
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) store.Store {
		return open(t, bolt.WithClock(cfg.Clock), bolt.WithTTL(cfg.TTL), bolt.WithoutSync())
	})
}
