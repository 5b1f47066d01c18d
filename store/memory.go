package store

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is a Store that keeps items in memory, for tests, demos and
// short-lived processes: LangGraph's InMemoryStore, with TTLs. It implements
// Sweeper and is safe for concurrent use; reads run in parallel, writes one
// at a time.
//
// The first item put with a TTL starts a goroutine that deletes expired
// items every TTLConfig.SweepInterval; Close stops it. A Memory that never
// held an item with a TTL has nothing to stop, but Close is always safe.
//
// The zero value is not ready for use; call NewMemory.
type Memory struct {
	clock Clock
	ttl   TTLConfig

	mu     sync.RWMutex
	spaces map[string]*memSpace // by label-joined namespace
	expiry expiryHeap
	closed bool
	stop   chan struct{} // closed by Close; nil until the sweeper starts
	done   chan struct{} // closed when the sweeper returns
}

var _ interface {
	Store
	Sweeper
} = (*Memory)(nil)

// memSpace holds the items of one namespace.
type memSpace struct {
	ns    []string
	items map[string]*memItem
}

// memItem is one stored item. Its data is set before the item is
// published and never changes after; expires moves when a read under the
// read lock refreshes it. An item with a TTL is in the expiry heap, whose
// fields change under the write lock only.
type memItem struct {
	created, updated int64 // unix nanoseconds
	ttl              time.Duration
	expires          atomic.Int64 // unix nanoseconds; 0: never
	value            map[string]any

	space, key string
	at         int64 // when the sweep looks at it: expires when scheduled
	index      int   // in the expiry heap; -1 when out of it
}

// live reports whether it has not expired at now.
func (it *memItem) live(now int64) bool {
	e := it.expires.Load()
	return e == 0 || now < e
}

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// WithClock makes the store take its time from c: the times of items,
// when they expire, and when to sweep. Tests pass a storetest.Clock.
func WithClock(c Clock) MemoryOption { return func(m *Memory) { m.clock = orSystem(c) } }

// WithTTL sets the store's TTL policy; see TTLConfig.
func WithTTL(c TTLConfig) MemoryOption { return func(m *Memory) { m.ttl = c } }

// NewMemory returns an empty Memory.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{clock: systemClock{}, spaces: map[string]*memSpace{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

func spaceKey(ns []string) string { return strings.Join(ns, ".") }

func stamp(t time.Time) int64 { return t.UnixNano() }

func unstamp(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts PutOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateItem(namespace, key); err != nil {
		return err
	}
	doc, err := normalize(value)
	if err != nil {
		return fmt.Errorf("%w: value of %q in %q is not JSON: %v", ErrInvalid, key, namespace, err)
	}
	ttl := m.ttl.ItemTTL(opts.TTL)

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	now := stamp(m.clock.Now())
	sk := spaceKey(namespace)
	sp := m.spaces[sk]
	if sp == nil {
		sp = &memSpace{ns: slices.Clone(namespace), items: map[string]*memItem{}}
		m.spaces[sk] = sp
	}
	it := &memItem{created: now, updated: now, ttl: ttl, value: doc, space: sk, key: key, index: -1}
	if old := sp.items[key]; old != nil {
		if old.live(now) {
			it.created = old.created
		}
		m.unschedule(old)
	}
	if ttl > 0 {
		it.at = now + int64(ttl)
		it.expires.Store(it.at)
		heap.Push(&m.expiry, it)
		m.startSweeper()
	}
	sp.items[key] = it
	return nil
}

// validateItem checks the address of an item.
func validateItem(namespace []string, key string) error {
	if err := ValidateNamespace(namespace); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: empty key in namespace %q", ErrInvalid, namespace)
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, namespace []string, key string, opts GetOptions) (*Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validateItem(namespace, key); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := stamp(m.clock.Now())
	var it *memItem
	sp := m.spaces[spaceKey(namespace)]
	if sp != nil {
		it = sp.items[key]
	}
	if it == nil || !it.live(now) {
		return nil, fmt.Errorf("%w: %q in namespace %q", ErrNotFound, key, namespace)
	}
	m.refresh(it, now, opts.RefreshTTL)
	return it.export(sp.ns, key), nil
}

// refresh restarts the TTL of it when r and the store's policy ask for it.
// Callers hold at least the read lock; the sweeper, which holds the write
// lock, sees the new expiry when it reaches the old one.
func (m *Memory) refresh(it *memItem, now int64, r Refresh) {
	if it.ttl > 0 && m.ttl.Refreshes(r) {
		it.expires.Store(now + int64(it.ttl))
	}
}

func (it *memItem) export(ns []string, key string) *Item {
	return &Item{
		Namespace: slices.Clone(ns),
		Key:       key,
		Value:     copyJSON(it.value).(map[string]any),
		CreatedAt: unstamp(it.created),
		UpdatedAt: unstamp(it.updated),
		ExpiresAt: unstamp(it.expires.Load()),
	}
}

// copyJSON returns a deep copy of a value as encoding/json decodes it.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateItem(namespace, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	sk := spaceKey(namespace)
	if sp := m.spaces[sk]; sp != nil && sp.items[key] != nil {
		m.remove(sp, sp.items[key])
	}
	return nil
}

// remove deletes it from sp, and sp from the store once it is empty. The
// caller holds the write lock.
func (m *Memory) remove(sp *memSpace, it *memItem) {
	m.unschedule(it)
	delete(sp.items, it.key)
	if len(sp.items) == 0 {
		delete(m.spaces, it.space)
	}
}

// unschedule takes it out of the expiry heap if it is there.
func (m *Memory) unschedule(it *memItem) {
	if it.index >= 0 {
		heap.Remove(&m.expiry, it.index)
	}
}

// ctxEvery is how many items a scan looks at between checks of its context.
const ctxEvery = 256

type memHit struct {
	sp  *memSpace
	key string
	it  *memItem
}

// Search implements Store.
func (m *Memory) Search(ctx context.Context, prefix []string, opts SearchOptions) ([]*Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	offset, limit, err := page(opts.Offset, opts.Limit, DefaultSearchLimit)
	if err != nil {
		return nil, err
	}
	filter, err := ParseFilter(opts.Filter)
	if err != nil {
		return nil, err
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := stamp(m.clock.Now())
	var hits []memHit
	seen := 0
	for _, sp := range m.spaces {
		if !hasPrefix(sp.ns, prefix) {
			continue
		}
		for key, it := range sp.items {
			if seen++; seen%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if it.live(now) && filter.Match(it.value) {
				hits = append(hits, memHit{sp, key, it})
			}
		}
	}
	slices.SortFunc(hits, func(a, b memHit) int {
		if c := cmp.Compare(b.it.updated, a.it.updated); c != 0 {
			return c
		}
		if c := slices.Compare(a.sp.ns, b.sp.ns); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	hits = hits[min(offset, len(hits)):min(offset+limit, len(hits))]
	out := make([]*Item, len(hits))
	for i, h := range hits {
		m.refresh(h.it, now, opts.RefreshTTL)
		out[i] = h.it.export(h.sp.ns, h.key)
	}
	return out, nil
}

// page checks an offset and a limit and applies the default limit.
func page(offset, limit, defaultLimit int) (int, int, error) {
	if offset < 0 || limit < 0 {
		return 0, 0, fmt.Errorf("%w: offset %d, limit %d: neither may be negative", ErrInvalid, offset, limit)
	}
	if limit == 0 {
		limit = defaultLimit
	}
	return offset, limit, nil
}

// ListNamespaces implements Store.
func (m *Memory) ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	offset, limit, _ := page(opts.Offset, opts.Limit, DefaultNamespaceLimit)

	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := stamp(m.clock.Now())
	found := map[string][]string{}
	seen := 0
	for _, sp := range m.spaces {
		if seen++; seen%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if !opts.Match(sp.ns) || !sp.anyLive(now) {
			continue
		}
		ns := truncate(sp.ns, opts.MaxDepth)
		found[spaceKey(ns)] = ns
	}
	out := slices.SortedFunc(maps.Values(found), slices.Compare)
	out = out[min(offset, len(out)):min(offset+limit, len(out))]
	for i, ns := range out {
		out[i] = slices.Clone(ns)
	}
	return out, nil
}

func (sp *memSpace) anyLive(now int64) bool {
	for _, it := range sp.items {
		if it.live(now) {
			return true
		}
	}
	return false
}

// sweepChunk bounds how many items Sweep deletes under one hold of the
// write lock, so that readers and writers get their turn in a long sweep.
const sweepChunk = 512

// Sweep implements Sweeper: it deletes the items that have expired.
func (m *Memory) Sweep(ctx context.Context) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		deleted, more, err := m.sweepChunk()
		n += deleted
		if err != nil || !more {
			return n, err
		}
	}
}

func (m *Memory) sweepChunk() (deleted int, more bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, false, ErrClosed
	}
	now := stamp(m.clock.Now())
	for i := 0; len(m.expiry) > 0 && m.expiry[0].at <= now; i++ {
		if i == sweepChunk {
			return deleted, true, nil
		}
		it := m.expiry[0]
		if at := it.expires.Load(); at > now {
			// Refreshed by a read: look again when the new time comes.
			it.at = at
			heap.Fix(&m.expiry, 0)
			continue
		}
		m.remove(m.spaces[it.space], it)
		deleted++
	}
	return deleted, false, nil
}

// startSweeper starts the background sweep if the policy has one and it is
// not running. The caller holds the write lock.
func (m *Memory) startSweeper() {
	interval := m.ttl.Interval()
	if m.stop != nil || interval == 0 {
		return
	}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.sweepLoop(interval, m.stop, m.done)
}

func (m *Memory) sweepLoop(interval time.Duration, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-m.clock.After(interval):
		}
		// Only Close makes a sweep fail, and then stop is closed.
		m.Sweep(context.Background())
	}
}

// Close stops the background sweep, waiting for one in progress, and
// releases the items. Calls after Close fail with ErrClosed; Close itself
// may be called again.
func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.spaces, m.expiry = nil, nil
	stop, done := m.stop, m.done
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return nil
}

// expiryHeap orders the items that have a TTL by when the sweep should
// look at them.
type expiryHeap []*memItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *expiryHeap) Push(x any) {
	it := x.(*memItem)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*h = old[:len(old)-1]
	return it
}
