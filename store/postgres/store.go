package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/store"
)

// Option configures New and Migrate.
type Option func(*options)

type options struct {
	schema string
	clock  store.Clock
	ttl    store.TTLConfig
}

// WithSchema keeps the table in the named PostgreSQL schema, created if
// missing, instead of the first schema of the connection's search_path.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithClock makes the store take its time from c: the times of items, when
// they expire, and when to sweep. Processes sharing a database should share
// a clock too, as machines synchronised by NTP do. Tests pass a
// storetest.Clock.
func WithClock(c store.Clock) Option { return func(o *options) { o.clock = c } }

// WithTTL sets the store's TTL policy; see store.TTLConfig.
func WithTTL(c store.TTLConfig) Option { return func(o *options) { o.ttl = c } }

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = systemClock{}
	}
	return o
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Store is a store.Store on PostgreSQL. It implements store.Sweeper and
// io.Closer and is safe for concurrent use.
//
// Items live in one table, agentgraph_store_items, keyed by namespace and
// key. A namespace is stored as its labels, each escaped and ended by a zero
// byte, so that one namespace's prefixes are byte prefixes of it and byte
// order is label order: Search by prefix and ListNamespaces read index
// ranges. The database pages a Search without a filter; a filter is
// applied by this process to the live items under the prefix, in order,
// decoding each only until the page is full. Unless the policy has no
// sweep, each Store deletes expired items every TTLConfig.SweepInterval
// until Close.
type Store struct {
	pool  *pgxpool.Pool
	clock store.Clock
	ttl   store.TTLConfig
	sql   statements

	mu      sync.RWMutex
	closed  bool
	closing context.Context // done once Close is called
	close   context.CancelFunc
	swept   sync.WaitGroup
}

var _ interface {
	store.Store
	store.Sweeper
} = (*Store)(nil)

// New returns a Store on pool after creating or migrating its table (see
// Migrate). The caller keeps ownership of pool; Close the Store before
// closing the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	o := buildOptions(opts)
	if err := migrate(ctx, pool, o); err != nil {
		return nil, err
	}
	closing, cancel := context.WithCancel(context.Background())
	s := &Store{pool: pool, clock: o.clock, ttl: o.ttl, sql: newStatements(o.schema), closing: closing, close: cancel}
	if interval := o.ttl.Interval(); interval > 0 {
		s.swept.Add(1)
		go s.sweepLoop(interval)
	}
	return s, nil
}

// Close stops the background sweep, waiting for one in progress. Calls
// after Close fail with store.ErrClosed; Close itself may be called again.
// It does not close the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.close()
	s.mu.Unlock()
	s.swept.Wait()
	return nil
}

// begin checks ctx and that the store is open. It returns with the read
// lock held, so Close waits for calls in flight; end releases it.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

func (s *Store) end() { s.mu.RUnlock() }

func (s *Store) sweepLoop(interval time.Duration) {
	defer s.swept.Done()
	for {
		select {
		case <-s.closing.Done():
			return
		case <-s.clock.After(interval):
		}
		// A failed sweep (the database away, or Close) is tried again next
		// time; expired items are invisible meanwhile.
		_, _ = s.sweep(s.closing)
	}
}

type tables struct{ items, migrations string }

func newTables(schema string) tables {
	q := func(name string) string {
		if schema == "" {
			return pgx.Identifier{name}.Sanitize()
		}
		return pgx.Identifier{schema, name}.Sanitize()
	}
	return tables{items: q("agentgraph_store_items"), migrations: q("agentgraph_store_migrations")}
}

type statements struct {
	put, get, refresh, refreshMany, del string
	searchAll, searchPage, namespaces   string
	sweep                               string
}

func newStatements(schema string) statements {
	r := strings.NewReplacer("{items}", newTables(schema).items)
	// Rows under a prefix: ns in [$1, $2), or from $1 on when $2 is NULL.
	// $3 is now; an item is live until its expires_at.
	const under = `ns >= $1 AND ($2::bytea IS NULL OR ns < $2) AND (expires_at IS NULL OR expires_at > $3)`
	const cols = `ns, key, value, created_at, updated_at, ttl_us, expires_at`
	return statements{
		// An item put over an expired one is created afresh.
		put: r.Replace(`INSERT INTO {items} AS i (ns, key, value, created_at, updated_at, ttl_us, expires_at)
			VALUES ($1, $2, $3, $4, $4, $5, $6)
			ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at,
				ttl_us = EXCLUDED.ttl_us, expires_at = EXCLUDED.expires_at,
				created_at = CASE WHEN i.expires_at IS NULL OR i.expires_at > EXCLUDED.updated_at
					THEN i.created_at ELSE EXCLUDED.created_at END`),
		get: r.Replace(`SELECT ` + cols + ` FROM {items}
			WHERE ns = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`),
		refresh: r.Replace(`UPDATE {items} SET expires_at = $3 + ttl_us * interval '1 microsecond'
			WHERE ns = $1 AND key = $2 AND ttl_us > 0 AND expires_at > $3`),
		refreshMany: r.Replace(`UPDATE {items} AS i SET expires_at = $3 + i.ttl_us * interval '1 microsecond'
			FROM unnest($1::bytea[], $2::bytea[]) AS r(ns, key)
			WHERE i.ns = r.ns AND i.key = r.key AND i.ttl_us > 0 AND i.expires_at > $3`),
		del: r.Replace(`DELETE FROM {items} WHERE ns = $1 AND key = $2`),
		searchAll: r.Replace(`SELECT ` + cols + ` FROM {items} WHERE ` + under + `
			ORDER BY updated_at DESC, ns, key`),
		searchPage: r.Replace(`SELECT ` + cols + ` FROM {items} WHERE ` + under + `
			ORDER BY updated_at DESC, ns, key LIMIT $4 OFFSET $5`),
		namespaces: r.Replace(`SELECT DISTINCT ns FROM {items} WHERE ` + under + ` ORDER BY ns`),
		sweep:      r.Replace(`DELETE FROM {items} WHERE expires_at <= $1`),
	}
}

// encodeNamespace writes each label with 0x00 as 0x01 0x01 and 0x01 as
// 0x01 0x02, then a 0x00. Byte order of the results is label-by-label
// order, and the encoding of a namespace starts with those of its
// prefixes and of no other namespace.
func encodeNamespace(labels []string) []byte {
	n := 0
	for _, l := range labels {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for _, l := range labels {
		for i := 0; i < len(l); i++ {
			switch c := l[i]; c {
			case 0, 1:
				b = append(b, 1, c+1)
			default:
				b = append(b, c)
			}
		}
		b = append(b, 0)
	}
	return b
}

func decodeNamespace(b []byte) ([]string, error) {
	var labels []string
	var cur []byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case 0:
			labels = append(labels, string(cur))
			cur = cur[:0]
		case 1:
			if i+1 >= len(b) || b[i+1] < 1 || b[i+1] > 2 {
				return nil, errors.New("store/postgres: damaged namespace in the database")
			}
			i++
			cur = append(cur, b[i]-1)
		default:
			cur = append(cur, c)
		}
	}
	if len(cur) > 0 {
		return nil, errors.New("store/postgres: damaged namespace in the database")
	}
	return labels, nil
}

// prefixRange returns the bounds of the encoded namespaces that start with
// prefix: [lo, hi), hi nil for no bound.
func prefixRange(prefix []string) (lo, hi []byte) {
	lo = encodeNamespace(prefix)
	if len(lo) == 0 {
		return lo, nil
	}
	// lo ends with the 0x00 that ends its last label: anything starting
	// with lo sorts before lo with that byte made 0x01.
	hi = slices.Clone(lo)
	hi[len(hi)-1] = 1
	return lo, hi
}

func validateItem(namespace []string, key string) error {
	if err := store.ValidateNamespace(namespace); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key in namespace %q", store.ErrInvalid, namespace)
	}
	return nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts store.PutOptions) error {
	if err := validateItem(namespace, key); err != nil {
		return err
	}
	if value == nil {
		value = map[string]any{}
	}
	doc, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("%w: value of %q in %q is not JSON: %v", store.ErrInvalid, key, namespace, err)
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	now := s.clock.Now()
	ttl := s.ttl.ItemTTL(opts.TTL)
	var expires *time.Time
	if ttl > 0 {
		e := now.Add(ttl)
		expires = &e
	}
	if _, err := s.pool.Exec(ctx, s.sql.put, encodeNamespace(namespace), []byte(key), doc, now, ttl.Microseconds(), expires); err != nil {
		return wrap("Put", err)
	}
	return nil
}

// row is one item as the queries return it.
type row struct {
	ns, key, value   []byte
	created, updated time.Time
	ttlUS            int64
	expires          *time.Time
}

func (r *row) scan(rows pgx.Row) error {
	return rows.Scan(&r.ns, &r.key, &r.value, &r.created, &r.updated, &r.ttlUS, &r.expires)
}

func (r *row) item() (*store.Item, error) {
	labels, err := decodeNamespace(r.ns)
	if err != nil {
		return nil, err
	}
	it := &store.Item{Namespace: labels, Key: string(r.key), CreatedAt: r.created.UTC(), UpdatedAt: r.updated.UTC()}
	if r.expires != nil {
		it.ExpiresAt = r.expires.UTC()
	}
	if err := json.Unmarshal(r.value, &it.Value); err != nil {
		return nil, fmt.Errorf("store/postgres: damaged value of %q in %q: %w", it.Key, labels, err)
	}
	if it.Value == nil {
		it.Value = map[string]any{}
	}
	return it, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, namespace []string, key string, opts store.GetOptions) (*store.Item, error) {
	if err := validateItem(namespace, key); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	now := s.clock.Now()
	ens := encodeNamespace(namespace)
	var r row
	err := r.scan(s.pool.QueryRow(ctx, s.sql.get, ens, []byte(key), now))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q in namespace %q", store.ErrNotFound, key, namespace)
	}
	if err != nil {
		return nil, wrap("Get", err)
	}
	if r.ttlUS > 0 && s.ttl.Refreshes(opts.RefreshTTL) {
		if _, err := s.pool.Exec(ctx, s.sql.refresh, ens, []byte(key), now); err != nil {
			return nil, wrap("Get", err)
		}
		e := now.Add(time.Duration(r.ttlUS) * time.Microsecond)
		r.expires = &e
	}
	return r.item()
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := validateItem(namespace, key); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	if _, err := s.pool.Exec(ctx, s.sql.del, encodeNamespace(namespace), []byte(key)); err != nil {
		return wrap("Delete", err)
	}
	return nil
}

// Search implements store.Store. Without a filter the database pages the
// result; with one, this process filters the items under the prefix in
// order until the page is full.
func (s *Store) Search(ctx context.Context, prefix []string, opts store.SearchOptions) ([]*store.Item, error) {
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if opts.Offset < 0 || opts.Limit < 0 {
		return nil, fmt.Errorf("%w: offset %d, limit %d: neither may be negative", store.ErrInvalid, opts.Offset, opts.Limit)
	}
	limit := opts.Limit
	if limit == 0 {
		limit = store.DefaultSearchLimit
	}
	filter, err := store.ParseFilter(opts.Filter)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	now := s.clock.Now()
	lo, hi := prefixRange(prefix)
	var rows pgx.Rows
	if filter == nil {
		rows, err = s.pool.Query(ctx, s.sql.searchPage, lo, hi, now, limit, opts.Offset)
	} else {
		rows, err = s.pool.Query(ctx, s.sql.searchAll, lo, hi, now)
	}
	if err != nil {
		return nil, wrap("Search", err)
	}
	var out []*store.Item
	var ttls []int64
	skip := 0
	if filter != nil {
		skip = opts.Offset
	}
	for rows.Next() && len(out) < limit {
		var r row
		if err := r.scan(rows); err != nil {
			rows.Close()
			return nil, wrap("Search", err)
		}
		it, err := r.item()
		if err != nil {
			rows.Close()
			return nil, err
		}
		if !filter.Match(it.Value) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, it)
		ttls = append(ttls, r.ttlUS)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("Search", err)
	}
	if s.ttl.Refreshes(opts.RefreshTTL) {
		if err := s.refreshMany(ctx, now, out, ttls); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refreshMany restarts the TTLs of the items that have one.
func (s *Store) refreshMany(ctx context.Context, now time.Time, items []*store.Item, ttls []int64) error {
	var nss, keys [][]byte
	for i, it := range items {
		if ttls[i] > 0 {
			nss, keys = append(nss, encodeNamespace(it.Namespace)), append(keys, []byte(it.Key))
			it.ExpiresAt = now.Add(time.Duration(ttls[i]) * time.Microsecond).UTC()
		}
	}
	if len(nss) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, s.sql.refreshMany, nss, keys, now); err != nil {
		return wrap("Search", err)
	}
	return nil
}

// ListNamespaces implements store.Store. The database narrows by the labels
// of opts.Prefix before its first "*"; the rest of the match, the depth
// and the page are applied to the namespaces as they stream in, in order.
func (s *Store) ListNamespaces(ctx context.Context, opts store.NamespaceOptions) ([][]string, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = store.DefaultNamespaceLimit
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	literal := opts.Prefix
	if i := slices.Index(literal, "*"); i >= 0 {
		literal = literal[:i]
	}
	lo, hi := prefixRange(literal)
	rows, err := s.pool.Query(ctx, s.sql.namespaces, lo, hi, s.clock.Now())
	if err != nil {
		return nil, wrap("ListNamespaces", err)
	}
	defer rows.Close()
	var out [][]string
	var last []string
	skip := opts.Offset
	for rows.Next() && len(out) < limit {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, wrap("ListNamespaces", err)
		}
		ns, err := decodeNamespace(b)
		if err != nil {
			return nil, err
		}
		if !opts.Match(ns) {
			continue
		}
		if opts.MaxDepth > 0 && len(ns) > opts.MaxDepth {
			ns = ns[:opts.MaxDepth]
		}
		// In order, so a namespace cut to the depth repeats only next to
		// itself.
		if last != nil && slices.Equal(ns, last) {
			continue
		}
		last = ns
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, ns)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("ListNamespaces", err)
	}
	return out, nil
}

// Sweep implements store.Sweeper: it deletes the items that have expired,
// in one statement.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.end()
	return s.sweep(ctx)
}

func (s *Store) sweep(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, s.sql.sweep, s.clock.Now())
	if err != nil {
		return 0, wrap("Sweep", err)
	}
	return int(tag.RowsAffected()), nil
}

func wrap(op string, err error) error {
	return fmt.Errorf("store/postgres: %s: %w", op, err)
}
