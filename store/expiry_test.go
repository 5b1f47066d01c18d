package store

import (
	"context"
	"testing"
	"time"
)

// The expiry heap holds one entry per item with a TTL, however often items
// are rewritten, refreshed or deleted.
func TestExpiryHeapSize(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(WithTTL(TTLConfig{SweepInterval: -1}))
	defer m.Close()
	for i := range 100 {
		for _, k := range []string{"a", "b", "c"} {
			if err := m.Put(ctx, []string{"m"}, k, map[string]any{"i": i}, PutOptions{TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.Get(ctx, []string{"m"}, "a", GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Put(ctx, []string{"m"}, "c", nil, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, []string{"m"}, "b"); err != nil {
		t.Fatal(err)
	}
	if n := len(m.expiry); n != 1 {
		t.Fatalf("expiry heap holds %d entries; want 1 (a)", n)
	}
	for i, it := range m.expiry {
		if it.index != i {
			t.Errorf("entry %d of the heap (%s) says it is at %d", i, it.key, it.index)
		}
	}
}
