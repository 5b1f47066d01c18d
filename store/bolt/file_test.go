package bolt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agentgraph/agentgraph/checkpoint"
	cpbolt "github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/bolt"
	"github.com/agentgraph/agentgraph/store/storetest"
)

var ctx = context.Background()

// TestConformanceSync runs the suite with fsync on, as files are by default.
func TestConformanceSync(t *testing.T) {
	if testing.Short() {
		t.Skip("fsync per commit is slow; -short runs the suite without it only")
	}
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) store.Store {
		return open(t, bolt.WithClock(cfg.Clock), bolt.WithTTL(cfg.TTL))
	})
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	clock := storetest.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	s, err := bolt.Open(path, bolt.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []string{"users", "u1"}, "prefs", map[string]any{"theme": "dark"}, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []string{"users", "u1"}, "session", map[string]any{"id": 7}, store.PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(time.Minute)
	s, err = bolt.Open(path, bolt.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	it, err := s.Get(ctx, []string{"users", "u1"}, "prefs", store.GetOptions{})
	if err != nil || it.Value["theme"] != "dark" {
		t.Fatalf("Get after reopening = %v, %v; want theme dark", it, err)
	}
	if _, err := s.Get(ctx, []string{"users", "u1"}, "session", store.GetOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an item whose TTL passed while the file was closed: %v; want ErrNotFound", err)
	}
	// The expiry index survived too.
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep after reopening = %d, %v; want 1, nil", n, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("remember the milk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(text); !errors.Is(err, bolt.ErrNotBolt) {
		t.Errorf("Open of a text file: %v; want ErrNotBolt", err)
	}

	threads := filepath.Join(dir, "threads.db")
	saver, err := cpbolt.Open(threads)
	if err != nil {
		t.Fatal(err)
	}
	saver.Close()
	if _, err := bolt.Open(threads); !errors.Is(err, bolt.ErrIncompatible) {
		t.Errorf("Open of a checkpoint file: %v; want ErrIncompatible", err)
	}

	other := filepath.Join(dir, "other.db")
	db, err := bbolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("agentgraph.store"))
		if err != nil {
			return err
		}
		return b.Put([]byte("format"), []byte("agentgraph.store/0"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.New(db); !errors.Is(err, bolt.ErrIncompatible) {
		t.Errorf("New on a store bucket of another format: %v; want ErrIncompatible", err)
	}
	db.Close()
	if _, err := bolt.Open(other); !errors.Is(err, bolt.ErrIncompatible) {
		t.Errorf("Open of a store file of another format: %v; want ErrIncompatible", err)
	}

	path := filepath.Join(dir, "store.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := bolt.Open(path, bolt.WithTimeout(10*time.Millisecond)); !errors.Is(err, bolt.ErrLocked) {
		t.Errorf("second Open of an open file: %v; want ErrLocked", err)
	}
}

// TestShareWithCheckpoints keeps memories in the file that holds threads:
// each keeps to its own buckets, and the checkpoint saver opens the file
// afterwards as before.
func TestShareWithCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	saver, err := cpbolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := saver.Put(ctx, checkpoint.Config{ThreadID: "t1"}, &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: checkpoint.NewID(), Full: true,
		Values: map[string][]byte{"messages": []byte(`["hi"]`)},
	}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
	if err != nil {
		t.Fatal(err)
	}
	saver.Close()

	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bolt.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []string{"memories", "ada"}, "tea", map[string]any{"likes": "green"}, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close left the caller's DB open.
	if err := db.View(func(tx *bbolt.Tx) error { return nil }); err != nil {
		t.Fatalf("the DB after the Store's Close: %v", err)
	}
	s, err = bolt.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, []string{"memories", "ada"}, "tea", store.GetOptions{}); err != nil || it.Value["likes"] != "green" {
		t.Fatalf("Get from a second Store on the DB = %v, %v", it, err)
	}
	s.Close()
	db.Close()

	saver, err = cpbolt.Open(path)
	if err != nil {
		t.Fatalf("checkpoint Open of the shared file: %v", err)
	}
	defer saver.Close()
	tp, err := saver.Get(ctx, checkpoint.Config{ThreadID: "t1"})
	if err != nil || tp.Config != cfg {
		t.Fatalf("checkpoint Get from the shared file = %v, %v", tp, err)
	}
}

func TestNewReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := bolt.New(db); err == nil {
		t.Fatal("New on a read-only DB succeeded; want an error")
	}
}

// TestSweepBesideReader sweeps while a read transaction stays open, and
// reads while the sweep's transactions run.
func TestSweepBesideReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	// bbolt remaps a growing file under a lock that waits for every open
	// read transaction; an initial map larger than the file can grow here
	// keeps this test about the store, not about bbolt's remap.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, InitialMmapSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := storetest.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	s, err := bolt.New(db, bolt.WithClock(clock), bolt.WithTTL(store.TTLConfig{SweepInterval: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n, writers = 2500, 8 // more than one sweep commit deletes
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := w; i < n; i += writers {
				if err := s.Put(ctx, []string{"m"}, string(rune(0x4e00+i)), map[string]any{"i": i}, store.PutOptions{TTL: time.Minute}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, []string{"m"}, "keep", map[string]any{}, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)

	inView, release, viewDone := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		viewDone <- db.View(func(tx *bbolt.Tx) error {
			close(inView)
			<-release
			return nil
		})
	}()
	<-inView
	swept := make(chan error)
	go func() {
		got, err := s.Sweep(ctx)
		if err == nil && got != n {
			err = errors.New("swept a wrong number of items")
		}
		swept <- err
	}()
	for range 20 {
		if _, err := s.Get(ctx, []string{"m"}, "keep", store.GetOptions{}); err != nil {
			t.Fatalf("Get during the sweep: %v", err)
		}
	}
	if err := <-swept; err != nil {
		t.Fatalf("Sweep with a read transaction open: %v", err)
	}
	close(release)
	if err := <-viewDone; err != nil {
		t.Fatal(err)
	}
}
