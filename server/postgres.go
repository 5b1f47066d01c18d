package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// PostgresConfig tunes WithPostgres. The zero value is ready to use.
type PostgresConfig struct {
	// RunTimeout bounds how long one run may take; a run still going after
	// it is cancelled and ends in error. It also sets how soon a run whose
	// process died is taken up by another: RunTimeout plus RescueMargin
	// after it started. Default 10 minutes.
	RunTimeout time.Duration
	// RescueMargin is added to RunTimeout before River treats a running
	// job as abandoned by a dead process. Default 30 seconds; it should
	// exceed the thread lease TTL of the checkpoint saver.
	RescueMargin time.Duration
	// EventRetention is how long a finished run keeps its stream events
	// for clients that join late. Default 10 minutes.
	EventRetention time.Duration
	// Logger receives River's log; default: warnings and errors to stderr.
	Logger *slog.Logger
}

type postgresConfig struct {
	pool *pgxpool.Pool
	PostgresConfig
}

// WithPostgres keeps threads, runs and their stream events in PostgreSQL
// through pool and runs every run as a job of River, a job queue on the
// same database, so that any number of servers on one database share the
// work: a run created on one server is executed by whichever server's
// worker takes its job first, streams to its client from the server the
// client is connected to, and is cancelled from any of them. Runs of one
// thread still run one at a time, in the order they came, and the
// multitask strategies hold across servers.
//
// A server whose process dies in the middle of a run leaves the run's job
// to River, which gives it to another server once RunTimeout plus
// RescueMargin have passed since it started; that server continues the
// thread from its last checkpoint, so tasks whose writes were saved do not
// run again. For that, the graphs must be compiled with a saver every
// server shares (checkpoint/postgres), given also with WithSaver.
//
// New creates or migrates the tables (River's among them); several
// processes may do so at once. WithWorkers sets how many runs this server
// executes at once; WithStateFile is ignored. The caller closes pool after
// Shutdown.
func WithPostgres(pool *pgxpool.Pool, cfg PostgresConfig) Option {
	return func(c *config) error {
		if pool == nil {
			return errors.New("server: WithPostgres: nil pool")
		}
		if cfg.RunTimeout < 0 || cfg.RescueMargin < 0 || cfg.EventRetention < 0 {
			return errors.New("server: WithPostgres: durations must not be negative")
		}
		if cfg.RunTimeout == 0 {
			cfg.RunTimeout = 10 * time.Minute
		}
		if cfg.RescueMargin == 0 {
			cfg.RescueMargin = 30 * time.Second
		}
		if cfg.EventRetention == 0 {
			cfg.EventRetention = 10 * time.Minute
		}
		if cfg.Logger == nil {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		c.postgres = &postgresConfig{pool: pool, PostgresConfig: cfg}
		return nil
	}
}

// River's queue for runs, and the notification channels of run events and
// cancellations.
const (
	runQueue      = "agentgraph_runs"
	eventsChannel = "agentgraph_run_events"
	cancelChannel = "agentgraph_run_cancel"
)

// pgRuns is the PostgreSQL side of a server: its records, its River client,
// and the notifications it listens to.
type pgRuns struct {
	s     *Server
	cfg   *postgresConfig
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	drain chan struct{} // closed by shutdown: runs stop at their next step

	mu      sync.Mutex
	closing bool
	running map[string]context.CancelCauseFunc // runs this process executes
	subs    map[string]map[chan struct{}]bool  // per run, streams waiting for events

	stopListen context.CancelFunc
	listening  sync.WaitGroup
}

func openPGRuns(s *Server, cfg *postgresConfig) (*pgRuns, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := migratePG(ctx, cfg.pool); err != nil {
		return nil, err
	}
	p := &pgRuns{s: s, cfg: cfg, pool: cfg.pool, drain: make(chan struct{}),
		running: map[string]context.CancelCauseFunc{}, subs: map[string]map[chan struct{}]bool{}}
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{p: p})
	river.AddWorker(workers, &cleanWorker{p: p})
	rc, err := river.NewClient(riverpgxv5.New(cfg.pool), &river.Config{
		Queues:               map[string]river.QueueConfig{runQueue: {MaxWorkers: s.cfg.workers}},
		Workers:              workers,
		JobTimeout:           cfg.RunTimeout,
		RescueStuckJobsAfter: cfg.RunTimeout + cfg.RescueMargin,
		MaxAttempts:          10,
		FetchCooldown:        5 * time.Millisecond,
		FetchPollInterval:    500 * time.Millisecond,
		Logger:               cfg.Logger,
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return cleanArgs{}, &river.InsertOpts{Queue: runQueue} },
			&river.PeriodicJobOpts{RunOnStart: true})},
	})
	if err != nil {
		return nil, fmt.Errorf("server: River client: %w", err)
	}
	p.river = rc
	lctx, stop := context.WithCancel(context.Background())
	p.stopListen = stop
	p.listening.Add(1)
	go p.listen(lctx)
	// River stops when the context Start was given is done.
	if err := rc.Start(context.WithoutCancel(ctx)); err != nil {
		stop()
		p.listening.Wait()
		return nil, fmt.Errorf("server: start River: %w", err)
	}
	return p, nil
}

// migrateKey is the advisory lock that serialises migrations between
// processes starting at once.
const migrateKey = 0x61676773 // "aggs"

// The server's tables. A run's record and its thread's are JSON, as the
// wire shows them; the columns beside them are what queries select on.
var pgSchema = []string{
	`CREATE TABLE IF NOT EXISTS agentgraph_server_threads (
		thread_id text PRIMARY KEY,
		record    jsonb NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS agentgraph_server_runs (
		run_id      text PRIMARY KEY,
		thread_id   text NOT NULL,
		seq         bigint GENERATED ALWAYS AS IDENTITY,
		status      text NOT NULL,
		cancel      text NOT NULL DEFAULT '',
		attempt     integer NOT NULL DEFAULT 0,
		record      jsonb NOT NULL,
		result      jsonb,
		finished_at timestamptz
	)`,
	`CREATE INDEX IF NOT EXISTS agentgraph_server_runs_thread ON agentgraph_server_runs (thread_id, seq)`,
	`CREATE INDEX IF NOT EXISTS agentgraph_server_runs_finished ON agentgraph_server_runs (finished_at)`,
	`CREATE TABLE IF NOT EXISTS agentgraph_server_run_events (
		run_id text NOT NULL,
		seq    integer NOT NULL,
		event  text NOT NULL,
		data   bytea NOT NULL,
		PRIMARY KEY (run_id, seq)
	)`,
}

// migratePG brings River's tables and the server's up to date, one process
// at a time.
func migratePG(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("server: connect to PostgreSQL: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateKey)); err != nil {
		return fmt.Errorf("server: lock for migration: %w", err)
	}
	defer func() {
		// Were this to fail, the lock would go with the session.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateKey))
	}()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("server: River migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("server: migrate River's tables: %w", err)
	}
	for _, stmt := range pgSchema {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("server: create the server's tables: %w", err)
		}
	}
	return nil
}

// shutdown stops taking jobs, stops this process's runs at their next step
// boundary (they go back to River, for this or another server), and stops
// listening. Runs still in a step when ctx is done are cancelled.
func (p *pgRuns) shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	close(p.drain)
	err := p.river.Stop(ctx)
	if err != nil {
		// Cut the steps short; their runs are retried from their last
		// checkpoint.
		err = errors.Join(err, p.river.StopAndCancel(context.Background()))
	}
	p.stopListen()
	p.listening.Wait()
	return err
}

func (p *pgRuns) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// listen receives the notifications of run events and cancellations on a
// connection of its own, reconnecting when it drops, until ctx is done.
func (p *pgRuns) listen(ctx context.Context) {
	defer p.listening.Done()
	for ctx.Err() == nil {
		err := p.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		p.cfg.Logger.Warn("agentgraph: run notifications lost; reconnecting", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (p *pgRuns) listenOnce(ctx context.Context) error {
	pc, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // a listening connection is not given back to the pool
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+eventsChannel+"; LISTEN "+cancelChannel); err != nil {
		return err
	}
	// Anything sent while no one listened: every stream looks again.
	p.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case eventsChannel:
			p.wake(n.Payload)
		case cancelChannel:
			p.mu.Lock()
			cancel := p.running[n.Payload]
			p.mu.Unlock()
			if cancel != nil {
				cancel(errCancelled)
			}
		}
	}
}

// subscribe returns a channel that receives a value when run id may have
// new events; unsubscribe when done.
func (p *pgRuns) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	if p.subs[id] == nil {
		p.subs[id] = map[chan struct{}]bool{}
	}
	p.subs[id][ch] = true
	p.mu.Unlock()
	return ch, func() {
		p.mu.Lock()
		delete(p.subs[id], ch)
		if len(p.subs[id]) == 0 {
			delete(p.subs, id)
		}
		p.mu.Unlock()
	}
}

func (p *pgRuns) wake(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch := range p.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (p *pgRuns) wakeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.subs {
		for ch := range m {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
