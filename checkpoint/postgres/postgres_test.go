package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgtest"
)

var ctx = context.Background()

// database starts a server (or uses $AGENTGRAPH_TEST_POSTGRES) and returns
// the URL of a new database on it, both gone when tb ends.
func database(tb testing.TB, opts ...pgtest.Option) string {
	tb.Helper()
	return pgtest.Start(tb, opts...).NewDatabase(tb)
}

func newPool(tb testing.TB, url string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

func newSaver(tb testing.TB, pool *pgxpool.Pool, opts ...postgres.Option) *postgres.Saver {
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
	pool := newPool(t, database(t), 8)
	var n atomic.Int64
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		// A schema per subtest: every saver starts empty.
		return newSaver(t, pool, postgres.WithSchema(fmt.Sprintf("conformance_%d", n.Add(1))))
	})
}

// TestLockAcrossPools: two Savers on their own pools stand for two
// processes; a thread one holds is busy for the other until unlocked.
func TestLockAcrossPools(t *testing.T) {
	t.Parallel()
	url := database(t)
	a := newSaver(t, newPool(t, url, 2))
	b := newSaver(t, newPool(t, url, 2))
	unlockA, err := a.TryLock("t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("TryLock from another pool while held: %v, want an error wrapping ErrThreadBusy", err)
	}
	unlockB2, err := b.TryLock("t2")
	if err != nil {
		t.Fatalf("TryLock of another thread: %v", err)
	}
	unlockB2()
	unlockA()
	unlockB, err := b.TryLock("t1")
	if err != nil {
		t.Fatalf("TryLock after the holder unlocked: %v", err)
	}
	unlockA() // repeated: must not release b's lease
	if _, err := a.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("a repeated unlock released another holder's lease: TryLock = %v", err)
	}
	unlockB()
}

// TestLockRace: many Savers on many pools race for one thread; exactly one
// wins.
func TestLockRace(t *testing.T) {
	t.Parallel()
	url := database(t)
	const n = 6
	savers := make([]*postgres.Saver, n)
	for i := range savers {
		savers[i] = newSaver(t, newPool(t, url, 1))
	}
	var wins atomic.Int64
	unlocks := make([]func(), n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range savers {
		wg.Go(func() {
			<-start
			u, err := s.TryLock("contended")
			switch {
			case err == nil:
				wins.Add(1)
				unlocks[i] = u
			case !errors.Is(err, checkpoint.ErrThreadBusy):
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of %d Savers took the thread, want 1", wins.Load(), n)
	}
	for _, u := range unlocks {
		if u != nil {
			u()
		}
	}
}

// TestLeaseRenewed: a live holder keeps its lease well past the TTL.
func TestLeaseRenewed(t *testing.T) {
	t.Parallel()
	url := database(t)
	const ttl = 2 * time.Second
	a := newSaver(t, newPool(t, url, 2), postgres.WithLeaseTTL(ttl))
	b := newSaver(t, newPool(t, url, 2), postgres.WithLeaseTTL(ttl))
	unlock, err := a.TryLock("t1")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for range 3 {
		time.Sleep(ttl / 2)
		if _, err := b.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
			t.Fatalf("TryLock while the holder is alive and renewing: %v, want ErrThreadBusy", err)
		}
	}
}

// TestLeaseExpiresWhenHolderDies: a process holding a lease is killed with
// SIGKILL; once its lease expires another process takes the thread.
func TestLeaseExpiresWhenHolderDies(t *testing.T) {
	t.Parallel()
	url := database(t)
	const ttl = time.Second
	child := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLease$", "-test.count=1")
	child.Env = append(os.Environ(), "PGTEST_HOLD_URL="+url, fmt.Sprintf("PGTEST_HOLD_TTL=%d", ttl.Milliseconds()))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper process said %q, %v; want locked", line, err)
	}
	s := newSaver(t, newPool(t, url, 2), postgres.WithLeaseTTL(ttl))
	if _, err := s.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("TryLock while another process holds the lease: %v, want ErrThreadBusy", err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killed := time.Now()
	for {
		unlock, err := s.TryLock("t1")
		if err == nil {
			unlock()
			break
		}
		if !errors.Is(err, checkpoint.ErrThreadBusy) {
			t.Fatal(err)
		}
		if time.Since(killed) > 3*ttl {
			t.Fatalf("the lease of a killed process still holds the thread %v after the kill (TTL %v)", time.Since(killed), ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHelperHoldLease is the process TestLeaseExpiresWhenHolderDies kills.
func TestHelperHoldLease(t *testing.T) {
	url := os.Getenv("PGTEST_HOLD_URL")
	if url == "" {
		t.Skip("run by TestLeaseExpiresWhenHolderDies")
	}
	var ms int64
	fmt.Sscan(os.Getenv("PGTEST_HOLD_TTL"), &ms)
	s := newSaver(t, newPool(t, url, 2), postgres.WithLeaseTTL(time.Duration(ms)*time.Millisecond))
	if _, err := s.TryLock("t1"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute) // until killed
}

// TestFencing: a holder whose lease expired and was taken over can no
// longer write to the thread, though it still believes it holds it.
func TestFencing(t *testing.T) {
	t.Parallel()
	url := database(t)
	pool := newPool(t, url, 4)
	stale := newSaver(t, newPool(t, url, 2))
	fresh := newSaver(t, newPool(t, url, 2))
	unlockStale, err := stale.TryLock("t1")
	if err != nil {
		t.Fatal(err)
	}
	first, err := stale.Put(ctx, checkpoint.Config{ThreadID: "t1"}, &checkpoint.Checkpoint{ID: checkpoint.NewID(), Full: true}, checkpoint.Metadata{Step: 0})
	if err != nil {
		t.Fatalf("Put by the lease holder: %v", err)
	}
	// The holder stalls past its lease (a long pause, a partition): its
	// lease expires without it noticing.
	if _, err := pool.Exec(ctx, `UPDATE agentgraph_thread_leases SET expires_at = now() - interval '1 second' WHERE thread_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	unlockFresh, err := fresh.TryLock("t1")
	if err != nil {
		t.Fatalf("TryLock of a thread whose lease expired: %v", err)
	}
	defer unlockFresh()

	_, err = stale.Put(ctx, first, &checkpoint.Checkpoint{ID: checkpoint.NewID()}, checkpoint.Metadata{Step: 1})
	if !errors.Is(err, postgres.ErrLeaseLost) || !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("Put by a holder whose lease was taken over: %v, want ErrLeaseLost and ErrThreadBusy", err)
	}
	err = stale.PutWrites(ctx, first, "task", []checkpoint.PendingWrite{{Channel: "ch", Value: []byte("late")}})
	if !errors.Is(err, postgres.ErrLeaseLost) {
		t.Fatalf("PutWrites by a holder whose lease was taken over: %v, want ErrLeaseLost", err)
	}
	second, err := fresh.Put(ctx, first, &checkpoint.Checkpoint{ID: checkpoint.NewID()}, checkpoint.Metadata{Step: 1})
	if err != nil {
		t.Fatalf("Put by the new holder: %v", err)
	}
	if err := fresh.PutWrites(ctx, second, "task", []checkpoint.PendingWrite{{Channel: "ch", Value: []byte("v")}}); err != nil {
		t.Fatalf("PutWrites by the new holder: %v", err)
	}
	tp, err := fresh.Get(ctx, checkpoint.Config{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if tp.Config != second || len(tp.PendingWrites) != 1 || string(tp.PendingWrites[0].Value) != "v" {
		t.Fatalf("latest %+v with writes %v; want the new holder's %+v and its one write", tp.Config, tp.PendingWrites, second)
	}
	if tp, _ := fresh.Get(ctx, first); len(tp.PendingWrites) != 0 {
		t.Fatalf("the stale holder's refused write was stored: %v", tp.PendingWrites)
	}
	// The stale holder's unlock leaves the new lease alone.
	unlockStale()
	if _, err := stale.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("after the stale holder unlocked, TryLock = %v; want the new holder's lease kept", err)
	}
	// Writes without a lease are not fenced.
	if _, err := stale.Put(ctx, checkpoint.Config{ThreadID: "t2"}, &checkpoint.Checkpoint{}, checkpoint.Metadata{}); err != nil {
		t.Fatalf("Put to a thread no one holds: %v", err)
	}
}

// TestMigrateConcurrently: many processes start at once on an empty
// database; each migration runs exactly once and every one of them ends
// with a usable Saver.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := database(t)
	const n = 8
	pools := make([]*pgxpool.Pool, n)
	for i := range pools {
		pools[i] = newPool(t, url, 1)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() {
			<-start
			s, err := postgres.New(ctx, pool)
			if err != nil {
				t.Errorf("New %d: %v", i, err)
				return
			}
			defer s.Close()
			if _, err := s.Put(ctx, checkpoint.Config{ThreadID: fmt.Sprint("t", i)}, &checkpoint.Checkpoint{}, checkpoint.Metadata{}); err != nil {
				t.Errorf("Put %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	rows, err := pools[0].Query(ctx, `SELECT v FROM agentgraph_checkpoint_migrations ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var want []int
	for v := 1; v <= postgres.SchemaVersion; v++ {
		want = append(want, v)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("migrations recorded %v, want %v", got, want)
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	pool := newPool(t, database(t), 2)
	if err := postgres.Migrate(ctx, pool, postgres.WithSchema("app")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO app.agentgraph_checkpoint_migrations (v) VALUES ($1)`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.New(ctx, pool, postgres.WithSchema("app")); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("New on a database a newer version migrated: %v, want ErrSchemaTooNew", err)
	}
	// Another schema is another set of tables.
	newSaver(t, pool, postgres.WithSchema("other"))
}

func TestClose(t *testing.T) {
	t.Parallel()
	url := database(t)
	a := newSaver(t, newPool(t, url, 2))
	b := newSaver(t, newPool(t, url, 2))
	if _, err := a.TryLock("t1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TryLock("t2"); !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("TryLock after Close: %v, want ErrClosed", err)
	}
	// Close released the lease: another process takes the thread at once.
	unlock, err := b.TryLock("t1")
	if err != nil {
		t.Fatalf("TryLock after the holder closed: %v", err)
	}
	unlock()
}

// TestStatementsArePrepared: the Saver's statements are prepared once per
// connection and then executed with parameters.
func TestStatementsArePrepared(t *testing.T) {
	t.Parallel()
	pool := newPool(t, database(t), 1)
	s := newSaver(t, pool)
	cfg, err := s.Put(ctx, checkpoint.Config{ThreadID: "t1"}, &checkpoint.Checkpoint{}, checkpoint.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.PutWrites(ctx, cfg, "task", []checkpoint.PendingWrite{{Channel: "ch"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		for _, err := range s.List(ctx, checkpoint.Config{ThreadID: "t1"}, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// One connection: the one that ran everything above.
	var n int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements
		WHERE statement LIKE '%agentgraph_checkpoints%' OR statement LIKE '%agentgraph_writes%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 { // put, putWrites, getByID, listFirst
		t.Fatalf("%d of the Saver's statements are prepared on its connection; want at least 4", n)
	}
}
