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

// A checkpoint's value is uvarint(len(md)) + md + cp: the binary forms of
// its Metadata and Checkpoint, metadata first so List filters without
// decoding the rest.
func encodeRecord(cp *checkpoint.Checkpoint, md *checkpoint.Metadata) []byte {
	mdb, _ := md.AppendBinary(make([]byte, 0, 256))
	rec := binary.AppendUvarint(make([]byte, 0, len(mdb)+256), uint64(len(mdb)))
	rec = append(rec, mdb...)
	rec, _ = cp.AppendBinary(rec)
	return rec
}

// splitRecord returns the metadata and checkpoint parts of a value.
func splitRecord(v []byte) (md, cp []byte, err error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) {
		return nil, nil, checkpoint.ErrCorrupt
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

func decodeMetadata(v []byte) (checkpoint.Metadata, error) {
	var md checkpoint.Metadata
	mdb, _, err := splitRecord(v)
	if err == nil {
		err = md.UnmarshalBinary(mdb)
	}
	return md, err
}

// readTuple decodes the checkpoint with key k and value v, and its writes,
// inside the transaction; the result owns all its memory.
func readTuple(b *bbolt.Bucket, threadID, ns string, k, v []byte) (*checkpoint.Tuple, error) {
	id := string(k[1:])
	mdb, cpb, err := splitRecord(v)
	if err != nil {
		return nil, err
	}
	tp := &checkpoint.Tuple{
		Config:     checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: id},
		Checkpoint: new(checkpoint.Checkpoint),
	}
	if err := tp.Metadata.UnmarshalBinary(mdb); err != nil {
		return nil, err
	}
	if err := tp.Checkpoint.UnmarshalBinary(cpb); err != nil {
		return nil, err
	}
	if tp.Checkpoint.ID != id {
		return nil, fmt.Errorf("%w: record of %q holds checkpoint %q", checkpoint.ErrCorrupt, id, tp.Checkpoint.ID)
	}
	if p := tp.Checkpoint.ParentID; p != "" {
		tp.ParentConfig = &checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: p}
	}
	prefix := writesPrefix(id)
	c := b.Cursor()
	for wk, wv := c.Seek(prefix); wk != nil && bytes.HasPrefix(wk, prefix); wk, wv = c.Next() {
		var w checkpoint.PendingWrite
		if err := w.UnmarshalBinary(wv); err != nil {
			return nil, err
		}
		tp.PendingWrites = append(tp.PendingWrites, w)
	}
	slices.SortFunc(tp.PendingWrites, checkpoint.CompareWrites)
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
	var tp *checkpoint.Tuple
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
		var err error
		if tp, err = readTuple(b, cfg.ThreadID, cfg.Namespace, k, v); err != nil {
			return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("Get", err)
	}
	if tp == nil {
		return nil, notFound(cfg)
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
	c := *cp // a shallow copy, to encode with the resolved ids
	c.ID, c.ParentID = id, parent
	rec := encodeRecord(&c, &md)
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
		// Checkpoint ids grow with time, so records arrive in key order:
		// split pages nearly full instead of in half.
		b.FillPercent = 0.95
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
		v, _ := w.AppendBinary(nil)
		kvs[i] = kv{writeKey(slices.Clip(prefix), &w), v, checkpoint.IsSpecialChannel(w.Channel)}
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
			var page []*checkpoint.Tuple
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
						md, err := decodeMetadata(v)
						if err != nil {
							return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
						}
						if !md.Matches(opts.Filter) {
							continue
						}
					}
					tp, err := readTuple(b, cfg.ThreadID, cfg.Namespace, k, v)
					if err != nil {
						return s.corrupt(cfg.ThreadID, cfg.Namespace, string(k[1:]), err)
					}
					page = append(page, tp)
				}
				return nil
			})
			if err != nil {
				yield(nil, s.wrap("List", err))
				return
			}
			for _, tp := range page {
				if cfg.CheckpointID != "" && tp.Checkpoint.ID != cfg.CheckpointID {
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
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w; the file is damaged", id, threadID, ns, err)
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
