package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/store"
	storebolt "github.com/agentgraph/agentgraph/store/bolt"
	storepg "github.com/agentgraph/agentgraph/store/postgres"
)

// backend is where threads, the server's records and the store live: bbolt
// files beside -db, or the database of -postgres.
type backend struct {
	saver checkpoint.Saver
	store store.Store
	opts  []server.Option
	where string // for the log
	close func()
}

func openBackend(ctx context.Context, f flags) (*backend, error) {
	if f.postgres == "" {
		if f.workerOnly {
			return nil, errors.New("-worker-only needs -postgres: without a shared database there is no one to take runs from")
		}
		return openBolt(f)
	}
	pool, err := pgxpool.New(ctx, f.postgres)
	if err != nil {
		return nil, fmt.Errorf("-postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("-postgres: connect to %s: %w", redact(f.postgres), err)
	}
	saver, err := pgsaver.New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	st, err := storepg.New(ctx, pool)
	if err != nil {
		saver.Close()
		pool.Close()
		return nil, err
	}
	b := &backend{saver: saver, store: st, where: redact(f.postgres)}
	b.opts = []server.Option{server.WithPostgres(pool, server.PostgresConfig{RunTimeout: f.runTimeout})}
	b.close = func() {
		st.Close()
		saver.Close()
		pool.Close()
	}
	return b, nil
}

func openBolt(f flags) (*backend, error) {
	saver, err := bolt.Open(f.db)
	if err != nil {
		return nil, fmt.Errorf("open thread file: %w", err)
	}
	st, err := storebolt.Open(f.db + ".store")
	if err != nil {
		saver.Close()
		return nil, fmt.Errorf("open store file: %w", err)
	}
	return &backend{saver: saver, store: st, where: f.db,
		opts: []server.Option{server.WithStateFile(f.db + ".server")},
		close: func() {
			st.Close()
			saver.Close()
		}}, nil
}

// redact hides the password of a connection URL.
func redact(conn string) string {
	u, err := url.Parse(conn)
	if err != nil || u.User == nil {
		return conn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// healthOnly answers GET /ok and nothing else: a worker serves no API.
func healthOnly() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	return mux
}
