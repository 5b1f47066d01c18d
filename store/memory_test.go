package store_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/store"
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

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) store.Store {
		m := store.NewMemory(store.WithClock(cfg.Clock), store.WithTTL(cfg.TTL))
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		})
		return m
	})
}
