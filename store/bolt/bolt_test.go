package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/bolt"
	"github.com/agentgraph/agentgraph/store/storetest"
)

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
