package checkpoint

import (
	"sync"
	"testing"
	"time"
)

func TestNewIDIncreasesAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 2000
	results := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ids := make([]string, each)
			for i := range ids {
				ids[i] = NewID()
			}
			results[g] = ids
		})
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for g, ids := range results {
		for i, id := range ids {
			if len(id) != IDLen {
				t.Fatalf("id %q has length %d, want %d", id, len(id), IDLen)
			}
			if i > 0 && ids[i-1] >= id {
				t.Fatalf("goroutine %d: id %q after %q does not sort later", g, id, ids[i-1])
			}
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
		}
	}
	// The time parts are all distinct: the process-wide order is total.
	times := make(map[string]bool, len(seen))
	for id := range seen {
		times[id[:16]] = true
	}
	if len(times) != len(seen) {
		t.Fatalf("%d ids share %d time parts", len(seen), len(times))
	}
}

func TestNewIDSortsByTime(t *testing.T) {
	// Ids from different processes share no counter, so their order is their time parts': a later time sorts
	// later whatever the random parts, across hex digit and length boundaries too.
	for _, tc := range []struct{ earlier, later uint64 }{
		{0x9, 0xa},
		{0xf, 0x10},
		{0xffffffff, 0x100000000},
		{1_700_000_000_000_000_000, 1_700_000_000_000_000_001},
	} {
		a, b := formatID(tc.earlier, 1<<48-1), formatID(tc.later, 0)
		if a >= b {
			t.Errorf("id %q of time %#x does not sort before %q of time %#x", a, tc.earlier, b, tc.later)
		}
	}
	// The time part is the clock's Unix nanoseconds in hex (pushed ahead by a little when ids come faster
	// than the clock moves).
	before := time.Now().UnixNano()
	id := NewID()
	after := time.Now().Add(time.Minute).UnixNano()
	if got := id[:16]; got < formatID(uint64(before), 0)[:16] || got > formatID(uint64(after), 0)[:16] {
		t.Fatalf("id %q is not within a minute after the clock's reading before it", id)
	}
	if next := NewID(); next <= id {
		t.Fatalf("id %q made after %q sorts before it", next, id)
	}
}

func TestFormatID(t *testing.T) {
	if got, want := formatID(0x0123456789abcdef, 0xfedcba987654), "0123456789abcdef-fedcba987654"; got != want {
		t.Fatalf("formatID = %q, want %q", got, want)
	}
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = NewID()
		}
	})
}
