package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

// Config is what a store made for one subtest must use.
type Config struct {
	// Clock is the store's only source of time: the times of items, when
	// they expire, and the pace of its background sweep.
	Clock store.Clock
	// TTL is the store's TTL policy.
	TTL store.TTLConfig
}

// start is the time every subtest's clock starts at.
var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Run checks that the stores newStore makes obey the store.Store contract,
// in subtests named by area ("Item/...", "Search/...", "ListNamespaces/...",
// "TTL/...", "Concurrent/..."). newStore is called once per subtest and must
// return an empty store that takes its time from cfg.Clock and its TTL
// policy from cfg.TTL; it releases what it opens with t.Cleanup. Stores that
// implement store.Sweeper have their Sweep tested, and stores that
// implement io.Closer their Close; the subtests that need either are
// skipped, saying so, when the store lacks it.
//
// Beyond what LangGraph's own store tests check, Run checks the TTL rules
// on a clock it moves by hand (expiry, refresh on read, default TTLs, the
// background sweep), concurrent writers to one key and to many, readers
// racing writers and sweeps, cancelled contexts, and that values passed to
// Put or returned by Get and Search share no memory with what is stored.
func Run(t *testing.T, newStore func(t *testing.T, cfg Config) store.Store) {
	t.Helper()
	for _, group := range []struct {
		name  string
		tests []test
	}{
		{"Item", itemTests},
		{"Search", searchTests},
		{"Filter", filterTests},
		{"ListNamespaces", namespaceTests},
		{"TTL", ttlTests},
		{"Concurrent", concurrentTests},
		{"Context", contextTests},
	} {
		t.Run(group.name, func(t *testing.T) {
			for _, tc := range group.tests {
				t.Run(tc.name, func(t *testing.T) {
					clock := NewClock(start)
					ttl := tc.ttl
					if ttl == (store.TTLConfig{}) {
						// Most tests have no business with the sweeper.
						ttl.SweepInterval = -1
					}
					s := newStore(t, Config{Clock: clock, TTL: ttl})
					tc.run(t, &env{s: s, clock: clock})
				})
			}
		})
	}
}

type test struct {
	name string
	ttl  store.TTLConfig
	run  func(t *testing.T, e *env)
}

// env is one subtest's store and clock.
type env struct {
	s     store.Store
	clock *Clock
}

var ctx = context.Background()

func (e *env) put(t *testing.T, ns []string, key string, value map[string]any) {
	t.Helper()
	e.putTTL(t, ns, key, value, 0)
}

func (e *env) putTTL(t *testing.T, ns []string, key string, value map[string]any, ttl time.Duration) {
	t.Helper()
	if err := e.s.Put(ctx, ns, key, value, store.PutOptions{TTL: ttl}); err != nil {
		t.Fatalf("Put(%q, %q, TTL %v): %v", ns, key, ttl, err)
	}
}

// putMany puts n items from several goroutines at once, which stores that
// share commits between concurrent writers put faster.
func (e *env) putMany(t *testing.T, n int, item func(i int) (ns []string, key string, value map[string]any, ttl time.Duration)) {
	t.Helper()
	err := parallel(writers, func(w int) error {
		for i := w; i < n; i += writers {
			space, key, value, ttl := item(i)
			if err := e.s.Put(ctx, space, key, value, store.PutOptions{TTL: ttl}); err != nil {
				return fmt.Errorf("Put(%q, %q): %w", space, key, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t *testing.T, ns []string, key string) *store.Item {
	t.Helper()
	return e.getOpts(t, ns, key, store.GetOptions{})
}

func (e *env) getOpts(t *testing.T, ns []string, key string, opts store.GetOptions) *store.Item {
	t.Helper()
	it, err := e.s.Get(ctx, ns, key, opts)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, key, err)
	}
	if it == nil {
		t.Fatalf("Get(%q, %q) returned no item and no error", ns, key)
	}
	return it
}

func (e *env) wantNotFound(t *testing.T, ns []string, key string) {
	t.Helper()
	it, err := e.s.Get(ctx, ns, key, store.GetOptions{})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q, %q) = %v, %v; want an error wrapping ErrNotFound", ns, key, describe(it), err)
	}
}

func (e *env) search(t *testing.T, prefix []string, opts store.SearchOptions) []*store.Item {
	t.Helper()
	items, err := e.s.Search(ctx, prefix, opts)
	if err != nil {
		t.Fatalf("Search(%q, %+v): %v", prefix, opts, err)
	}
	return items
}

func (e *env) list(t *testing.T, opts store.NamespaceOptions) [][]string {
	t.Helper()
	got, err := e.s.ListNamespaces(ctx, opts)
	if err != nil {
		t.Fatalf("ListNamespaces(%+v): %v", opts, err)
	}
	return got
}

func (e *env) sweeper(t *testing.T) store.Sweeper {
	t.Helper()
	sw, ok := e.s.(store.Sweeper)
	if !ok {
		t.Skipf("%T does not implement store.Sweeper", e.s)
	}
	return sw
}

// paths names items as "label/label:key", in their order.
func paths(items []*store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = strings.Join(it.Namespace, "/") + ":" + it.Key
	}
	return out
}

func describe(it *store.Item) string {
	if it == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s %v", paths([]*store.Item{it})[0], it.Value)
}

func wantPaths(t *testing.T, what string, got []*store.Item, want ...string) {
	t.Helper()
	if g := paths(got); !reflect.DeepEqual(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Errorf("%s = %q; want %q", what, g, want)
	}
}

func wantNamespaces(t *testing.T, what string, got [][]string, want ...[]string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s = %q; want %q", what, got, want)
	}
}

// wantTime checks a time to the millisecond, the precision a store must
// keep at least.
func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s = %v; want none", what, got)
		}
		return
	}
	if d := got.Sub(want); d < -time.Millisecond || d > time.Millisecond || got.IsZero() {
		t.Errorf("%s = %v; want %v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v; want one wrapping %v", what, err, target)
	}
}

func ns(labels ...string) []string { return labels }

func doc(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}
