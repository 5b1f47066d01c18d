package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// PostgreSQL error codes the Saver maps to checkpoint errors.
const (
	foreignKeyViolation = "23503"
	uniqueViolation     = "23505"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// row is one checkpoint as a query returns it.
type row struct {
	id       string
	metadata []byte
	cp       []byte
	writes   [][]byte
}

func (r *row) scan(rows pgx.CollectableRow) error {
	return rows.Scan(&r.id, &r.metadata, &r.cp, &r.writes)
}

func (r *row) tuple(threadID, ns string) (*checkpoint.Tuple, error) {
	tp := &checkpoint.Tuple{
		Config:     checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: r.id},
		Checkpoint: new(checkpoint.Checkpoint),
	}
	if err := tp.Metadata.UnmarshalBinary(r.metadata); err != nil {
		return nil, corrupt(threadID, ns, r.id, err)
	}
	if err := tp.Checkpoint.UnmarshalBinary(r.cp); err != nil {
		return nil, corrupt(threadID, ns, r.id, err)
	}
	if tp.Checkpoint.ID != r.id {
		return nil, corrupt(threadID, ns, r.id, fmt.Errorf("%w: the row holds checkpoint %q", checkpoint.ErrCorrupt, tp.Checkpoint.ID))
	}
	if p := tp.Checkpoint.ParentID; p != "" {
		tp.ParentConfig = &checkpoint.Config{ThreadID: threadID, Namespace: ns, CheckpointID: p}
	}
	if len(r.writes) > 0 {
		tp.PendingWrites = make([]checkpoint.PendingWrite, len(r.writes))
		for i, b := range r.writes {
			if err := tp.PendingWrites[i].UnmarshalBinary(b); err != nil {
				return nil, corrupt(threadID, ns, r.id, err)
			}
		}
		slices.SortFunc(tp.PendingWrites, checkpoint.CompareWrites)
	}
	return tp, nil
}

// Get implements checkpoint.Saver in one query: the checkpoint and its
// pending writes.
func (s *Saver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.ThreadID == "" {
		return nil, errNoThread("Get")
	}
	var r row
	var err error
	if cfg.CheckpointID == "" {
		err = s.pool.QueryRow(ctx, s.sql.getLatest, cfg.ThreadID, cfg.Namespace).Scan(&r.id, &r.metadata, &r.cp, &r.writes)
	} else {
		err = s.pool.QueryRow(ctx, s.sql.getByID, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID).Scan(&r.id, &r.metadata, &r.cp, &r.writes)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(cfg)
	}
	if err != nil {
		return nil, wrap("Get", err)
	}
	return r.tuple(cfg.ThreadID, cfg.Namespace)
}

// Put implements checkpoint.Saver, with the same rules as checkpoint.Memory:
// a checkpoint without an id gets one from checkpoint.NewID; its parent is
// cfg.CheckpointID, or cp.ParentID when cfg names none, and the two must
// agree when both are set; putting a stored id again replaces that
// checkpoint and keeps its pending writes. While this Saver holds the
// thread's lease, Put fails with ErrLeaseLost if another holder took it.
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
	cpb, _ := c.AppendBinary(make([]byte, 0, 256))
	mdb, _ := md.AppendBinary(make([]byte, 0, 64))
	var ok bool
	err := s.pool.QueryRow(ctx, s.sql.put, cfg.ThreadID, cfg.Namespace, id, parent, c.TS, c.Full, md.Step,
		filterDoc(&md), mdb, cpb, s.token(cfg.ThreadID)).Scan(&ok)
	if err != nil {
		return checkpoint.Config{}, wrap("Put", err)
	}
	if !ok {
		return checkpoint.Config{}, leaseLost("Put", cfg.ThreadID)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: id}, nil
}

// filterDoc is the metadata as List's filters see it (checkpoint.Metadata.Matches):
// Extra, with source, step and run_id over any Extra keys of those names.
func filterDoc(md *checkpoint.Metadata) map[string]string {
	doc := make(map[string]string, len(md.Extra)+3)
	for k, v := range md.Extra {
		doc[k] = v
	}
	doc["source"] = string(md.Source)
	doc["step"] = strconv.Itoa(md.Step)
	doc["run_id"] = md.RunID
	return doc
}

// PutWrites implements checkpoint.Saver with the same rules as
// checkpoint.Memory: the checkpoint must exist; writes are keyed by (task,
// Index), except on the special channels, keyed by (task, channel) and
// replaced; Get returns them in checkpoint.CompareWrites order. While this
// Saver holds the thread's lease, PutWrites fails with ErrLeaseLost if
// another holder took it.
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
	if len(writes) == 0 {
		var found bool
		if err := s.pool.QueryRow(ctx, s.sql.exists, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID).Scan(&found); err != nil {
			return wrap("PutWrites", err)
		}
		if !found {
			return writesNotFound(cfg)
		}
		return nil
	}
	// One statement may not touch a row twice: of writes with the same key,
	// keep the first, or on a special channel the last, as a sequence of
	// single writes would.
	keys := make([]string, 0, len(writes))
	recs := make([][]byte, 0, len(writes))
	at := make(map[string]int, len(writes))
	for _, w := range writes {
		w.TaskID = taskID
		k := writeKey(&w)
		i, dup := at[k]
		if dup && !checkpoint.IsSpecialChannel(w.Channel) {
			continue
		}
		rec, _ := w.AppendBinary(nil)
		if dup {
			recs[i] = rec
			continue
		}
		at[k] = len(keys)
		keys, recs = append(keys, k), append(recs, rec)
	}
	var ok bool
	err := s.pool.QueryRow(ctx, s.sql.putWrites, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID,
		s.token(cfg.ThreadID), taskID, keys, recs).Scan(&ok)
	if pgCode(err) == foreignKeyViolation {
		return writesNotFound(cfg)
	}
	if err != nil {
		return wrap("PutWrites", err)
	}
	if !ok {
		return leaseLost("PutWrites", cfg.ThreadID)
	}
	return nil
}

// writeKey identifies a write within its task as PutWrites dedupes them:
// "!" and the channel for a special channel, else "#" and the index.
func writeKey(w *checkpoint.PendingWrite) string {
	if checkpoint.IsSpecialChannel(w.Channel) {
		return "!" + w.Channel
	}
	return "#" + strconv.Itoa(w.Index)
}

// listPage is how many checkpoints List reads per query. List holds no
// connection while it yields: a caller that writes from its loop does not
// wait on its own reader.
const listPage = 32

// List implements checkpoint.Lister, with the same rules as
// checkpoint.Memory.List. It reads pages of checkpoints, newest first,
// filtered by the database.
func (s *Saver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		if cfg.ThreadID == "" {
			yield(nil, errNoThread("List"))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if cfg.CheckpointID != "" {
			s.listOne(ctx, cfg, opts, yield)
			return
		}
		filter := opts.Filter
		if filter == nil {
			filter = map[string]string{}
		}
		before := opts.Before
		n := 0
		for {
			want := listPage
			if opts.Limit > 0 {
				want = min(want, opts.Limit-n)
			}
			var rows pgx.Rows
			var err error
			if before == "" {
				rows, err = s.pool.Query(ctx, s.sql.listFirst, cfg.ThreadID, cfg.Namespace, filter, want)
			} else {
				rows, err = s.pool.Query(ctx, s.sql.listBefore, cfg.ThreadID, cfg.Namespace, filter, want, before)
			}
			var page []row
			if err == nil {
				page, err = pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
					var r row
					return r, r.scan(cr)
				})
			}
			if err != nil {
				yield(nil, wrap("List", err))
				return
			}
			for i := range page {
				tp, err := page[i].tuple(cfg.ThreadID, cfg.Namespace)
				if err != nil {
					yield(nil, err)
					return
				}
				n++
				if !yield(tp, nil) {
					return
				}
			}
			if len(page) < want || (opts.Limit > 0 && n >= opts.Limit) {
				return
			}
			before = page[len(page)-1].id
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

// listOne is List of the one checkpoint cfg names.
func (s *Saver) listOne(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions, yield func(*checkpoint.Tuple, error) bool) {
	if opts.Before != "" && cfg.CheckpointID >= opts.Before {
		return
	}
	tp, err := s.Get(ctx, cfg)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return
	case err != nil:
		yield(nil, err)
	case tp.Metadata.Matches(opts.Filter):
		yield(tp, nil)
	}
}

// DeleteThread implements checkpoint.ThreadDeleter: every checkpoint and
// pending write of the thread, in one statement. Deleting a thread that does
// not exist is not an error. A lease on the thread is left to its holder.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errNoThread("DeleteThread")
	}
	if _, err := s.pool.Exec(ctx, s.sql.deleteThread, threadID); err != nil {
		return wrap("DeleteThread", err)
	}
	return nil
}

// CopyThread implements checkpoint.ThreadCopier: every checkpoint of every
// namespace, with its metadata and pending writes, under the same ids, in
// one statement.
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
	var taken bool
	var copied int64
	err := s.pool.QueryRow(ctx, s.sql.copyThread, src, dst).Scan(&taken, &copied)
	if pgCode(err) == uniqueViolation {
		taken = true // another copy to dst won the race
	} else if err != nil {
		return wrap("CopyThread", err)
	}
	if taken {
		return fmt.Errorf("copy thread %q to %q: %w; delete it first or pick another id", src, dst, checkpoint.ErrThreadExists)
	}
	if copied == 0 {
		return fmt.Errorf("copy thread %q: %w", src, checkpoint.ErrNotFound)
	}
	return nil
}

func wrap(op string, err error) error {
	return fmt.Errorf("checkpoint/postgres: %s: %w", op, err)
}

func leaseLost(op, threadID string) error {
	return fmt.Errorf("checkpoint/postgres: %s on thread %q: %w: the lease expired and another run took the thread, so this run must stop (%w)",
		op, threadID, ErrLeaseLost, checkpoint.ErrThreadBusy)
}

func corrupt(threadID, ns, id string, err error) error {
	return fmt.Errorf("checkpoint %q of thread %q namespace %q: %w; the row is damaged", id, threadID, ns, err)
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

func writesNotFound(cfg checkpoint.Config) error {
	return fmt.Errorf("PutWrites: %w; Put the checkpoint before its writes", notFound(cfg))
}
