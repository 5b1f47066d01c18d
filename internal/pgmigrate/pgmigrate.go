// Package pgmigrate applies the versioned schema migrations of the
// project's PostgreSQL packages: each step once, in order, recorded in a
// table of its own, under an advisory lock so that several processes may
// start at once.
package pgmigrate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Plan is one package's migrations.
type Plan struct {
	// Lock names the advisory lock taken for the migration (hashed to a
	// key); a rare collision only serialises two unrelated migrations.
	Lock string
	// Schema, when set, is created if missing.
	Schema string
	// Table is the sanitized name of the table recording applied versions.
	Table string
	// Steps are the migrations' SQL, oldest first. Never edit a released
	// one: append another.
	Steps []string
	// TooNew is wrapped in the error for a database a newer version of
	// the package migrated.
	TooNew error
}

// Run brings pool's database up to len(p.Steps), in one transaction.
func Run(ctx context.Context, pool *pgxpool.Pool, p Plan) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, p.Lock); err != nil {
			return err
		}
		if p.Schema != "" {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{p.Schema}.Sanitize()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+p.Table+` (
			v          integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(v), 0) FROM `+p.Table).Scan(&have); err != nil {
			return err
		}
		if have > len(p.Steps) {
			return fmt.Errorf("%w: the database is at version %d, this package knows %d; upgrade agentgraph", p.TooNew, have, len(p.Steps))
		}
		for v := have + 1; v <= len(p.Steps); v++ {
			if _, err := tx.Exec(ctx, p.Steps[v-1]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+p.Table+` (v) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// Expand returns steps with each placeholder replaced by r.
func Expand(steps []string, replace func(string) string) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = replace(s)
	}
	return out
}
