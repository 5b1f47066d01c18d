package checkpoint

import (
	"slices"
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
	a := NewID()
	time.Sleep(2 * time.Millisecond)
	b := NewID()
	ids := []string{b, a}
	slices.Sort(ids)
	if ids[0] != a {
		t.Fatalf("earlier id %q sorts after later %q", a, b)
	}
	// The time part is the clock's Unix nanoseconds in hex.
	before := time.Now().Add(-time.Minute).UnixNano()
	after := time.Now().Add(time.Minute).UnixNano()
	got := formatID(uint64(before), 0)[:16]
	if !(got < b[:16] && b[:16] < formatID(uint64(after), 0)[:16]) {
		t.Fatalf("id %q is not within a minute of now", b)
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
