package postgres_test

import (
	"context"
	"errors"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// A Saver shared by every process of a deployment. It needs a server, so
// this example is compiled but not run.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")) // postgres://user:pass@host/db
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// New creates or migrates the tables; any number of processes may
	// start at once.
	saver, err := postgres.New(ctx, pool, postgres.WithLeaseTTL(postgres.DefaultLeaseTTL))
	if err != nil {
		log.Fatal(err)
	}
	defer saver.Close()

	// The graph takes the thread's lease for each run (checkpoint.ThreadLocker):
	// a second run on the thread, in any process, gets ErrThreadBusy.
	unlock, err := saver.TryLock("chat-1")
	if errors.Is(err, checkpoint.ErrThreadBusy) {
		log.Print("chat-1 is running elsewhere")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer unlock()
	_, err = saver.Put(ctx, checkpoint.Config{ThreadID: "chat-1"}, &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: checkpoint.NewID(), Full: true,
		Values: map[string][]byte{"messages": []byte(`["hi"]`)},
	}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
	if errors.Is(err, postgres.ErrLeaseLost) {
		// This process stalled past its lease and another took the thread:
		// stop the run; the other holder's writes stand.
		return
	}
	if err != nil {
		log.Fatal(err)
	}
}
