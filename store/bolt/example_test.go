package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/bolt"
	"github.com/agentgraph/agentgraph/store/storetest"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "memories")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memories.db")
	ctx := context.Background()

	s, err := bolt.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	err = s.Put(ctx, []string{"memories", "ada"}, "tea", map[string]any{"likes": "green"}, store.PutOptions{})
	if err != nil {
		log.Fatal(err)
	}
	s.Close()

	// A later process finds the memory where it was left.
	s, err = bolt.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	it, err := s.Get(ctx, []string{"memories", "ada"}, "tea", store.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.Value["likes"], filepath.Base(s.Path()))
	// Output: green memories.db
}

// New keeps the store in a bucket of its own in a database the caller has
// open, beside whatever else the file holds.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := bbolt.Open(filepath.Join(dir, "agent.db"), 0o600, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("mine"))
		return err
	}); err != nil {
		log.Fatal(err)
	}

	s, err := bolt.New(db)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close() // before db.Close: defers run last first
	ctx := context.Background()
	if err := s.Put(ctx, []string{"memories"}, "k", map[string]any{"v": 1}, store.PutOptions{}); err != nil {
		log.Fatal(err)
	}
	_ = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			fmt.Println(string(name))
			return nil
		})
	})
	// Output:
	// agentgraph.store
	// mine
}

func ExampleWithTimeout() {
	dir, err := os.MkdirTemp("", "memories")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memories.db")
	s, err := bolt.Open(path, bolt.WithoutSync())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	_, err = bolt.Open(path, bolt.WithTimeout(10*time.Millisecond))
	fmt.Println(errors.Is(err, bolt.ErrLocked))
	// Output: true
}

// Expired items are gone at once; Sweep, or the background sweep every
// TTLConfig.SweepInterval, deletes them from the file.
func ExampleStore_Sweep() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clock := storetest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s, err := bolt.Open(filepath.Join(dir, "sessions.db"), bolt.WithoutSync(), bolt.WithClock(clock),
		bolt.WithTTL(store.TTLConfig{Default: 30 * time.Minute, SweepInterval: -1}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, k := range []string{"s1", "s2"} {
		if err := s.Put(ctx, []string{"sessions"}, k, map[string]any{}, store.PutOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	clock.Advance(20 * time.Minute)
	_, _ = s.Get(ctx, []string{"sessions"}, "s2", store.GetOptions{}) // refreshed until 12:50
	clock.Advance(10 * time.Minute)

	left, _ := s.Search(ctx, []string{"sessions"}, store.SearchOptions{RefreshTTL: store.RefreshOff})
	fmt.Println(len(left), left[0].Key, left[0].ExpiresAt.Format("15:04"))
	n, err := s.Sweep(ctx)
	fmt.Println("swept", n, err)
	// Output:
	// 1 s2 12:50
	// swept 1 <nil>
}
