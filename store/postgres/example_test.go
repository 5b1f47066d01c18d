package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/postgres"
)

// A Store that every process of a deployment shares. It needs a server, so
// this example is compiled but not run.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	memories, err := postgres.New(ctx, pool, postgres.WithTTL(store.TTLConfig{Default: 30 * 24 * time.Hour}))
	if err != nil {
		log.Fatal(err)
	}
	defer memories.Close()
	ns := []string{"users", "u42", "memories"}
	if err := memories.Put(ctx, ns, "tea", map[string]any{"likes": "green tea"}, store.PutOptions{}); err != nil {
		log.Fatal(err)
	}
	found, err := memories.Search(ctx, []string{"users", "u42"}, store.SearchOptions{Filter: map[string]any{"likes": "green tea"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range found {
		fmt.Println(it.Namespace, it.Key, it.Value["likes"])
	}
}
