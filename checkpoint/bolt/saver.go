package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Keys inside a namespace bucket.
const (
	cpPrefix    = 'c' // 'c' + checkpoint id → record
	writePrefix = 'w' // 'w' + uvarint(len id) + id + write key → write
)

func nsKey(ns string) []byte { return append([]byte{'n'}, ns...) }

func cpKey(id string) []byte { return append([]byte{cpPrefix}, id...) }

// writesPrefix is the common prefix of the writes of checkpoint id; the
// length prefix keeps one id's writes apart from a longer id's.
func writesPrefix(id string) []byte {
	k := make([]byte, 0, 1+binary.MaxVarintLen64+len(id)+32)
	k = append(k, writePrefix)
	k = binary.AppendUvarint(k, uint64(len(id)))
	return append(k, id...)
}

// writeKey identifies a write as PutWrites dedupes them: by task and index,
// or by task and channel on the special channels.
func writeKey(prefix []byte, w *checkpoint.PendingWrite) []byte {
	k := binary.AppendUvarint(prefix, uint64(len(w.TaskID)))
	k = append(k, w.TaskID...)
	if checkpoint.IsSpecialChannel(w.Channel) {
		k = append(k, 0)
		return append(k, w.Channel...)
	}
	k = append(k, 1)
	return binary.BigEndian.AppendUint64(k, uint64(w.Index))
}

// nsBucket returns the bucket of a thread's namespace, or nil.
func nsBucket(tx *bbolt.Tx, threadID, ns string) *bbolt.Bucket {
	tb := tx.Bucket(threadsBucket).Bucket([]byte(threadID))
	if tb == nil {
		return nil
	}
	return tb.Bucket(nsKey(ns))
}

// rawTuple is a record and its writes copied out of a transaction, to be
// decoded after it.
type rawTuple struct {
	id     string
	rec    []byte
	writes [][]byte
}

// readTuple copies the record with key k (value v) and its writes.
func readTuple(b *bbolt.Bucket, k, v []byte) rawTuple {
	rt := rawTuple{id: string(k[1:])}
	prefix := writesPrefix(rt.id)
	n := len(v)
	c := b.Cursor()
	for wk, wv := c.Seek(prefix); wk != nil && bytes.HasPrefix(wk, prefix); wk, wv = c.Next() {
		n += len(wv)
		rt.writes = append(rt.writes, wv)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, v...)
	rt.rec = buf[:len(v):len(v)]
	for i, wv := range rt.writes {
		start := len(buf)
		buf = append(buf, wv...)
		rt.writes[i] = buf[start:len(buf):len(buf)]
	}
	return rt
}

// decode turns a rawTuple into a Tuple; md is its metadata when the caller
// decoded it already.
func (rt *rawTuple) decode(threadID, ns string) (*checkpoint.Tuple, error) {
	d := decoder{b: rt.rec}
	md, err := decodeHeader(&d)
	if err != nil {
		return nil, err
	}
	cp, err := decodeCheckpoint(&d, rt.id)
	if err != nil {
		return nil, err
	}
	tp := &checkpoint.Tuple{
		Config:     checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: rt.id},
		Checkpoint: cp,
		Metadata:   md,
	}
	if cp.ParentID != "" {
		tp.ParentConfig = &checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: cp.ParentID}
	}
	if len(rt.writes) > 0 {
		tp.PendingWrites = make([]checkpoint.PendingWrite, len(rt.writes))
		for i, wv := range rt.writes {
			wd := decoder{b: wv}
			if tp.PendingWrites[i], err = decodeWrite(&wd); err != nil {
				return nil, err
			}
		}
		slices.SortFunc(tp.PendingWrites, checkpoint.CompareWrites)
	}
	return tp, nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.ThreadID == "" {
		return nil, errNoThread("Get")
	}
	var rt rawTuple
	found := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
		if b == nil {
			return nil
		}
		var k, v []byte
		if cfg.CheckpointID != "" {
			k = cpKey(cfg.CheckpointID)
			v = b.Get(k)
		} else {
			k, v = lastBefore(b.Cursor(), []byte{cpPrefix + 1})
		}
		if v == nil {
			return nil
		}
		rt, found = readTuple(b, k, v), true
		return nil
	})
	if err != nil {
		return nil, s.wrap("Get", err)
	}
	if !found {
		return nil, notFound(cfg)
	}
	tp, err := rt.decode(cfg.ThreadID, cfg.Namespace)
	if err != nil {
		return nil, s.corrupt(cfg.ThreadID, cfg.Namespace, rt.id, err)
	}
	return tp, nil
}

// lastBefore returns the checkpoint with the greatest key below limit.
func lastBefore(c *bbolt.Cursor, limit []byte) (k, v []byte) {
	if k, _ = c.Seek(limit); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if len(k) == 0 || k[0] != cpPrefix {
		return nil, nil
	}
	return k, v
}

// Put implements checkpoint.Saver, with the same rules as checkpoint.Memory:
// a checkpoint without an id gets one from checkpoint.NewID; its parent is
// cfg.CheckpointID, or cp.ParentID when cfg names none, and the two must
// agree when both are set; putting a stored id again replaces that
// checkpoint and keeps its pending writes.
func (s *Saver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Config, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Config{}, err
	}
	if cfg.ThreadID == "" {
		return checkpoint.Config{}, errNoThread("Put")
	}
	if cp == nil {
		return checkpoint.Config{}, fmt.Errorf("%w: Put with a nil checkpoint", checkpoint.ErrInvalid)
	}
	if cfg.CheckpointID != "" && cp.ParentID != "" && cfg.CheckpointID != cp.ParentID {
		return checkpoint.Config{}, fmt.Errorf("%w: Put of checkpoint %q: Config names parent %q but the checkpoint's ParentID is %q; make them agree",
			checkpoint.ErrInvalid, cp.ID, cfg.CheckpointID, cp.ParentID)
	}
	id, parent := cp.ID, cp.ParentID
	if id == "" {
		id = checkpoint.NewID()
	}
	if cfg.CheckpointID != "" {
		parent = cfg.CheckpointID
	}
	if parent == id {
		return checkpoint.Config{}, fmt.Errorf("%w: checkpoint %q names itself as parent", checkpoint.ErrInvalid, id)
	}
	rec := encodeRecord(nil, cp, parent, &md)
	key := cpKey(id)
	err := s.update(func(tx *bbolt.Tx) error {
		tb, err := tx.Bucket(threadsBucket).CreateBucketIfNotExists([]byte(cfg.ThreadID))
		if err != nil {
			return err
		}
		b, err := tb.CreateBucketIfNotExists(nsKey(cfg.Namespace))
		if err != nil {
			return err
		}
		return b.Put(key, rec)
	})
	if err != nil {
		return checkpoint.Config{}, s.wrap("Put", err)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: id}, nil
}

// PutWrites implements checkpoint.Saver with the same rules as
// checkpoint.Memory: the checkpoint must exist; writes are keyed by (task,
// Index), except on the special channels, keyed by (task, channel) and
// replaced; Get returns them in checkpoint.CompareWrites order.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoint.Config, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case cfg.ThreadID == "":
		return errNoThread("PutWrites")
	case cfg.CheckpointID == "":
		return fmt.Errorf("%w: PutWrites needs Config.CheckpointID: pass the Config that Put returned", checkpoint.ErrInvalid)
	case taskID == "":
		return fmt.Errorf("%w: PutWrites with an empty task id", checkpoint.ErrInvalid)
	}
	type kv struct {
		k, v    []byte
		replace bool
	}
	prefix := writesPrefix(cfg.CheckpointID)
	kvs := make([]kv, len(writes))
	for i := range writes {
		w := writes[i]
		w.TaskID = taskID
		kvs[i] = kv{writeKey(slices.Clip(prefix), &w), encodeWrite(nil, &w), checkpoint.IsSpecialChannel(w.Channel)}
	}
	ckey := cpKey(cfg.CheckpointID)
	err := s.update(func(tx *bbolt.Tx) error {
		b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
		if b == nil || b.Get(ckey) == nil {
			return errMissing
		}
		for _, w := range kvs {
			if !w.replace && b.Get(w.k) != nil {
				continue
			}
			if err := b.Put(w.k, w.v); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errMissing) {
		return fmt.Errorf("PutWrites: %w; Put the checkpoint before its writes", notFound(cfg))
	}
	if err != nil {
		return s.wrap("PutWrites", err)
	}
	return nil
}

var errMissing = errors.New("checkpoint missing")

// listPage is how many checkpoints List reads per read transaction. List
// never holds a transaction while it yields: a caller that writes from its
// loop must not wait on its own reader.
const listPage = 32

// List implements checkpoint.Lister, with the same rules as
// checkpoint.Memory.List. It reads pages of checkpoints, newest first, with
// a cursor seek per page, and filters on the metadata before decoding the
// rest of a record.
func (s *Saver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		if cfg.ThreadID == "" {
			yield(nil, errNoThread("List"))
			return
		}
		limit := []byte{cpPrefix + 1} // keys sort before it
		if opts.Before != "" {
			limit = cpKey(opts.Before)
		}
		if cfg.CheckpointID != "" {
			if only := append(cpKey(cfg.CheckpointID), 0); bytes.Compare(only, limit) < 0 {
				limit = only
			}
		}
		n := 0
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			want := listPage
			if opts.Limit > 0 {
				want = min(want, opts.Limit-n)
			}
			var page []rawTuple
			more := false
			err := s.db.View(func(tx *bbolt.Tx) error {
				b := nsBucket(tx, cfg.ThreadID, cfg.Namespace)
				if b == nil {
					return nil
				}
				c := b.Cursor()
				for k, v := lastBefore(c, limit); k != nil; k, v = c.Prev() {
					if k[0] != cpPrefix {
						return nil
					}
					if len(page) == want {
						more = true
						return nil
					}
					limit = slices.Clone(k)
					if len(opts.Filter) > 0 {
						d := decoder{b: v}
						md, err := decodeHeader(&d)
						if err != nil {
							return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
						}
						if !md.Matches(opts.Filter) {
							continue
						}
					}
					page = append(page, readTuple(b, k, v))
				}
				return nil
			})
			if err != nil {
				yield(nil, s.wrap("List", err))
				return
			}
			for i := range page {
				if cfg.CheckpointID != "" && page[i].id != cfg.CheckpointID {
					return
				}
				tp, err := page[i].decode(cfg.ThreadID, cfg.Namespace)
				if err != nil {
					yield(nil, s.corrupt(cfg.ThreadID, cfg.Namespace, page[i].id, err))
					return
				}
				n++
				if !yield(tp, nil) {
					return
				}
			}
			if !more || (opts.Limit > 0 && n >= opts.Limit) {
				return
			}
		}
	}
}

// DeleteThread implements checkpoint.ThreadDeleter. Deleting a thread that
// does not exist is not an error.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errNoThread("DeleteThread")
	}
	err := s.update(func(tx *bbolt.Tx) error {
		err := tx.Bucket(threadsBucket).DeleteBucket([]byte(threadID))
		if errors.Is(err, berrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
	return s.wrap("DeleteThread", err)
}

// CopyThread implements checkpoint.ThreadCopier: every checkpoint of every
// namespace, with its metadata and pending writes, under the same ids, in
// one transaction.
func (s *Saver) CopyThread(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if src == "" || dst == "" {
		return errNoThread("CopyThread")
	}
	if src == dst {
		return fmt.Errorf("%w: CopyThread from thread %q to itself", checkpoint.ErrInvalid, src)
	}
	err := s.update(func(tx *bbolt.Tx) error {
		threads := tx.Bucket(threadsBucket)
		sb := threads.Bucket([]byte(src))
		if sb == nil {
			return fmt.Errorf("copy thread %q: %w", src, checkpoint.ErrNotFound)
		}
		if threads.Bucket([]byte(dst)) != nil {
			return fmt.Errorf("copy thread %q to %q: %w; delete it first or pick another id", src, dst, checkpoint.ErrThreadExists)
		}
		db, err := threads.CreateBucket([]byte(dst))
		if err != nil {
			return err
		}
		return sb.ForEachBucket(func(name []byte) error {
			from := sb.Bucket(name)
			to, err := db.CreateBucket(name)
			if err != nil {
				return err
			}
			to.FillPercent = 1 // written in key order: pack pages full
			return from.ForEach(func(k, v []byte) error { return to.Put(k, v) })
		})
	})
	if err != nil && (errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, checkpoint.ErrThreadExists)) {
		return err
	}
	return s.wrap("CopyThread", err)
}

func (s *Saver) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%s on %s: %w: the Saver is closed", op, s.path, err)
	}
	return fmt.Errorf("%s on %s: %w", op, s.path, err)
}

func (s *Saver) corrupt(threadID, ns, id string, err error) error {
	return fmt.Errorf("checkpoint %q of thread %q namespace %q in %s: %w; the file is damaged", id, threadID, ns, s.path, err)
}

func errNoThread(op string) error {
	return fmt.Errorf("%w: %s without a thread id: set Config.ThreadID", checkpoint.ErrInvalid, op)
}

func notFound(cfg checkpoint.Config) error {
	if cfg.CheckpointID == "" {
		return fmt.Errorf("thread %q namespace %q has no checkpoint: %w", cfg.ThreadID, cfg.Namespace, checkpoint.ErrNotFound)
	}
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w", cfg.CheckpointID, cfg.ThreadID, cfg.Namespace, checkpoint.ErrNotFound)
}
