package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/internal/pgtest"
)

func TestStartAndNewDatabase(t *testing.T) {
	s := pgtest.Start(t)
	ctx := context.Background()
	var dirs []string
	for range 2 {
		u := s.NewDatabase(t)
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var db string
		var n int
		err = conn.QueryRow(ctx, "SELECT current_database(), count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&db, &n)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("new database %s has %d tables, want 0", db, n)
		}
		dirs = append(dirs, db)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("two NewDatabase calls gave the same database %q", dirs[0])
	}
}

func TestStopRemovesEverything(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skipf("%s names a server this test does not own", pgtest.EnvURL)
	}
	var url string
	t.Run("server", func(t *testing.T) {
		url = pgtest.Start(t).URL
	})
	// The subtest's cleanup stopped the server: nothing answers any more.
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatalf("server at %s still answers after its test ended", url)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.Host); !os.IsNotExist(err) {
		t.Fatalf("server directory %s still there after its test ended: %v", cfg.Host, err)
	}
}
