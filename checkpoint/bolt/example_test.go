package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
)

func Example() {
	dir, err := os.MkdirTemp("", "threads")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "threads.db")

	saver, err := bolt.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	cfg, err := saver.Put(ctx, checkpoint.Config{ThreadID: "chat-1"}, &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: checkpoint.NewID(), Full: true,
		Values: map[string][]byte{"messages": []byte(`["hi"]`)},
	}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
	if err != nil {
		log.Fatal(err)
	}
	// The file stays locked while it is open.
	_, err = bolt.Open(path, bolt.WithTimeout(10e6))
	fmt.Println(errors.Is(err, bolt.ErrLocked))
	saver.Close()

	// A later process finds the thread where it was left.
	saver, err = bolt.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer saver.Close()
	latest, err := saver.Get(ctx, checkpoint.Config{ThreadID: "chat-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(latest.Config == cfg, string(latest.Checkpoint.Values["messages"]))
	// Output:
	// true
	// true ["hi"]
}
