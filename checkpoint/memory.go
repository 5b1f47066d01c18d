package checkpoint

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/agentgraph/agentgraph/internal/lz"
)

// Memory is a Saver that keeps every checkpoint of every thread in memory,
// for tests, demos and short-lived processes. It implements Lister,
// ThreadDeleter, ThreadCopier and ThreadLocker, and is safe for concurrent
// use. Put keeps a checkpoint in its binary form (Checkpoint.AppendBinary),
// a fraction of the memory of its maps, PutWrites keeps copies, and Get and
// List decode fresh values: neither the caller's values nor the stored ones
// can change behind the other's back. Values of a kilobyte or more are
// compressed when that makes them much shorter (a state's JSON often
// repeats one message or list many times), and Adopt hands a Memory those
// that do not compress instead of having them copied.
//
// Each thread has its own lock, so runs on different threads do not wait for
// each other. Get of the latest checkpoint, Get by id and Put cost the same
// however long the thread is.
//
// The zero value is not ready for use; call NewMemory.
type Memory struct {
	mu      sync.RWMutex
	threads map[string]*memThread
	locks   ThreadLocks
}

type memThread struct {
	mu      sync.RWMutex
	deleted bool // set when DeleteThread detached this thread from the saver
	spaces  map[string]*memSpace
}

// memSpace is one namespace of a thread: its records sorted by id, so the
// latest is the last, a checkpoint is found by binary search, and a new one,
// whose id sorts last, is appended. A slice of pointers costs far less to
// grow than a map.
type memSpace struct {
	recs []*memRecord
}

func (sp *memSpace) find(id string) (int, bool) {
	n := len(sp.recs)
	if n > 0 && sp.recs[n-1].id == id {
		return n - 1, true
	}
	return slices.BinarySearchFunc(sp.recs, id, func(r *memRecord, id string) int { return cmp.Compare(r.id, id) })
}

// memRecord is one stored checkpoint. The checkpoint is kept in its binary
// form, a fraction of the memory of the maps it decodes to, except for its
// long values (see keptValue); md is owned by the record.
// None of them is ever mutated, and writes is replaced whole on every
// change, so a reader that copied the record under the lock may read it
// after unlocking.
type memRecord struct {
	id     string
	parent string
	cp     []byte
	kept   []keptValue // values of the checkpoint that are not in cp
	md     Metadata
	writes []PendingWrite
}

// keptValue is a long value of a checkpoint, kept out of its binary form:
// compressed when that makes it much shorter (the JSON of a state often
// repeats one message or list many times), otherwise as it is.
type keptValue struct {
	key    string
	b      []byte
	n      int // the value's length
	packed bool
}

// keepMin is the length from which a value is kept apart from the record's
// binary form: below it, compressing it or keeping what Adopt handed over
// saves less than the slice header and key cost.
const keepMin = 1 << 10

// keepValue returns v, of at least keepMin bytes, as a record keeps it: its
// compressed form when that takes at most three quarters of it; otherwise
// v itself when adopted, or a copy.
func keepValue(key string, v []byte, adopt bool) keptValue {
	kv := keptValue{key: key, n: len(v)}
	if p := lz.Append(nil, v); len(p) <= len(v)/4*3 {
		kv.b, kv.packed = slices.Clip(p), true
	} else if adopt {
		kv.b = slices.Clip(v)
	} else {
		kv.b = slices.Clone(v)
	}
	return kv
}

// NewMemory returns an empty in-memory Saver.
func NewMemory() *Memory {
	return &Memory{threads: make(map[string]*memThread)}
}

var (
	_ Saver         = (*Memory)(nil)
	_ Lister        = (*Memory)(nil)
	_ ThreadDeleter = (*Memory)(nil)
	_ ThreadCopier  = (*Memory)(nil)
	_ ThreadLocker  = (*Memory)(nil)
)

func (m *Memory) thread(id string) *memThread {
	m.mu.RLock()
	t := m.threads[id]
	m.mu.RUnlock()
	return t
}

// lockThreadForWrite returns the thread, created if need be, locked for
// writing.
func (m *Memory) lockThreadForWrite(id string) *memThread {
	for {
		t := m.thread(id)
		if t == nil {
			m.mu.Lock()
			t = m.threads[id]
			if t == nil {
				t = &memThread{spaces: make(map[string]*memSpace)}
				m.threads[id] = t
			}
			m.mu.Unlock()
		}
		t.mu.Lock()
		if !t.deleted {
			return t
		}
		// Deleted between lookup and lock: look again.
		t.mu.Unlock()
	}
}

// Get implements Saver.
func (m *Memory) Get(ctx context.Context, cfg Config) (*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.ThreadID == "" {
		return nil, errNoThread("Get")
	}
	t := m.thread(cfg.ThreadID)
	if t == nil {
		return nil, notFound(cfg)
	}
	t.mu.RLock()
	sp := t.spaces[cfg.Namespace]
	var rec memRecord
	var ok bool
	if sp != nil {
		i := len(sp.recs) - 1
		ok = i >= 0
		if cfg.CheckpointID != "" {
			i, ok = sp.find(cfg.CheckpointID)
		}
		if ok {
			rec = *sp.recs[i]
		}
	}
	t.mu.RUnlock()
	if !ok {
		return nil, notFound(cfg)
	}
	return rec.tuple(cfg.ThreadID, cfg.Namespace)
}

func (r *memRecord) tuple(threadID, ns string) (*Tuple, error) {
	cp := new(Checkpoint)
	err := cp.UnmarshalBinary(r.cp)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q of thread %q: %w", r.id, threadID, err)
	}
	if r.kept != nil {
		n := 0
		for _, v := range r.kept {
			n += v.n
		}
		buf := make([]byte, 0, n)
		for _, v := range r.kept {
			start := len(buf)
			if !v.packed {
				buf = append(buf, v.b...)
			} else if buf, err = lz.AppendDecoded(buf, v.b); err != nil {
				return nil, fmt.Errorf("checkpoint %q of thread %q: value %q: %w", r.id, threadID, v.key, err)
			}
			cp.Values[v.key] = buf[start:len(buf):len(buf)]
		}
	}
	tp := &Tuple{
		Config:        Config{ThreadID: threadID, Namespace: ns, CheckpointID: r.id},
		Checkpoint:    cp,
		Metadata:      r.md.Clone(),
		PendingWrites: cloneWrites(r.writes),
	}
	if r.parent != "" {
		tp.ParentConfig = &Config{ThreadID: threadID, Namespace: ns, CheckpointID: r.parent}
	}
	return tp, nil
}

// Put implements Saver. A checkpoint without an id gets one from NewID. Its
// parent is cfg.CheckpointID, or cp.ParentID when cfg names none; the two
// must agree when both are set. Putting an id that is already stored replaces
// that checkpoint and its metadata and keeps its pending writes.
func (m *Memory) Put(ctx context.Context, cfg Config, cp *Checkpoint, md Metadata) (Config, error) {
	return m.put(ctx, cfg, cp, md, false)
}

// Adopt stores cp in s as s.Put does, but hands over cp's encoded bytes:
// the caller never modifies them again, so a saver that keeps checkpoints
// in memory may keep them as they are instead of copying them. The
// Checkpoint and its maps stay the caller's. Only a *Memory itself takes
// the bytes over; any other saver, a type that embeds a *Memory included,
// gets a Put, so a wrapper's Put is never bypassed. The graph adopts every
// checkpoint its JSON codec encodes (afresh for each, and never written to
// again); what another Codec returns, which may be a buffer it reuses, is
// Put.
func Adopt(ctx context.Context, s Saver, cfg Config, cp *Checkpoint, md Metadata) (Config, error) {
	if m, ok := s.(*Memory); ok {
		return m.put(ctx, cfg, cp, md, true)
	}
	return s.Put(ctx, cfg, cp, md)
}

func (m *Memory) put(ctx context.Context, cfg Config, cp *Checkpoint, md Metadata, adopt bool) (Config, error) {
	if err := ctx.Err(); err != nil {
		return Config{}, err
	}
	id, parent, err := resolve(cfg, cp)
	if err != nil {
		return Config{}, err
	}
	c := *cp // a shallow copy, to encode with the resolved ids
	c.ID, c.ParentID = id, parent
	var kept []keptValue
	for k, v := range cp.Values {
		if len(v) >= keepMin {
			kept = append(kept, keepValue(k, v, adopt))
		}
	}
	if kept != nil {
		c.Values = make(map[string][]byte, len(cp.Values)-len(kept))
		for k, v := range cp.Values {
			if len(v) < keepMin {
				c.Values[k] = v
			}
		}
	}
	bin, _ := c.AppendBinary(make([]byte, 0, 256))
	rec := &memRecord{id: id, parent: parent, cp: slices.Clip(bin), kept: kept, md: md.Clone()}
	t := m.lockThreadForWrite(cfg.ThreadID)
	defer t.mu.Unlock()
	sp := t.spaces[cfg.Namespace]
	if sp == nil {
		sp = &memSpace{}
		t.spaces[cfg.Namespace] = sp
	}
	if n := len(sp.recs); n == 0 || sp.recs[n-1].id < id {
		sp.recs = append(sp.recs, rec)
	} else if i, found := sp.find(id); found {
		rec.writes = sp.recs[i].writes
		sp.recs[i] = rec
	} else {
		sp.recs = slices.Insert(sp.recs, i, rec)
	}
	return Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: id}, nil
}

// resolve validates a Put and returns the id and parent id of the
// checkpoint to store.
func resolve(cfg Config, cp *Checkpoint) (id, parent string, err error) {
	if cfg.ThreadID == "" {
		return "", "", errNoThread("Put")
	}
	if cp == nil {
		return "", "", fmt.Errorf("%w: Put with a nil checkpoint", ErrInvalid)
	}
	if cfg.CheckpointID != "" && cp.ParentID != "" && cfg.CheckpointID != cp.ParentID {
		return "", "", fmt.Errorf("%w: Put of checkpoint %q: Config names parent %q but the checkpoint's ParentID is %q; make them agree",
			ErrInvalid, cp.ID, cfg.CheckpointID, cp.ParentID)
	}
	id, parent = cp.ID, cp.ParentID
	if id == "" {
		id = NewID()
	}
	if cfg.CheckpointID != "" {
		parent = cfg.CheckpointID
	}
	if parent == id {
		return "", "", fmt.Errorf("%w: checkpoint %q names itself as parent", ErrInvalid, id)
	}
	return id, parent, nil
}

// PutWrites implements Saver. The checkpoint cfg names must exist. Each
// write is stored with TaskID set to taskID. Writes are keyed by (task,
// Index), except on the special channels (see IsSpecialChannel), where a
// task has at most one write per channel and a new one replaces the old.
// Get returns the writes ordered by task id, and within a task the special
// channels first (by name), then the others by Index.
func (m *Memory) PutWrites(ctx context.Context, cfg Config, taskID string, writes []PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkWrites(cfg, taskID); err != nil {
		return err
	}
	ws := cloneWrites(writes)
	for i := range ws {
		ws[i].TaskID = taskID
	}
	t := m.thread(cfg.ThreadID)
	if t == nil {
		return writesNotFound(cfg)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sp := t.spaces[cfg.Namespace]
	if sp == nil {
		return writesNotFound(cfg)
	}
	i, ok := sp.find(cfg.CheckpointID)
	if !ok {
		return writesNotFound(cfg)
	}
	rec := sp.recs[i]
	merged := slices.Clone(rec.writes)
	for _, w := range ws {
		i, found := slices.BinarySearchFunc(merged, w, CompareWrites)
		switch {
		case !found:
			merged = slices.Insert(merged, i, w)
		case IsSpecialChannel(w.Channel):
			merged[i] = w
		}
	}
	// Replace, never modify: readers may hold the old slice.
	nrec := *rec
	nrec.writes = merged
	sp.recs[i] = &nrec
	return nil
}

func checkWrites(cfg Config, taskID string) error {
	if cfg.ThreadID == "" {
		return errNoThread("PutWrites")
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("%w: PutWrites needs Config.CheckpointID: pass the Config that Put returned", ErrInvalid)
	}
	if taskID == "" {
		return fmt.Errorf("%w: PutWrites with an empty task id", ErrInvalid)
	}
	return nil
}

// CompareWrites orders pending writes as Savers return them and says which
// two are the same write: by task id; within a task, writes to special
// channels first, by channel, then the other writes by Index. It returns 0
// for two writes one of which replaces or duplicates the other.
func CompareWrites(a, b PendingWrite) int {
	if c := cmp.Compare(a.TaskID, b.TaskID); c != 0 {
		return c
	}
	as, bs := IsSpecialChannel(a.Channel), IsSpecialChannel(b.Channel)
	switch {
	case as && bs:
		return cmp.Compare(a.Channel, b.Channel)
	case as:
		return -1
	case bs:
		return 1
	}
	return cmp.Compare(a.Index, b.Index)
}

// List implements Lister: the checkpoints of cfg's thread and namespace,
// newest first. When cfg.CheckpointID is set, only that checkpoint is
// considered. The iterator reads the saver as it goes and holds no lock
// while it yields.
func (m *Memory) List(ctx context.Context, cfg Config, opts ListOptions) iter.Seq2[*Tuple, error] {
	return func(yield func(*Tuple, error) bool) {
		if cfg.ThreadID == "" {
			yield(nil, errNoThread("List"))
			return
		}
		t := m.thread(cfg.ThreadID)
		if t == nil {
			return
		}
		// cursor: the next checkpoint's id sorts before it ("" = no bound).
		cursor := opts.Before
		if cfg.CheckpointID != "" && (cursor == "" || cfg.CheckpointID < cursor) {
			cursor = cfg.CheckpointID + "\x00"
		}
		n := 0
		for opts.Limit <= 0 || n < opts.Limit {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			var rec memRecord
			found := false
			t.mu.RLock()
			if sp := t.spaces[cfg.Namespace]; sp != nil {
				i := len(sp.recs)
				if cursor != "" {
					i, _ = sp.find(cursor)
				}
				for i > 0 {
					i--
					r := sp.recs[i]
					if r.md.Matches(opts.Filter) {
						rec, found = *r, true
						break
					}
				}
				if found {
					cursor = rec.id
				}
			}
			t.mu.RUnlock()
			if !found || (cfg.CheckpointID != "" && rec.id != cfg.CheckpointID) {
				return
			}
			tp, err := rec.tuple(cfg.ThreadID, cfg.Namespace)
			if err != nil {
				yield(nil, err)
				return
			}
			n++
			if !yield(tp, nil) {
				return
			}
		}
	}
}

// DeleteThread implements ThreadDeleter. Deleting a thread that does not
// exist is not an error.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errNoThread("DeleteThread")
	}
	m.mu.Lock()
	t := m.threads[threadID]
	delete(m.threads, threadID)
	m.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		t.deleted = true
		t.spaces = nil
		t.mu.Unlock()
	}
	return nil
}

// CopyThread implements ThreadCopier: every checkpoint of every namespace,
// with its metadata and pending writes, under the same ids. It returns an
// error wrapping ErrNotFound when src has no checkpoints and one wrapping
// ErrThreadExists when dst has some.
func (m *Memory) CopyThread(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if src == "" || dst == "" {
		return errNoThread("CopyThread")
	}
	if src == dst {
		return fmt.Errorf("%w: CopyThread from thread %q to itself", ErrInvalid, src)
	}
	st := m.thread(src)
	if st == nil {
		return fmt.Errorf("copy thread %q: %w", src, ErrNotFound)
	}
	// Records are never mutated, so the copy shares them.
	nt := &memThread{spaces: make(map[string]*memSpace)}
	st.mu.RLock()
	for ns, sp := range st.spaces {
		nt.spaces[ns] = &memSpace{recs: slices.Clone(sp.recs)}
	}
	st.mu.RUnlock()
	if len(nt.spaces) == 0 {
		return fmt.Errorf("copy thread %q: %w", src, ErrNotFound)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.threads[dst]; ok {
		return fmt.Errorf("copy thread %q to %q: %w; delete it first or pick another id", src, dst, ErrThreadExists)
	}
	m.threads[dst] = nt
	return nil
}

// TryLock implements ThreadLocker with a lock that is local to this
// process.
func (m *Memory) TryLock(threadID string) (unlock func(), err error) {
	return m.locks.TryLock(threadID)
}

func errNoThread(op string) error {
	return fmt.Errorf("%w: %s without a thread id: set Config.ThreadID", ErrInvalid, op)
}

func notFound(cfg Config) error {
	if cfg.CheckpointID == "" {
		return fmt.Errorf("thread %q namespace %q has no checkpoint: %w", cfg.ThreadID, cfg.Namespace, ErrNotFound)
	}
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w", cfg.CheckpointID, cfg.ThreadID, cfg.Namespace, ErrNotFound)
}

func writesNotFound(cfg Config) error {
	return fmt.Errorf("PutWrites: %w; Put the checkpoint before its writes", notFound(cfg))
}
