package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

var ttlTests = []test{
	{name: "Expiry", run: func(t *testing.T, e *env) {
		e.putTTL(t, ns("m", "u1"), "short", doc("v", 1), time.Minute)
		e.put(t, ns("m", "u1"), "long", doc("v", 2))
		e.putTTL(t, ns("m", "u2"), "short", doc("v", 3), time.Minute)
		it := e.getOpts(t, ns("m", "u1"), "short", store.GetOptions{RefreshTTL: store.RefreshOff})
		wantTime(t, "ExpiresAt", it.ExpiresAt, start.Add(time.Minute))

		e.clock.Advance(time.Minute - time.Millisecond)
		e.getOpts(t, ns("m", "u1"), "short", store.GetOptions{RefreshTTL: store.RefreshOff})
		e.clock.Advance(time.Millisecond)
		// Expired the moment its time came, sweep or no sweep.
		e.wantNotFound(t, ns("m", "u1"), "short")
		e.wantNotFound(t, ns("m", "u2"), "short")
		wantPaths(t, "Search after expiry", e.search(t, ns("m"), store.SearchOptions{}), "m/u1:long")
		wantNamespaces(t, "ListNamespaces after expiry", e.list(t, store.NamespaceOptions{}), ns("m", "u1"))
		wantNamespaces(t, "ListNamespaces [m] depth 2 after expiry", e.list(t, store.NamespaceOptions{Prefix: ns("m"), MaxDepth: 2}), ns("m", "u1"))
		if err := e.s.Delete(ctx, ns("m", "u2"), "short"); err != nil {
			t.Errorf("Delete of an expired item: %v", err)
		}

		// An expired item is gone: putting it again creates it afresh.
		e.put(t, ns("m", "u1"), "short", doc("v", 4))
		it = e.get(t, ns("m", "u1"), "short")
		wantTime(t, "CreatedAt of an item put over an expired one", it.CreatedAt, start.Add(time.Minute))
		wantTime(t, "ExpiresAt of an item put without a TTL", it.ExpiresAt, time.Time{})
	}},
	{name: "RefreshOnGet", run: func(t *testing.T, e *env) {
		e.putTTL(t, ns("m"), "k", doc(), time.Minute)
		e.clock.Advance(40 * time.Second)
		it := e.get(t, ns("m"), "k") // refreshes by default
		wantTime(t, "ExpiresAt after a refreshing Get", it.ExpiresAt, start.Add(100*time.Second))
		wantTime(t, "UpdatedAt after a refreshing Get", it.UpdatedAt, start)
		e.clock.Advance(40 * time.Second)
		it = e.getOpts(t, ns("m"), "k", store.GetOptions{RefreshTTL: store.RefreshOff})
		wantTime(t, "ExpiresAt after a Get with RefreshOff", it.ExpiresAt, start.Add(100*time.Second))
		it = e.getOpts(t, ns("m"), "k", store.GetOptions{RefreshTTL: store.RefreshOn})
		wantTime(t, "ExpiresAt after a Get with RefreshOn", it.ExpiresAt, start.Add(140*time.Second))
		e.clock.Advance(time.Minute)
		e.wantNotFound(t, ns("m"), "k")
	}},
	{name: "RefreshOnSearch", run: func(t *testing.T, e *env) {
		e.putTTL(t, ns("m"), "old", doc("n", 1), time.Minute)
		e.clock.Advance(time.Second)
		e.putTTL(t, ns("m"), "new", doc("n", 2), time.Minute)
		e.put(t, ns("m"), "forever", doc("n", 3))
		e.clock.Advance(30 * time.Second)
		// Only the items returned are refreshed.
		got := e.search(t, ns("m"), store.SearchOptions{Filter: doc("n", doc("$lt", 3)), Limit: 1})
		wantPaths(t, "Search", got, "m:new")
		wantTime(t, "ExpiresAt of the item Search returned", got[0].ExpiresAt, start.Add(91*time.Second))
		e.clock.Advance(30 * time.Second)
		wantPaths(t, "Search after the first TTL", e.search(t, ns("m"), store.SearchOptions{RefreshTTL: store.RefreshOff}), "m:forever", "m:new")
		e.clock.Advance(30 * time.Second)
		wantPaths(t, "Search after the refreshed TTL", e.search(t, ns("m"), store.SearchOptions{}), "m:forever")
		it := e.get(t, ns("m"), "forever")
		wantTime(t, "ExpiresAt of an item without a TTL", it.ExpiresAt, time.Time{})
	}},
	{name: "NoRefreshOnRead", ttl: store.TTLConfig{NoRefreshOnRead: true, SweepInterval: -1}, run: func(t *testing.T, e *env) {
		e.putTTL(t, ns("m"), "k", doc(), time.Minute)
		e.clock.Advance(30 * time.Second)
		e.get(t, ns("m"), "k")
		e.search(t, ns("m"), store.SearchOptions{})
		it := e.get(t, ns("m"), "k")
		wantTime(t, "ExpiresAt after reads under NoRefreshOnRead", it.ExpiresAt, start.Add(time.Minute))
		it = e.getOpts(t, ns("m"), "k", store.GetOptions{RefreshTTL: store.RefreshOn})
		wantTime(t, "ExpiresAt after a Get with RefreshOn", it.ExpiresAt, start.Add(90*time.Second))
		got := e.search(t, ns("m"), store.SearchOptions{RefreshTTL: store.RefreshOn})
		wantTime(t, "ExpiresAt after a Search with RefreshOn", got[0].ExpiresAt, start.Add(90*time.Second))
	}},
	{name: "Rewrite", run: func(t *testing.T, e *env) {
		e.putTTL(t, ns("m"), "k", doc("v", 1), time.Minute)
		e.clock.Advance(30 * time.Second)
		e.putTTL(t, ns("m"), "k", doc("v", 2), 2*time.Minute)
		it := e.getOpts(t, ns("m"), "k", store.GetOptions{RefreshTTL: store.RefreshOff})
		wantTime(t, "ExpiresAt after a Put with a new TTL", it.ExpiresAt, start.Add(150*time.Second))
		wantTime(t, "CreatedAt", it.CreatedAt, start)
		e.put(t, ns("m"), "k", doc("v", 3))
		it = e.get(t, ns("m"), "k")
		wantTime(t, "ExpiresAt after a Put without a TTL", it.ExpiresAt, time.Time{})
		e.clock.Advance(time.Hour)
		if it := e.get(t, ns("m"), "k"); it.Value["v"] != 3.0 {
			t.Errorf("Get = %v; want v 3", it.Value)
		}
		if sw, ok := e.s.(store.Sweeper); ok {
			if n, err := sw.Sweep(ctx); err != nil || n != 0 {
				t.Errorf("Sweep = %d, %v; want nothing to sweep once the TTL was dropped", n, err)
			}
			e.get(t, ns("m"), "k")
		}
	}},
	{name: "DefaultTTL", ttl: store.TTLConfig{Default: time.Hour, SweepInterval: -1}, run: func(t *testing.T, e *env) {
		e.put(t, ns("m"), "default", doc())
		e.putTTL(t, ns("m"), "own", doc(), time.Minute)
		e.putTTL(t, ns("m"), "never", doc(), store.NoTTL)
		e.putTTL(t, ns("m"), "negative", doc(), -time.Hour)
		off := store.GetOptions{RefreshTTL: store.RefreshOff}
		wantTime(t, "ExpiresAt with the default TTL", e.getOpts(t, ns("m"), "default", off).ExpiresAt, start.Add(time.Hour))
		wantTime(t, "ExpiresAt with its own TTL", e.getOpts(t, ns("m"), "own", off).ExpiresAt, start.Add(time.Minute))
		wantTime(t, "ExpiresAt with NoTTL", e.getOpts(t, ns("m"), "never", off).ExpiresAt, time.Time{})
		wantTime(t, "ExpiresAt with a negative TTL", e.getOpts(t, ns("m"), "negative", off).ExpiresAt, time.Time{})
		e.clock.Advance(time.Hour)
		wantPaths(t, "Search after an hour", e.search(t, ns("m"), store.SearchOptions{}), "m:negative", "m:never")
	}},
	{name: "Sweep", run: func(t *testing.T, e *env) {
		sw := e.sweeper(t)
		for _, k := range []string{"a", "b", "c"} {
			e.putTTL(t, ns("m", k), k, doc(), time.Minute)
		}
		e.putTTL(t, ns("m", "a"), "later", doc(), time.Hour)
		e.put(t, ns("m", "a"), "forever", doc())
		if n, err := sw.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("Sweep before anything expired = %d, %v; want 0, nil", n, err)
		}
		e.clock.Advance(30 * time.Second)
		e.get(t, ns("m", "c"), "c") // refreshed: expires 30s later than the others
		e.clock.Advance(30 * time.Second)
		if n, err := sw.Sweep(ctx); err != nil || n != 2 {
			t.Fatalf("Sweep = %d, %v; want 2 (a and b), nil", n, err)
		}
		if n, err := sw.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("second Sweep = %d, %v; want 0, nil", n, err)
		}
		e.clock.Advance(30 * time.Second)
		if n, err := sw.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("Sweep after the refreshed TTL = %d, %v; want 1 (c), nil", n, err)
		}
		wantPaths(t, "Search after sweeps", e.search(t, ns("m"), store.SearchOptions{RefreshTTL: store.RefreshOff}), "m/a:forever", "m/a:later")
		wantNamespaces(t, "ListNamespaces after sweeps", e.list(t, store.NamespaceOptions{}), ns("m", "a"))
	}},
	{name: "SweepMany", run: func(t *testing.T, e *env) {
		sw := e.sweeper(t)
		const n = 1200 // more than a store would delete in one go
		e.putMany(t, n, func(i int) ([]string, string, map[string]any, time.Duration) {
			return ns("m", string(rune('a'+i%7))), string(rune(0x4e00 + i)), doc("i", i), time.Minute
		})
		e.clock.Advance(time.Minute)
		if got, err := sw.Sweep(ctx); err != nil || got != n {
			t.Fatalf("Sweep = %d, %v; want %d, nil", got, err, n)
		}
		wantNamespaces(t, "ListNamespaces after the sweep", e.list(t, store.NamespaceOptions{}))
	}},
	{name: "BackgroundSweep", ttl: store.TTLConfig{SweepInterval: time.Minute}, run: func(t *testing.T, e *env) {
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		e.putTTL(t, ns("m"), "a", doc(), 30*time.Second)
		e.putTTL(t, ns("m"), "b", doc(), 30*time.Second)
		e.put(t, ns("m"), "forever", doc())
		// The sweeper sleeps on the store's clock.
		if err := e.clock.WaitTimers(wait, 1); err != nil {
			t.Fatalf("no sweeper waits on the clock after an item with a TTL was put (%v): a store must sweep in the background every TTLConfig.SweepInterval", err)
		}
		e.clock.Advance(time.Minute)
		// It goes back to sleep once the sweep is done.
		if err := e.clock.WaitTimers(wait, 1); err != nil {
			t.Fatalf("the sweeper did not sleep again after its interval: %v", err)
		}
		if sw, ok := e.s.(store.Sweeper); ok {
			if n, err := sw.Sweep(ctx); err != nil || n != 0 {
				t.Errorf("Sweep after the background sweep = %d, %v; want 0: the background sweep should have deleted both", n, err)
			}
		}
		wantPaths(t, "Search after the background sweep", e.search(t, ns("m"), store.SearchOptions{}), "m:forever")
	}},
}
