package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// ErrLeaseLost reports a write refused because the thread's lease, which
// this Saver took with TryLock, expired and another holder took the thread:
// the run that wrote is stale and must stop. Errors wrapping it also wrap
// checkpoint.ErrThreadBusy.
var ErrLeaseLost = errors.New("checkpoint/postgres: thread lease lost to another holder")

// ErrSchemaTooNew reports a database whose tables a newer version of this
// package migrated; this version cannot use them.
var ErrSchemaTooNew = errors.New("checkpoint/postgres: database schema is newer than this package")

// Defaults of the options.
const (
	DefaultLeaseTTL = 30 * time.Second
	DefaultTimeout  = 10 * time.Second
)

// Option configures New and Migrate.
type Option func(*options)

type options struct {
	schema   string
	leaseTTL time.Duration
	timeout  time.Duration
}

// WithSchema keeps the tables in the named PostgreSQL schema, created if
// missing, instead of the first schema of the connection's search_path
// (usually public). Savers with different schemas share nothing.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithLeaseTTL sets how long a thread lease taken by TryLock lasts when its
// holder stops renewing it, as a crashed process does: after that, another
// process may take the thread, and the old holder's writes are refused. A
// live holder renews its leases every third of the TTL. The default is
// DefaultLeaseTTL; zero or less means the default.
func WithLeaseTTL(d time.Duration) Option { return func(o *options) { o.leaseTTL = d } }

// WithTimeout bounds the database calls that take no context: TryLock, the
// unlock it returns, lease renewal and Close. The default is DefaultTimeout;
// zero or less means the default.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

func buildOptions(opts []Option) options {
	o := options{leaseTTL: DefaultLeaseTTL, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.leaseTTL <= 0 {
		o.leaseTTL = DefaultLeaseTTL
	}
	if o.timeout <= 0 {
		o.timeout = DefaultTimeout
	}
	return o
}

// Saver is a checkpoint.Saver on PostgreSQL. It implements
// checkpoint.Lister, ThreadDeleter, ThreadCopier and ThreadLocker, and is
// safe for concurrent use.
//
// Tables (see Migrate): agentgraph_checkpoints holds one row per checkpoint,
// keyed by thread, namespace and id, with the checkpoint and its metadata in
// their binary forms and the metadata again as jsonb for List's filters;
// agentgraph_writes holds pending writes, keyed by checkpoint, task and
// write, and is deleted with its checkpoint; agentgraph_thread_leases holds
// the lease of each locked thread.
//
// ThreadLocker: TryLock takes a lease on the thread in the database, so it
// excludes runs in every process, not only this one. A lease carries a
// token, a number that grows with every lease taken; this Saver renews the
// leases it holds and, while it holds one, Put and PutWrites on that thread
// succeed only if the lease row still carries its token, checked in the
// same statement as the write. A holder that stopped (crashed, or paused
// for longer than the TTL) loses the thread to the next TryLock after its
// lease expires, and its late writes fail with ErrLeaseLost. Writes to a
// thread this Saver holds no lease on are not checked.
//
// Thread ids, namespaces, checkpoint ids, task ids and metadata strings
// may not contain the NUL character, which PostgreSQL's text cannot hold;
// channel values and pending writes may hold any bytes.
type Saver struct {
	pool *pgxpool.Pool
	opts options
	sql  statements
	name string // identifies this Saver's leases in the database

	mu       sync.Mutex
	holds    map[string]*hold
	renewing bool
	closed   bool
	closing  context.Context // done once Close is called
	close    context.CancelFunc
	renewed  sync.WaitGroup
}

var (
	_ checkpoint.Saver         = (*Saver)(nil)
	_ checkpoint.Lister        = (*Saver)(nil)
	_ checkpoint.ThreadDeleter = (*Saver)(nil)
	_ checkpoint.ThreadCopier  = (*Saver)(nil)
	_ checkpoint.ThreadLocker  = (*Saver)(nil)
)

// New returns a Saver on pool after creating or migrating its tables (see
// Migrate). The caller keeps ownership of pool; Close the Saver before
// closing the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Saver, error) {
	o := buildOptions(opts)
	if err := migrate(ctx, pool, o); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	closing, cancel := context.WithCancel(context.Background())
	return &Saver{
		pool:    pool,
		opts:    o,
		sql:     newStatements(o.schema),
		name:    host + ":" + strconv.Itoa(os.Getpid()) + ":" + checkpoint.NewID(),
		holds:   make(map[string]*hold),
		closing: closing,
		close:   cancel,
	}, nil
}

// Close stops renewing the leases this Saver holds and releases them. It
// does not close the pool. The Saver must not be used after Close.
func (s *Saver) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.close()
	var threads []string
	var tokens []int64
	for id, h := range s.holds {
		if h.token != 0 {
			threads, tokens = append(threads, id), append(tokens, h.token)
		}
	}
	clear(s.holds)
	s.mu.Unlock()
	s.renewed.Wait()
	if len(threads) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.timeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.sql.releaseAll, threads, tokens); err != nil {
		return fmt.Errorf("checkpoint/postgres: Close: releasing %d thread leases: %w; they expire on their own", len(threads), err)
	}
	return nil
}

// table names, qualified by the schema when there is one.
type tables struct {
	checkpoints, writes, leases, tokens, migrations string
}

func newTables(schema string) tables {
	q := func(name string) string {
		if schema == "" {
			return pgx.Identifier{name}.Sanitize()
		}
		return pgx.Identifier{schema, name}.Sanitize()
	}
	return tables{
		checkpoints: q("agentgraph_checkpoints"),
		writes:      q("agentgraph_writes"),
		leases:      q("agentgraph_thread_leases"),
		tokens:      q("agentgraph_lease_tokens"),
		migrations:  q("agentgraph_checkpoint_migrations"),
	}
}

// statements are the SQL the Saver runs, with the table names filled in
// once. Every value is a parameter.
type statements struct {
	getLatest, getByID, exists      string
	listFirst, listBefore           string
	put, putWrites                  string
	deleteThread, copyThread        string
	lock, renew, unlock, releaseAll string
}

func newStatements(schema string) statements {
	t := newTables(schema)
	// {tokens} stands inside a string literal (nextval's regclass).
	r := strings.NewReplacer("{cp}", t.checkpoints, "{w}", t.writes, "{l}", t.leases,
		"{tokens}", strings.ReplaceAll(t.tokens, "'", "''"))
	// The columns a tuple is read from; the writes come as one array.
	const cols = `c.id, c.metadata, c.checkpoint,
		ARRAY(SELECT w.rec FROM {w} w WHERE w.thread_id = c.thread_id AND w.ns = c.ns AND w.checkpoint_id = c.id)`
	// fence is true when $fence is 0 (no lease held) or the thread's lease
	// still carries token $fence. FOR SHARE makes a concurrent TryLock that
	// would take the lease over wait until this statement's write commits.
	fence := func(thread, token string) string {
		return `fence AS (SELECT ` + token + `::bigint = 0 OR EXISTS (
			SELECT 1 FROM {l} WHERE thread_id = ` + thread + ` AND token = ` + token + ` FOR SHARE) AS ok)`
	}
	return statements{
		getLatest: r.Replace(`SELECT ` + cols + ` FROM {cp} c
			WHERE c.thread_id = $1 AND c.ns = $2 ORDER BY c.id DESC LIMIT 1`),
		getByID: r.Replace(`SELECT ` + cols + ` FROM {cp} c
			WHERE c.thread_id = $1 AND c.ns = $2 AND c.id = $3`),
		exists: r.Replace(`SELECT EXISTS (SELECT 1 FROM {cp} WHERE thread_id = $1 AND ns = $2 AND id = $3)`),
		listFirst: r.Replace(`SELECT ` + cols + ` FROM {cp} c
			WHERE c.thread_id = $1 AND c.ns = $2 AND c.filter @> $3 ORDER BY c.id DESC LIMIT $4`),
		listBefore: r.Replace(`SELECT ` + cols + ` FROM {cp} c
			WHERE c.thread_id = $1 AND c.ns = $2 AND c.filter @> $3 AND c.id < $5 ORDER BY c.id DESC LIMIT $4`),
		put: r.Replace(`WITH ` + fence("$1", "$11") + `,
			ins AS (
				INSERT INTO {cp} (thread_id, ns, id, parent_id, ts, full_state, step, filter, metadata, checkpoint)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 FROM fence WHERE fence.ok
				ON CONFLICT (thread_id, ns, id) DO UPDATE SET
					parent_id = EXCLUDED.parent_id, ts = EXCLUDED.ts, full_state = EXCLUDED.full_state,
					step = EXCLUDED.step, filter = EXCLUDED.filter, metadata = EXCLUDED.metadata,
					checkpoint = EXCLUDED.checkpoint
				RETURNING 1)
			SELECT ok FROM fence`),
		// Keys starting with '!' are special channels: their writes replace
		// the stored one; any other write is kept as first stored.
		putWrites: r.Replace(`WITH ` + fence("$1", "$4") + `,
			ins AS (
				INSERT INTO {w} (thread_id, ns, checkpoint_id, task_id, wkey, rec)
				SELECT $1, $2, $3, $5, u.wkey, u.rec FROM fence, unnest($6::text[], $7::bytea[]) AS u(wkey, rec)
				WHERE fence.ok
				ON CONFLICT (thread_id, ns, checkpoint_id, task_id, wkey) DO UPDATE SET rec = EXCLUDED.rec
					WHERE left(EXCLUDED.wkey, 1) = '!'
				RETURNING 1)
			SELECT ok FROM fence`),
		deleteThread: r.Replace(`DELETE FROM {cp} WHERE thread_id = $1`),
		// One statement, so one snapshot: the writes copied belong to the
		// checkpoints copied. Foreign keys are checked at its end.
		copyThread: r.Replace(`WITH dst AS (SELECT EXISTS (SELECT 1 FROM {cp} WHERE thread_id = $2) AS taken),
			c AS (
				INSERT INTO {cp} (thread_id, ns, id, parent_id, ts, full_state, step, filter, metadata, checkpoint)
				SELECT $2, s.ns, s.id, s.parent_id, s.ts, s.full_state, s.step, s.filter, s.metadata, s.checkpoint
				FROM {cp} s, dst WHERE s.thread_id = $1 AND NOT dst.taken
				RETURNING 1),
			w AS (
				INSERT INTO {w} (thread_id, ns, checkpoint_id, task_id, wkey, rec)
				SELECT $2, s.ns, s.checkpoint_id, s.task_id, s.wkey, s.rec
				FROM {w} s, dst WHERE s.thread_id = $1 AND NOT dst.taken
				RETURNING 1)
			SELECT dst.taken, (SELECT count(*) FROM c) FROM dst`),
		// A new token for every lease taken; an expired lease is taken over.
		lock: r.Replace(`INSERT INTO {l} AS l (thread_id, token, holder, acquired_at, expires_at)
			VALUES ($1, nextval('{tokens}'), $2, now(), now() + $3 * interval '1 millisecond')
			ON CONFLICT (thread_id) DO UPDATE SET token = EXCLUDED.token, holder = EXCLUDED.holder,
				acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
			WHERE l.expires_at <= now()
			RETURNING token`),
		renew: r.Replace(`UPDATE {l} AS l SET expires_at = now() + $3 * interval '1 millisecond'
			FROM unnest($1::text[], $2::bigint[]) AS h(thread_id, token)
			WHERE l.thread_id = h.thread_id AND l.token = h.token`),
		unlock: r.Replace(`DELETE FROM {l} WHERE thread_id = $1 AND token = $2`),
		releaseAll: r.Replace(`DELETE FROM {l} AS l USING unnest($1::text[], $2::bigint[]) AS h(thread_id, token)
			WHERE l.thread_id = h.thread_id AND l.token = h.token`),
	}
}
