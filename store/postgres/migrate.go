package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/pgmigrate"
)

// SchemaVersion is the version of the table this package reads and writes:
// the number of migrations it knows.
const SchemaVersion = 1

// ErrSchemaTooNew reports a database whose table a newer version of this
// package migrated; this version cannot use it.
var ErrSchemaTooNew = errors.New("store/postgres: database schema is newer than this package")

// migrations are applied in order, each once, recorded in
// agentgraph_store_migrations. Never edit a released one: append another.
var migrations = [SchemaVersion]string{
	// 1: items. ns is the namespace encoded by encodeNamespace; value is
	// the JSON document; ttl_us is the item's TTL in microseconds, 0 for
	// none; expires_at is NULL when it never expires.
	`CREATE TABLE {items} (
		ns         bytea NOT NULL,
		key        bytea NOT NULL,
		value      bytea NOT NULL,
		created_at timestamptz NOT NULL,
		updated_at timestamptz NOT NULL,
		ttl_us     bigint NOT NULL,
		expires_at timestamptz,
		PRIMARY KEY (ns, key)
	);
	CREATE INDEX {items_expiry} ON {items} (expires_at) WHERE expires_at IS NOT NULL;`,
}

// Migrate creates the Store's table in pool's database, or brings it up to
// SchemaVersion; New calls it. Several processes may run it at once: a
// transaction-scoped advisory lock lets one migrate while the others wait.
// Of the options, only WithSchema matters here.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	return migrate(ctx, pool, buildOptions(opts))
}

func migrate(ctx context.Context, pool *pgxpool.Pool, o options) error {
	t := newTables(o.schema)
	r := strings.NewReplacer("{items}", t.items, "{items_expiry}", pgx.Identifier{"agentgraph_store_items_expiry"}.Sanitize())
	err := pgmigrate.Run(ctx, pool, pgmigrate.Plan{
		Lock: "agentgraph/store/postgres:" + o.schema, Schema: o.schema, Table: t.migrations,
		Steps: pgmigrate.Expand(migrations[:], r.Replace), TooNew: ErrSchemaTooNew,
	})
	if err != nil && !errors.Is(err, ErrSchemaTooNew) {
		return fmt.Errorf("store/postgres: creating or migrating the table: %w", err)
	}
	return err
}
