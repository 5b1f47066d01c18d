package bolt

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Format is the version of the file layout this package writes. Open
// refuses files of another version, except files of formats 1 and 2, which
// it reads and marks as format 3 (their records stay as they are; new
// records take the smaller layouts of later formats, which versions that
// write an earlier one do not read: format 2's layout, and format 3's
// compressed values).
const Format = "agentgraph.checkpoint/3"

const (
	format1 = "agentgraph.checkpoint/1"
	format2 = "agentgraph.checkpoint/2"
)

// Errors Open returns, wrapped with the file's path and what to do.
var (
	// ErrNotBolt reports a file that is not a bbolt database.
	ErrNotBolt = errors.New("checkpoint/bolt: not a bbolt database file")
	// ErrIncompatible reports a bbolt file that this version cannot use: one
	// written by another program, by another version of this package, or by
	// an incompatible version of bbolt.
	ErrIncompatible = errors.New("checkpoint/bolt: incompatible file")
	// ErrLocked reports a file that another process, or another Saver in
	// this one, holds open.
	ErrLocked = errors.New("checkpoint/bolt: file is locked by another process or another open Saver")
)

// allocStep is how much room the file gets beyond what a commit needs when
// it grows.
const allocStep = 16 << 10

// pageSize is the page size of new files. Checkpoints are appended one per
// commit, and bbolt splits such a page leaving the last three records
// behind: with 8 KiB pages of ~300-byte records that wastes about a tenth
// of a page, with 4 KiB pages a fifth. (16 KiB pages measured larger files:
// each commit copies a larger page.)
const pageSize = 8 << 10

var (
	metaBucket    = []byte("agentgraph")
	formatKey     = []byte("format")
	threadsBucket = []byte("threads")
)

// Option configures Open.
type Option func(*options)

type options struct {
	noSync  bool
	timeout time.Duration
}

// WithoutSync makes commits skip fsync. What Put wrote then survives the process
// being killed (the kernel still writes it out) but not a crash of the
// machine or a power loss, which may also corrupt the file. It makes commits
// several times faster; use it for caches and tests, not for threads users
// must not lose.
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithTimeout sets how long Open waits for another process to close the file
// before it fails with ErrLocked. The default is one second; zero or less
// means the default.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Saver is a checkpoint.Saver on one bbolt file. It implements
// checkpoint.Lister, ThreadDeleter, ThreadCopier and ThreadLocker and is safe
// for concurrent use. Put and PutWrites return once their data is committed
// (and, unless WithoutSync, fsynced); concurrent calls share one commit.
//
// Layout: a bucket per thread holds a bucket per namespace, which holds the
// checkpoints under 'c'+id and their pending writes under 'w'+id+task+key,
// records too long to sit among them under 'v'+id, the table of the
// namespace's run ids under 'r' and 's', and the id of its latest full
// checkpoint under 'f' (see the record layouts in saver.go: a full
// checkpoint stores only what its values add to the previous one's).
// The latest checkpoint and List's pages are found by cursor seeks, never
// by reading the whole thread, and deleting a thread drops its bucket.
type Saver struct {
	db    *bbolt.DB
	path  string
	locks checkpoint.ThreadLocks

	// Group commit: see update.
	wmu     sync.Mutex
	queue   []*writeReq
	leading bool

	closeOnce sync.Once
	closeErr  error
}

var (
	_ checkpoint.Saver         = (*Saver)(nil)
	_ checkpoint.Lister        = (*Saver)(nil)
	_ checkpoint.ThreadDeleter = (*Saver)(nil)
	_ checkpoint.ThreadCopier  = (*Saver)(nil)
	_ checkpoint.ThreadLocker  = (*Saver)(nil)
)

// Open opens the checkpoint file at path, creating it if it does not exist.
// Only one process may have the file open: Open waits up to Timeout for
// another to close it, then fails with ErrLocked. It fails with ErrNotBolt
// when the file is not a bbolt database and with ErrIncompatible when it is
// one this package did not write or wrote in another Format.
//
// The freelist is not written at each commit but rebuilt when the file is
// opened (bbolt's NoFreelistSync), which makes commits cheaper and opening
// a large file slower; pages freed by deleted threads are reused.
func Open(path string, opts ...Option) (*Saver, error) {
	o := options{timeout: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		o.timeout = time.Second
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        o.timeout,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		PageSize:       pageSize,
	})
	switch {
	case err == nil:
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: %w (waited %v): close the other Saver or process, or use another file", path, ErrLocked, o.timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open %s: %w (%v): pass the path of a checkpoint file, or of a file that does not exist yet", path, ErrNotBolt, err)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("open %s: %w: written by an incompatible version of bbolt (%v)", path, ErrIncompatible, err)
	default:
		return nil, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	db.NoSync, db.NoGrowSync = o.noSync, o.noSync
	// bbolt grows a file smaller than AllocSize to its next power-of-two
	// map size, up to twice what it holds; grow in small steps instead.
	// A step is a truncate and (unless WithoutSync) an fsync, in a commit
	// that fsyncs anyway.
	db.AllocSize = allocStep
	if err := db.Update(initFile); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Saver{db: db, path: path}, nil
}

// initFile checks the format of an existing file or lays out a new one.
func initFile(tx *bbolt.Tx) error {
	if meta := tx.Bucket(metaBucket); meta != nil {
		got := string(meta.Get(formatKey))
		if got == format1 || got == format2 {
			if err := meta.Put(formatKey, []byte(Format)); err != nil {
				return err
			}
			got = Format
		}
		if got != Format {
			return fmt.Errorf("%w: file format %q, this version reads %q: open it with the version that wrote it", ErrIncompatible, got, Format)
		}
		if tx.Bucket(threadsBucket) == nil {
			return fmt.Errorf("%w: no threads bucket", ErrIncompatible)
		}
		return nil
	}
	var other []byte
	if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		other = name
		return errStop
	}); err != nil && !errors.Is(err, errStop) {
		return err
	}
	if other != nil {
		return fmt.Errorf("%w: a bbolt database of another program (it has a bucket %q and no %q bucket): use a new file for checkpoints", ErrIncompatible, other, metaBucket)
	}
	meta, err := tx.CreateBucket(metaBucket)
	if err != nil {
		return err
	}
	if err := meta.Put(formatKey, []byte(Format)); err != nil {
		return err
	}
	_, err = tx.CreateBucket(threadsBucket)
	return err
}

var errStop = errors.New("stop")

// Close closes the file; it waits for calls in progress. Calling it again
// returns the first call's result.
func (s *Saver) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

// Path returns the path of the file.
func (s *Saver) Path() string { return s.path }

// TryLock implements checkpoint.ThreadLocker. The lock is held in this
// process, which is the only one with the file open.
func (s *Saver) TryLock(threadID string) (unlock func(), err error) {
	return s.locks.TryLock(threadID)
}

// writeReq is one write transaction waiting for a commit.
type writeReq struct {
	fn   func(*bbolt.Tx) error
	err  error
	done chan bool // true: err is set; false: become the leader
}

// update runs fn in a write transaction and returns once it is committed.
// Calls that arrive while a commit is in progress queue up, and the next
// commit runs all of them in one transaction: under load, one fsync serves
// many writers, and a lone writer never waits for a batch to fill (bbolt's
// DB.Batch would wait up to MaxBatchDelay). fn may run more than once if a
// shared transaction fails, so it must be idempotent.
func (s *Saver) update(fn func(*bbolt.Tx) error) error {
	r := &writeReq{fn: fn, done: make(chan bool, 1)}
	s.wmu.Lock()
	s.queue = append(s.queue, r)
	if s.leading {
		s.wmu.Unlock()
		if ready := <-r.done; ready {
			return r.err
		}
		// Handed leadership; r is still at the head of the queue.
		s.wmu.Lock()
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

func (s *Saver) commit(batch []*writeReq) {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, r := range batch {
			if err := r.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		// One call failed and took the others with it: run each alone.
		for _, r := range batch {
			r.err = s.db.Update(r.fn)
		}
	} else {
		for _, r := range batch {
			r.err = err
		}
	}
	for _, r := range batch {
		r.done <- true
	}
}
