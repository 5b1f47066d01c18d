// Package bolt is a store.Store that keeps items in a bbolt file, durable
// once Put returns. Open gives it a file of its own; New puts it beside
// other data in a bbolt database the caller has open, such as a file that
// also holds checkpoints, in a bucket of its own.
//
// Items are keyed by their namespace, label by label, then their key, so a
// Search under a prefix and ListNamespaces are cursor seeks over the items
// under it, never over the whole file. An index by expiry time lets the
// sweep find expired items without reading the others; it deletes them a
// chunk per transaction, and readers never wait for it (bbolt's readers
// see the last commit while a write is in progress).
package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentgraph/agentgraph/store"
)

// Format is the version of the layout this package writes. Open and New
// refuse a file whose store bucket has another.
const Format = "agentgraph.store/1"

// Errors Open and New return, wrapped with the file's path and what to do.
var (
	// ErrNotBolt reports a file that is not a bbolt database.
	ErrNotBolt = errors.New("store/bolt: not a bbolt database file")
	// ErrIncompatible reports a bbolt file this version cannot use: one
	// whose store bucket another version wrote, one another program wrote
	// (to Open; New shares such files), or one an incompatible bbolt wrote.
	ErrIncompatible = errors.New("store/bolt: incompatible file")
	// ErrLocked reports a file another process, or another Open in this
	// one, holds open.
	ErrLocked = errors.New("store/bolt: file is locked by another process or another open Store")
	// ErrCorrupt reports an item the file holds in a form this version
	// cannot read.
	ErrCorrupt = errors.New("store/bolt: corrupt item")
)

// The store's bucket holds the format and two buckets: items, by
// itemKey, and the expiry index, by expiry time and itemKey.
var (
	rootBucket   = []byte("agentgraph.store")
	formatKey    = []byte("format")
	itemsBucket  = []byte("items")
	expiryBucket = []byte("expiry")
)

// Option configures New and Open.
type Option func(*options)

// OpenOption configures Open: an Option, WithoutSync or WithTimeout.
type OpenOption interface{ applyOpen(*options) }

func (o Option) applyOpen(c *options) { o(c) }

type fileOption func(*options)

func (o fileOption) applyOpen(c *options) { o(c) }

type options struct {
	noSync  bool
	timeout time.Duration
	clock   store.Clock
	ttl     store.TTLConfig
}

// WithClock makes the store take its time from c: the times of items,
// when they expire, and when to sweep. Tests pass a storetest.Clock.
func WithClock(c store.Clock) Option { return func(o *options) { o.clock = c } }

// WithTTL sets the store's TTL policy; see store.TTLConfig.
func WithTTL(c store.TTLConfig) Option { return func(o *options) { o.ttl = c } }

// WithoutSync makes commits skip fsync: what Put wrote survives the
// process being killed but not a crash of the machine, which may also
// corrupt the file. For caches and tests.
func WithoutSync() OpenOption { return fileOption(func(o *options) { o.noSync = true }) }

// WithTimeout sets how long Open waits for another process to close the
// file before it fails with ErrLocked; zero or less means one second.
func WithTimeout(d time.Duration) OpenOption {
	return fileOption(func(o *options) { o.timeout = d })
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Store is a store.Store on a bbolt database. It implements store.Sweeper
// and is safe for concurrent use. Writes return once committed (and,
// unless WithoutSync, fsynced); writes that arrive during a commit share
// the next one. A read that refreshes TTLs writes too, and only when an
// item it returns has a TTL.
//
// Unless TTLConfig.SweepInterval is negative, a goroutine deletes expired
// items every interval; Close stops it.
type Store struct {
	db    *bbolt.DB
	path  string
	owned bool // Close closes db
	clock store.Clock
	ttl   store.TTLConfig

	closed atomic.Bool
	cancel context.CancelFunc // stops the sweeper
	done   chan struct{}      // closed when the sweeper returns

	// Group commit: see update.
	wmu     sync.Mutex
	queue   []*writeReq
	leading bool

	closeOnce sync.Once
	closeErr  error
}

var _ interface {
	store.Store
	store.Sweeper
} = (*Store)(nil)

// initialMmap is the address space a store file is mapped with at first:
// reserved, not used, until the file grows into it.
const initialMmap = 64 << 20

// Open opens the store file at path, creating it if it does not exist.
// Only one process may have the file open: Open waits up to WithTimeout for
// another to close it, then fails with ErrLocked. It fails with ErrNotBolt
// when the file is not a bbolt database, and with ErrIncompatible when it
// is one this package did not write (to share a file deliberately, open
// it with bbolt and pass it to New) or wrote in another Format.
func Open(path string, opts ...OpenOption) (*Store, error) {
	o := options{timeout: time.Second}
	for _, opt := range opts {
		opt.applyOpen(&o)
	}
	if o.timeout <= 0 {
		o.timeout = time.Second
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        o.timeout,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		// A file growing past its map is remapped under a lock that waits
		// for every read transaction; mapping ahead makes that rare.
		InitialMmapSize: initialMmap,
	})
	switch {
	case err == nil:
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: %w (waited %v): close the other Store or process, or use another file", path, ErrLocked, o.timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open %s: %w (%v): pass the path of a store file, or of a file that does not exist yet", path, ErrNotBolt, err)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("open %s: %w: written by an incompatible version of bbolt (%v)", path, ErrIncompatible, err)
	default:
		return nil, fmt.Errorf("open store file %s: %w", path, err)
	}
	db.NoSync = o.noSync
	if err := db.Update(func(tx *bbolt.Tx) error { return initFile(tx, false) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return start(db, path, true, o), nil
}

// New returns a Store in db, which the caller opened and closes after the
// Store's Close. The store keeps to its own bucket, "agentgraph.store", so
// the file may hold anything else; New creates the bucket if it is missing
// and fails with ErrIncompatible if it holds another Format. A bbolt file is
// open in one place at a time, and checkpoint/bolt opens its files by path:
// a file that holds both threads and memories is open to one of the two at
// a time.
func New(db *bbolt.DB, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if db.IsReadOnly() {
		return nil, fmt.Errorf("store/bolt: %s is open read-only: a store writes, open it read-write", db.Path())
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return initFile(tx, true) }); err != nil {
		return nil, fmt.Errorf("store in %s: %w", db.Path(), err)
	}
	return start(db, db.Path(), false, o), nil
}

func start(db *bbolt.DB, path string, owned bool, o options) *Store {
	s := &Store{db: db, path: path, owned: owned, clock: o.clock, ttl: o.ttl}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	if interval := s.ttl.Interval(); interval > 0 {
		var ctx context.Context
		ctx, s.cancel = context.WithCancel(context.Background())
		s.done = make(chan struct{})
		go s.sweepLoop(ctx, interval)
	}
	return s
}

// initFile checks the store bucket of a file or lays it out. Unless
// shared, a file that holds other buckets and no store bucket is refused.
func initFile(tx *bbolt.Tx, shared bool) error {
	if root := tx.Bucket(rootBucket); root != nil {
		if got := string(root.Get(formatKey)); got != Format {
			return fmt.Errorf("%w: store format %q, this version reads %q: open it with the version that wrote it", ErrIncompatible, got, Format)
		}
		if root.Bucket(itemsBucket) == nil || root.Bucket(expiryBucket) == nil {
			return fmt.Errorf("%w: the store bucket lacks its items or expiry bucket", ErrIncompatible)
		}
		return nil
	}
	if !shared {
		var other []byte
		tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			other = slices.Clone(name)
			return errStop
		})
		if other != nil {
			return fmt.Errorf("%w: a bbolt database of another program (it has a bucket %q and no %q bucket): use a new file, or open it with bbolt and pass it to New to share it", ErrIncompatible, other, rootBucket)
		}
	}
	root, err := tx.CreateBucket(rootBucket)
	if err != nil {
		return err
	}
	if err := root.Put(formatKey, []byte(Format)); err != nil {
		return err
	}
	if _, err := root.CreateBucket(itemsBucket); err != nil {
		return err
	}
	_, err = root.CreateBucket(expiryBucket)
	return err
}

var errStop = errors.New("stop")

// Path returns the path of the file.
func (s *Store) Path() string { return s.path }

// Close stops the sweeper, waiting for a sweep in progress, and closes the
// file if Open opened it (New's caller closes its own). Calls after Close
// fail with store.ErrClosed; calling Close again returns the first call's
// result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.cancel != nil {
			s.cancel()
			<-s.done
		}
		if s.owned {
			s.closeErr = s.db.Close()
		}
	})
	return s.closeErr
}

// Keys.
//
// A namespace is encoded label by label: each label's bytes, with 0x00
// written 0x00 0xff, then 0x00 0x01. An item's key is its namespace's
// encoding, 0x00 0x00, and its key's bytes. Byte order is then the order
// of namespaces label by label, a namespace's own items come before those
// of the namespaces under it, and the items under a prefix are the keys
// that start with the prefix's encoding.

func appendNamespace(b []byte, ns []string) []byte {
	for _, l := range ns {
		for i := range len(l) {
			if l[i] == 0 {
				b = append(b, 0, 0xff)
			} else {
				b = append(b, l[i])
			}
		}
		b = append(b, 0, 1)
	}
	return b
}

func itemKey(ns []string, key string) []byte {
	b := appendNamespace(make([]byte, 0, 16*len(ns)+len(key)+2), ns)
	b = append(b, 0, 0)
	return append(b, key...)
}

// parseItemKey splits an item's key into its namespace and key; n is the
// length of the namespace's encoding.
func parseItemKey(k []byte) (ns []string, key string, n int, ok bool) {
	var label []byte
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			label = append(label, k[i])
			continue
		}
		if i+1 == len(k) {
			return nil, "", 0, false
		}
		i++
		switch k[i] {
		case 0xff:
			label = append(label, 0)
		case 1:
			ns = append(ns, string(label))
			label = label[:0]
		case 0:
			if len(label) > 0 || len(ns) == 0 {
				return nil, "", 0, false
			}
			return ns, string(k[i+1:]), i - 1, true
		default:
			return nil, "", 0, false
		}
	}
	return nil, "", 0, false
}

// nextNamespace returns the least key past the items of the namespace
// whose encoding is enc: the start of the namespaces under it.
func nextNamespace(enc []byte) []byte { return append(slices.Clip(enc), 0, 1) }

// pastSubtree returns the least key past the namespace whose encoding is
// enc and every namespace under it.
func pastSubtree(enc []byte) []byte {
	b := slices.Clone(enc)
	b[len(b)-1]++ // 0x00 0x01 becomes 0x00 0x02
	return b
}

func expiryKey(at int64, item []byte) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(item)), uint64(at))
	return append(b, item...)
}

// Values: a header of four big-endian int64s (created, updated, TTL and
// expiry, as Unix nanoseconds; TTL and expiry 0 when none), then the JSON.

const headerLen = 32

type header struct {
	created, updated, ttl, expires int64
}

func (h header) live(now int64) bool { return h.expires == 0 || now < h.expires }

func readHeader(v []byte) (header, bool) {
	if len(v) < headerLen {
		return header{}, false
	}
	be := binary.BigEndian
	return header{
		created: int64(be.Uint64(v)),
		updated: int64(be.Uint64(v[8:])),
		ttl:     int64(be.Uint64(v[16:])),
		expires: int64(be.Uint64(v[24:])),
	}, true
}

func (h header) append(b []byte) []byte {
	be := binary.BigEndian
	b = be.AppendUint64(b, uint64(h.created))
	b = be.AppendUint64(b, uint64(h.updated))
	b = be.AppendUint64(b, uint64(h.ttl))
	return be.AppendUint64(b, uint64(h.expires))
}

func unstamp(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// decodeItem makes an Item of a stored key and value, sharing no memory
// with them.
func decodeItem(k, v []byte) (*store.Item, error) {
	ns, key, _, ok := parseItemKey(k)
	h, okh := readHeader(v)
	if !ok || !okh {
		return nil, fmt.Errorf("%w: key %q", ErrCorrupt, k)
	}
	var value map[string]any
	if err := json.Unmarshal(v[headerLen:], &value); err != nil {
		return nil, fmt.Errorf("%w: %q in %q: %v", ErrCorrupt, key, ns, err)
	}
	if value == nil {
		value = map[string]any{}
	}
	return &store.Item{
		Namespace: ns, Key: key, Value: value,
		CreatedAt: unstamp(h.created), UpdatedAt: unstamp(h.updated), ExpiresAt: unstamp(h.expires),
	}, nil
}

func buckets(tx *bbolt.Tx) (items, expiry *bbolt.Bucket) {
	root := tx.Bucket(rootBucket)
	return root.Bucket(itemsBucket), root.Bucket(expiryBucket)
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(*bbolt.Tx) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return closedErr(s.db.View(fn))
}

func closedErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w (%v)", store.ErrClosed, err)
	}
	return err
}

func validateItem(ns []string, key string) error {
	if err := store.ValidateNamespace(ns); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key in namespace %q", store.ErrInvalid, ns)
	}
	return nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts store.PutOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
	ttl := int64(s.ttl.ItemTTL(opts.TTL))
	k := itemKey(namespace, key)
	return s.update(func(tx *bbolt.Tx) error {
		items, expiry := buckets(tx)
		now := s.clock.Now().UnixNano()
		h := header{created: now, updated: now}
		if old, ok := readHeader(items.Get(k)); ok {
			if old.expires != 0 {
				if err := expiry.Delete(expiryKey(old.expires, k)); err != nil {
					return err
				}
			}
			if old.live(now) {
				h.created = old.created
			}
		}
		if ttl > 0 {
			h.ttl, h.expires = ttl, now+ttl
			if err := expiry.Put(expiryKey(h.expires, k), nil); err != nil {
				return err
			}
		}
		return items.Put(k, append(h.append(make([]byte, 0, headerLen+len(doc))), doc...))
	})
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, namespace []string, key string, opts store.GetOptions) (*store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validateItem(namespace, key); err != nil {
		return nil, err
	}
	k := itemKey(namespace, key)
	now := s.clock.Now().UnixNano()
	var it *store.Item
	var h header
	err := s.view(func(tx *bbolt.Tx) error {
		items, _ := buckets(tx)
		v := items.Get(k)
		var ok bool
		if h, ok = readHeader(v); !ok || !h.live(now) {
			return nil
		}
		var err error
		it, err = decodeItem(k, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, fmt.Errorf("%w: %q in namespace %q", store.ErrNotFound, key, namespace)
	}
	if h.ttl > 0 && s.ttl.Refreshes(opts.RefreshTTL) {
		if err := s.refresh(ctx, now, [][]byte{k}); err != nil {
			return nil, err
		}
		it.ExpiresAt = unstamp(now + h.ttl)
	}
	return it, nil
}

// refresh restarts at now the TTLs of the items at keys. It never moves an
// expiry earlier, so a refresh that lost a race with a later Put or
// refresh leaves their expiry alone.
func (s *Store) refresh(ctx context.Context, now int64, keys [][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		items, expiry := buckets(tx)
		for _, k := range keys {
			v := items.Get(k)
			h, ok := readHeader(v)
			if !ok || h.ttl == 0 || !h.live(now) || now+h.ttl <= h.expires {
				continue
			}
			if err := expiry.Delete(expiryKey(h.expires, k)); err != nil {
				return err
			}
			h.expires = now + h.ttl
			if err := expiry.Put(expiryKey(h.expires, k), nil); err != nil {
				return err
			}
			nv := h.append(make([]byte, 0, len(v)))
			if err := items.Put(k, append(nv, v[headerLen:]...)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateItem(namespace, key); err != nil {
		return err
	}
	k := itemKey(namespace, key)
	return s.update(func(tx *bbolt.Tx) error {
		items, expiry := buckets(tx)
		h, ok := readHeader(items.Get(k))
		if !ok {
			return nil
		}
		if h.expires != 0 {
			if err := expiry.Delete(expiryKey(h.expires, k)); err != nil {
				return err
			}
		}
		return items.Delete(k)
	})
}

// ctxEvery is how many keys a scan reads between checks of its context.
const ctxEvery = 256

type hit struct {
	updated int64
	k, v    []byte
	h       header
}

// Search implements store.Store.
func (s *Store) Search(ctx context.Context, prefix []string, opts store.SearchOptions) ([]*store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
	now := s.clock.Now().UnixNano()
	seek := appendNamespace(nil, prefix)
	var out []*store.Item
	var refresh [][]byte
	err = s.view(func(tx *bbolt.Tx) error {
		items, _ := buckets(tx)
		var hits []hit
		c := items.Cursor()
		n := 0
		for k, v := c.Seek(seek); k != nil && bytes.HasPrefix(k, seek); k, v = c.Next() {
			if n++; n%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			h, ok := readHeader(v)
			if !ok {
				return fmt.Errorf("%w: key %q", ErrCorrupt, k)
			}
			if !h.live(now) {
				continue
			}
			if filter != nil {
				var value map[string]any
				if err := json.Unmarshal(v[headerLen:], &value); err != nil {
					return fmt.Errorf("%w: key %q: %v", ErrCorrupt, k, err)
				}
				if !filter.Match(value) {
					continue
				}
			}
			hits = append(hits, hit{h.updated, k, v, h})
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if a.updated != b.updated {
				if a.updated > b.updated {
					return -1
				}
				return 1
			}
			return bytes.Compare(a.k, b.k)
		})
		hits = hits[min(opts.Offset, len(hits)):min(opts.Offset+limit, len(hits))]
		out = make([]*store.Item, len(hits))
		for i, h := range hits {
			it, err := decodeItem(h.k, h.v)
			if err != nil {
				return err
			}
			out[i] = it
			if h.h.ttl > 0 && s.ttl.Refreshes(opts.RefreshTTL) {
				refresh = append(refresh, slices.Clone(h.k))
				it.ExpiresAt = unstamp(now + h.h.ttl)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(refresh) > 0 {
		if err := s.refresh(ctx, now, refresh); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListNamespaces implements store.Store. It walks the items under the
// literal part of the prefix, but only the first live item of each
// namespace: from there it seeks to the next namespace, or past the whole
// subtree once a namespace has been cut to MaxDepth.
func (s *Store) ListNamespaces(ctx context.Context, opts store.NamespaceOptions) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = store.DefaultNamespaceLimit
	}
	literal := opts.Prefix
	if i := slices.Index(literal, "*"); i >= 0 {
		literal = literal[:i]
	}
	seek := appendNamespace(nil, literal)
	now := s.clock.Now().UnixNano()
	var out [][]string
	err := s.view(func(tx *bbolt.Tx) error {
		items, _ := buckets(tx)
		c := items.Cursor()
		skip, n := opts.Offset, 0
		for k, v := c.Seek(seek); k != nil && bytes.HasPrefix(k, seek) && len(out) < limit; {
			if n++; n%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ns, _, nsLen, ok := parseItemKey(k)
			h, okh := readHeader(v)
			if !ok || !okh {
				return fmt.Errorf("%w: key %q", ErrCorrupt, k)
			}
			if !h.live(now) {
				k, v = c.Next()
				continue
			}
			if !opts.Match(ns) {
				k, v = c.Seek(nextNamespace(k[:nsLen]))
				continue
			}
			cut := opts.MaxDepth > 0 && len(ns) >= opts.MaxDepth
			if cut {
				ns = ns[:opts.MaxDepth]
			}
			if skip > 0 {
				skip--
			} else {
				out = append(out, ns)
			}
			if cut {
				k, v = c.Seek(pastSubtree(appendNamespace(nil, ns)))
			} else {
				k, v = c.Seek(nextNamespace(k[:nsLen]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sweepChunk bounds the items one sweep transaction deletes, so that a
// long sweep lets other writers in between its commits.
const sweepChunk = 1000

// Sweep implements store.Sweeper: it deletes the items that have expired.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		now := s.clock.Now().UnixNano()
		due := false
		err := s.view(func(tx *bbolt.Tx) error {
			_, expiry := buckets(tx)
			k, _ := expiry.Cursor().First()
			due = k != nil && int64(binary.BigEndian.Uint64(k)) <= now
			return nil
		})
		if err != nil || !due {
			return n, err
		}
		var deleted, seen int
		err = closedErr(s.db.Update(func(tx *bbolt.Tx) error {
			items, expiry := buckets(tx)
			var keys [][]byte
			c := expiry.Cursor()
			for k, _ := c.First(); k != nil && len(keys) < sweepChunk; k, _ = c.Next() {
				if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) > now {
					break
				}
				keys = append(keys, slices.Clone(k))
			}
			deleted, seen = 0, len(keys)
			for _, ek := range keys {
				if err := expiry.Delete(ek); err != nil {
					return err
				}
				k := ek[8:]
				if h, ok := readHeader(items.Get(k)); ok && h.expires != 0 && !h.live(now) {
					if err := items.Delete(k); err != nil {
						return err
					}
					deleted++
				}
			}
			return nil
		}))
		if err != nil {
			return n, err
		}
		n += deleted
		if seen < sweepChunk {
			return n, nil
		}
	}
}

func (s *Store) sweepLoop(ctx context.Context, interval time.Duration) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(interval):
		}
		// A failed sweep leaves the items for the next one; expired items
		// are invisible meanwhile.
		s.Sweep(ctx)
	}
}

// writeReq is one write transaction waiting for a commit.
type writeReq struct {
	fn   func(*bbolt.Tx) error
	err  error
	done chan bool // true: err is set; false: lead the next commit
}

// update runs fn in a write transaction and returns once it is committed.
// Calls that arrive while a commit is in progress queue up, and the next
// commit runs all of them in one transaction, so under load one fsync
// serves many writers and a lone writer never waits for a batch to fill.
// If the shared transaction fails, each fn runs again alone: fn reads what
// it needs inside the transaction, so running it twice is safe.
func (s *Store) update(fn func(*bbolt.Tx) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	r := &writeReq{fn: fn, done: make(chan bool, 1)}
	s.wmu.Lock()
	s.queue = append(s.queue, r)
	if s.leading {
		s.wmu.Unlock()
		if <-r.done {
			return r.err
		}
		s.wmu.Lock() // handed the lead; r heads the queue
	}
	s.leading = true
	batch := s.queue
	s.queue = nil
	s.wmu.Unlock()

	s.commit(batch)

	s.wmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- false
	} else {
		s.leading = false
	}
	s.wmu.Unlock()
	return r.err
}

func (s *Store) commit(batch []*writeReq) {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, r := range batch {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			r.err = closedErr(s.db.Update(r.fn))
		}
	} else {
		for _, r := range batch {
			r.err = closedErr(err)
		}
	}
	for _, r := range batch {
		r.done <- true
	}
}
