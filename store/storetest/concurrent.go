package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

const (
	writers = 8
	rounds  = 40
)

// parallel runs f(i) for i in [0, n) at once and returns the first error.
func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

var concurrentTests = []test{
	{name: "OneKey", run: func(t *testing.T, e *env) {
		// Writers race on one key; readers must only ever see one whole
		// value, and the last write must stand.
		e.put(t, ns("race"), "k", doc("w", -1, "r", -1, "sum", -2))
		stop := make(chan struct{})
		var readers sync.WaitGroup
		readErr := make(chan error, 2)
		for range 2 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-stop:
						readErr <- nil
						return
					default:
					}
					it, err := e.s.Get(ctx, ns("race"), "k", store.GetOptions{})
					if err != nil {
						readErr <- fmt.Errorf("get during writes: %w", err)
						return
					}
					if w, r, sum := it.Value["w"].(float64), it.Value["r"].(float64), it.Value["sum"].(float64); w+r != sum {
						readErr <- fmt.Errorf("get during writes saw a torn value %v", it.Value)
						return
					}
				}
			}()
		}
		err := parallel(writers, func(w int) error {
			for r := range rounds {
				if err := e.s.Put(ctx, ns("race"), "k", doc("w", w, "r", r, "sum", w+r), store.PutOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
		close(stop)
		readers.Wait()
		for range 2 {
			if err := <-readErr; err != nil {
				t.Error(err)
			}
		}
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		it := e.get(t, ns("race"), "k")
		if it.Value["r"] != float64(rounds-1) {
			t.Errorf("after all writes Get = %v; want the last round (r %d) of some writer", it.Value, rounds-1)
		}
		wantTime(t, "CreatedAt", it.CreatedAt, start)
	}},
	{name: "ManyKeys", run: func(t *testing.T, e *env) {
		err := parallel(writers, func(w int) error {
			for r := range rounds {
				space := ns("w", fmt.Sprint(w))
				if err := e.s.Put(ctx, space, fmt.Sprint(r), doc("w", w, "r", r), store.PutOptions{}); err != nil {
					return err
				}
				if r%4 == 3 { // delete every fourth item again
					if err := e.s.Delete(ctx, space, fmt.Sprint(r)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		all := e.search(t, nil, store.SearchOptions{Limit: writers * rounds})
		if want := writers * rounds * 3 / 4; len(all) != want {
			t.Errorf("Search found %d items; want %d", len(all), want)
		}
		for w := range writers {
			got := e.search(t, ns("w", fmt.Sprint(w)), store.SearchOptions{Limit: rounds, Filter: doc("w", w)})
			if len(got) != rounds*3/4 {
				t.Errorf("writer %d: Search found %d items; want %d", w, len(got), rounds*3/4)
			}
		}
		if got := e.list(t, store.NamespaceOptions{}); len(got) != writers {
			t.Errorf("ListNamespaces = %q; want %d namespaces", got, writers)
		}
	}},
	{name: "ReadersAndSweeps", ttl: store.TTLConfig{SweepInterval: time.Second}, run: func(t *testing.T, e *env) {
		// Writers put items that expire, readers search, list and refresh
		// them, and the clock moves under all of them so the sweeper runs.
		stop := make(chan struct{})
		ticker := make(chan error, 1)
		go func() {
			defer close(ticker)
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.clock.Advance(100 * time.Millisecond)
				if sw, ok := e.s.(store.Sweeper); ok {
					if _, err := sw.Sweep(ctx); err != nil {
						ticker <- err
						return
					}
				}
			}
		}()
		err := parallel(writers, func(w int) error {
			space := ns("m", fmt.Sprint(w%3))
			for r := range rounds {
				key := fmt.Sprintf("%d-%d", w, r)
				var err error
				switch r % 4 {
				case 0, 1:
					err = e.s.Put(ctx, space, key, doc("w", w), store.PutOptions{TTL: time.Duration(r%3+1) * 200 * time.Millisecond})
				case 2:
					_, err = e.s.Search(ctx, ns("m"), store.SearchOptions{Filter: doc("w", w), Limit: 5})
				case 3:
					_, err = e.s.ListNamespaces(ctx, store.NamespaceOptions{MaxDepth: 2})
					if err == nil {
						_, err = e.s.Get(ctx, space, fmt.Sprintf("%d-%d", w, r-3), store.GetOptions{})
						if errors.Is(err, store.ErrNotFound) {
							err = nil
						}
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		close(stop)
		if err := <-ticker; err != nil {
			t.Errorf("Sweep: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		if got := e.search(t, nil, store.SearchOptions{}); len(got) != 0 {
			t.Errorf("after every TTL passed Search found %q; want nothing", paths(got))
		}
	}},
	{name: "Close", run: func(t *testing.T, e *env) {
		c, ok := e.s.(io.Closer)
		if !ok {
			t.Skipf("%T does not implement io.Closer", e.s)
		}
		e.putTTL(t, ns("m"), "k", doc(), time.Minute) // may start a sweeper
		for i := range 2 {
			if err := c.Close(); err != nil {
				t.Fatalf("Close #%d: %v", i+1, err)
			}
		}
		wantErr(t, "Put after Close", e.s.Put(ctx, ns("m"), "k", doc(), store.PutOptions{}), store.ErrClosed)
		_, err := e.s.Get(ctx, ns("m"), "k", store.GetOptions{})
		wantErr(t, "Get after Close", err, store.ErrClosed)
		wantErr(t, "Delete after Close", e.s.Delete(ctx, ns("m"), "k"), store.ErrClosed)
		_, err = e.s.Search(ctx, nil, store.SearchOptions{})
		wantErr(t, "Search after Close", err, store.ErrClosed)
		_, err = e.s.ListNamespaces(ctx, store.NamespaceOptions{})
		wantErr(t, "ListNamespaces after Close", err, store.ErrClosed)
		if sw, ok := e.s.(store.Sweeper); ok {
			_, err = sw.Sweep(ctx)
			wantErr(t, "Sweep after Close", err, store.ErrClosed)
		}
	}},
}

var contextTests = []test{
	{name: "Cancelled", run: func(t *testing.T, e *env) {
		e.put(t, ns("m"), "k", doc("v", 1))
		done, cancel := context.WithCancel(ctx)
		cancel()
		wantErr(t, "Put", e.s.Put(done, ns("m"), "new", doc(), store.PutOptions{}), context.Canceled)
		e.wantNotFound(t, ns("m"), "new")
		wantErr(t, "Put over an item", e.s.Put(done, ns("m"), "k", doc("v", 2), store.PutOptions{}), context.Canceled)
		_, err := e.s.Get(done, ns("m"), "k", store.GetOptions{})
		wantErr(t, "Get", err, context.Canceled)
		wantErr(t, "Delete", e.s.Delete(done, ns("m"), "k"), context.Canceled)
		_, err = e.s.Search(done, nil, store.SearchOptions{})
		wantErr(t, "Search", err, context.Canceled)
		_, err = e.s.ListNamespaces(done, store.NamespaceOptions{})
		wantErr(t, "ListNamespaces", err, context.Canceled)
		if sw, ok := e.s.(store.Sweeper); ok {
			_, err = sw.Sweep(done)
			wantErr(t, "Sweep", err, context.Canceled)
		}
		if it := e.get(t, ns("m"), "k"); it.Value["v"] != 1.0 {
			t.Errorf("after calls with a cancelled context Get = %v; want v 1 unchanged", it.Value)
		}
	}},
	{name: "DeadlineDuringScan", run: func(t *testing.T, e *env) {
		e.putMany(t, 600, func(i int) ([]string, string, map[string]any, time.Duration) {
			return ns("m", fmt.Sprint(i%50)), fmt.Sprint(i), doc("i", i), 0
		})
		expired, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
		defer cancel()
		_, err := e.s.Search(expired, nil, store.SearchOptions{Filter: doc("i", doc("$gte", 0))})
		wantErr(t, "Search past its deadline", err, context.DeadlineExceeded)
		_, err = e.s.ListNamespaces(expired, store.NamespaceOptions{Suffix: ns("*")})
		wantErr(t, "ListNamespaces past its deadline", err, context.DeadlineExceeded)
	}},
}
