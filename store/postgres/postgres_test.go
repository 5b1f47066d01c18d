package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/pgtest"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/postgres"
	"github.com/agentgraph/agentgraph/store/storetest"
)

var ctx = context.Background()

func newPool(tb testing.TB, url string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

func newStore(tb testing.TB, pool *pgxpool.Pool, opts ...postgres.Option) *postgres.Store {
	tb.Helper()
	s, err := postgres.New(ctx, pool, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgtest.Start(t).NewDatabase(t), 8)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) store.Store {
		// A schema per subtest: every store starts empty.
		return newStore(t, pool, postgres.WithSchema(fmt.Sprintf("conformance_%d", n.Add(1))),
			postgres.WithClock(cfg.Clock), postgres.WithTTL(cfg.TTL))
	})
}

// TestShared: two Stores on their own pools stand for two processes; what
// one puts the other reads, and a migration run by both at once runs once.
func TestShared(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t).NewDatabase(t)
	const n = 4
	stores := make([]*postgres.Store, n)
	var wg sync.WaitGroup
	for i := range stores {
		pool := newPool(t, url, 2)
		wg.Go(func() {
			s, err := postgres.New(ctx, pool)
			if err != nil {
				t.Error(err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if t.Failed() {
		return
	}
	if err := stores[0].Put(ctx, []string{"users", "u1"}, "prefs", map[string]any{"tea": true}, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := stores[1].Get(ctx, []string{"users", "u1"}, "prefs", store.GetOptions{})
	if err != nil || it.Value["tea"] != true {
		t.Fatalf("Get from another Store = %v, %v; want the item put by the first", it, err)
	}
	var got []int
	rows, err := newPool(t, url, 1).Query(ctx, `SELECT v FROM agentgraph_store_migrations ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		rows.Scan(&v)
		got = append(got, v)
	}
	if rows.Err() != nil || !slices.Equal(got, []int{1}) {
		t.Fatalf("migrations recorded %v (%v); want [1]", got, rows.Err())
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgtest.Start(t).NewDatabase(t), 2)
	if err := postgres.Migrate(ctx, pool, postgres.WithSchema("app")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO app.agentgraph_store_migrations (v) VALUES ($1)`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.New(ctx, pool, postgres.WithSchema("app")); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("New on a database a newer version migrated: %v, want ErrSchemaTooNew", err)
	}
}
