package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/pgmigrate"
)

// SchemaVersion is the version of the tables this package reads and
// writes: the number of migrations it knows.
const SchemaVersion = 1

// migrations are applied in order, each once; a database records the ones
// it has in agentgraph_checkpoint_migrations. Never edit one that has been
// released: append another.
var migrations = [SchemaVersion]string{
	// 1: checkpoints, their pending writes, thread leases.
	`CREATE TABLE {cp} (
		thread_id  text COLLATE "C" NOT NULL,
		ns         text COLLATE "C" NOT NULL,
		id         text COLLATE "C" NOT NULL,
		parent_id  text COLLATE "C" NOT NULL,
		ts         timestamptz NOT NULL,
		full_state boolean NOT NULL,
		step       integer NOT NULL,
		filter     jsonb NOT NULL,
		metadata   bytea NOT NULL,
		checkpoint bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, id)
	);
	CREATE TABLE {w} (
		thread_id     text COLLATE "C" NOT NULL,
		ns            text COLLATE "C" NOT NULL,
		checkpoint_id text COLLATE "C" NOT NULL,
		task_id       text COLLATE "C" NOT NULL,
		wkey          text COLLATE "C" NOT NULL,
		rec           bytea NOT NULL,
		PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, wkey),
		FOREIGN KEY (thread_id, ns, checkpoint_id) REFERENCES {cp} (thread_id, ns, id) ON DELETE CASCADE
	);
	CREATE SEQUENCE {tokens};
	CREATE TABLE {l} (
		thread_id   text COLLATE "C" PRIMARY KEY,
		token       bigint NOT NULL,
		holder      text NOT NULL,
		acquired_at timestamptz NOT NULL,
		expires_at  timestamptz NOT NULL
	);`,
}

// Migrate creates the Saver's tables in pool's database, or brings them up
// to SchemaVersion, and returns once they are ready; New calls it. Several
// processes may run it at once: a transaction-scoped advisory lock lets one
// migrate while the others wait, then find nothing left to do. Of the
// options, only WithSchema matters here. It returns an error wrapping
// ErrSchemaTooNew when a newer version of this package migrated the
// database.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	return migrate(ctx, pool, buildOptions(opts))
}

func migrate(ctx context.Context, pool *pgxpool.Pool, o options) error {
	t := newTables(o.schema)
	r := strings.NewReplacer("{cp}", t.checkpoints, "{w}", t.writes, "{l}", t.leases, "{tokens}", t.tokens)
	err := pgmigrate.Run(ctx, pool, pgmigrate.Plan{
		Lock: "agentgraph/checkpoint/postgres:" + o.schema, Schema: o.schema, Table: t.migrations,
		Steps: pgmigrate.Expand(migrations[:], r.Replace), TooNew: ErrSchemaTooNew,
	})
	if err != nil && !errors.Is(err, ErrSchemaTooNew) {
		return fmt.Errorf("checkpoint/postgres: creating or migrating the tables: %w", err)
	}
	return err
}
