package store_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/storetest"
)

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
