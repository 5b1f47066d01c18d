package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// runArgs is the River job of one run. Only the head of a thread's queue,
// its oldest pending or running run, has a job: the run that ends inserts
// the next one's, in the transaction that ends it.
type runArgs struct {
	RunID string `json:"run_id"`
}

func (runArgs) Kind() string { return "agentgraph_run" }

// cleanArgs is the periodic job that deletes the events of runs finished
// longer than EventRetention ago.
type cleanArgs struct{}

func (cleanArgs) Kind() string { return "agentgraph_clean_run_events" }

type cleanWorker struct {
	river.WorkerDefaults[cleanArgs]
	p *pgRuns
}

func (w *cleanWorker) Work(ctx context.Context, _ *river.Job[cleanArgs]) error {
	_, err := w.p.pool.Exec(ctx, `DELETE FROM agentgraph_server_run_events e
		WHERE NOT EXISTS (SELECT 1 FROM agentgraph_server_runs r WHERE r.run_id = e.run_id AND (r.finished_at IS NULL OR r.finished_at > now() - $1::interval))`,
		w.p.cfg.EventRetention)
	return err
}

type runWorker struct {
	river.WorkerDefaults[runArgs]
	p *pgRuns
}

// NextRetry retries a run whose process died, or whose records could not
// be written, after a second.
func (w *runWorker) NextRetry(*river.Job[runArgs]) time.Time { return time.Now().Add(time.Second) }

func (w *runWorker) Work(ctx context.Context, job *river.Job[runArgs]) error {
	return w.p.work(ctx, job.Args.RunID, job.Attempt)
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func isTerminal(status string) bool { return status != "pending" && status != "running" }

// loadRun reads a run's record, its status column copied in.
func loadRun(ctx context.Context, q querier, id string, forUpdate bool) (*storedRun, string, error) {
	sql := "SELECT status, cancel, record FROM agentgraph_server_runs WHERE run_id = $1"
	if forUpdate {
		sql += " FOR UPDATE"
	}
	var status, cancel string
	var raw []byte
	if err := q.QueryRow(ctx, sql, id).Scan(&status, &cancel, &raw); err != nil {
		return nil, "", err
	}
	var sr storedRun
	if err := json.Unmarshal(raw, &sr); err != nil {
		return nil, "", fmt.Errorf("server: run %s: bad record: %w", id, err)
	}
	sr.Run.Status = status
	return &sr, cancel, nil
}

func loadThread(ctx context.Context, q querier, id string, forUpdate bool) (*threadRecord, error) {
	sql := "SELECT record FROM agentgraph_server_threads WHERE thread_id = $1"
	if forUpdate {
		sql += " FOR UPDATE"
	}
	var raw []byte
	if err := q.QueryRow(ctx, sql, id).Scan(&raw); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, notFound("Thread with ID %s not found", id)
		}
		return nil, err
	}
	var t threadRecord
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("server: thread %s: bad record: %w", id, err)
	}
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	return &t, nil
}

func saveThread(ctx context.Context, q querier, t *threadRecord) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO agentgraph_server_threads (thread_id, record) VALUES ($1, $2)
		ON CONFLICT (thread_id) DO UPDATE SET record = excluded.record`, t.ThreadID, b)
	return err
}

func saveRun(ctx context.Context, q querier, sr *storedRun) error {
	b, err := json.Marshal(sr)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE agentgraph_server_runs SET record = $2, status = $3 WHERE run_id = $1`, sr.Run.RunID, b, sr.Run.Status)
	return err
}

// inflight lists the thread's pending and running runs, oldest first.
func inflight(ctx context.Context, q querier, threadID string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT run_id FROM agentgraph_server_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY seq`, threadID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (p *pgRuns) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.pool, fn)
}

// createRun validates a run request, applies the multitask strategy and
// records the run, with its River job when it heads its thread's queue;
// it returns the run's and its thread's ids.
func (p *pgRuns) createRun(ctx context.Context, threadID string, body *runCreate, stateless bool) (string, string, error) {
	s := p.s
	g, strategy, k, err := s.checkRun(body, stateless)
	if err != nil {
		return "", "", err
	}
	if p.isClosing() {
		return "", "", errClosing
	}
	runID := newUUID7()
	if stateless {
		threadID = newUUID7()
	} else if err := validID("thread_id", threadID); err != nil {
		return "", "", err
	}
	err = p.inTx(ctx, func(tx pgx.Tx) error {
		if stateless || body.IfNotExists == "create" {
			t := &threadRecord{ThreadID: threadID, CreatedAt: now(), Metadata: map[string]any{}, Status: "idle", Config: map[string]any{}}
			t.UpdatedAt = t.CreatedAt
			b, _ := json.Marshal(t)
			if _, err := tx.Exec(ctx, `INSERT INTO agentgraph_server_threads (thread_id, record) VALUES ($1, $2) ON CONFLICT DO NOTHING`, threadID, b); err != nil {
				return err
			}
		}
		t, err := loadThread(ctx, tx, threadID, true)
		if err != nil {
			return err
		}
		before, err := inflight(ctx, tx, threadID)
		if err != nil {
			return err
		}
		if len(before) > 0 && strategy == "reject" {
			return badField("multitask_strategy", "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.")
		}
		assistantID := uuid5(graphNamespace, g.id)
		t.Metadata["graph_id"] = g.id
		t.Metadata["assistant_id"] = assistantID
		t.Status = "busy"
		t.UpdatedAt = now()
		if err := saveThread(ctx, tx, t); err != nil {
			return err
		}
		md := map[string]any{"created_by": "system", "graph_id": g.id, "assistant_id": assistantID}
		for key, v := range t.Metadata {
			md[key] = v
		}
		for key, v := range body.Metadata {
			md[key] = v
		}
		created := now()
		var at time.Time
		if body.AfterSeconds > 0 {
			at = time.Time(created).Add(time.Duration(body.AfterSeconds * float64(time.Second)))
			created = wireTime(at)
		}
		sr := &storedRun{GraphID: g.id, Run: runRecord{RunID: runID, ThreadID: threadID, AssistantID: assistantID, Metadata: md, Status: "pending",
			Kwargs: k, MultitaskStrategy: strategy, CreatedAt: created, UpdatedAt: now()}}
		b, err := json.Marshal(sr)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO agentgraph_server_runs (run_id, thread_id, status, record) VALUES ($1, $2, 'pending', $3)`, runID, threadID, b); err != nil {
			return err
		}
		if len(before) == 0 {
			if _, err := p.river.InsertTx(ctx, tx, runArgs{RunID: runID}, &river.InsertOpts{Queue: runQueue, ScheduledAt: at}); err != nil {
				return fmt.Errorf("server: enqueue run: %w", err)
			}
		}
		if strategy == "interrupt" || strategy == "rollback" {
			for _, old := range before {
				if err := p.cancelTx(ctx, tx, old, strategy); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	return runID, threadID, nil
}

// cancel stops a run wherever it is: a running run (or the queued head of
// its thread) by a flag and a notification to every server, a run waiting
// behind another at once. It reports whether the run exists.
func (p *pgRuns) cancel(ctx context.Context, runID, action string) (bool, error) {
	var threadID string
	err := p.pool.QueryRow(ctx, `SELECT thread_id FROM agentgraph_server_runs WHERE run_id = $1`, runID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, p.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agentgraph_server_threads WHERE thread_id = $1 FOR UPDATE`, threadID); err != nil {
			return err
		}
		return p.cancelTx(ctx, tx, runID, action)
	})
}

// cancelTx cancels runID in tx, whose caller holds the thread's row lock.
func (p *pgRuns) cancelTx(ctx context.Context, tx pgx.Tx, runID, action string) error {
	sr, _, err := loadRun(ctx, tx, runID, true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil || isTerminal(sr.Run.Status) {
		return err
	}
	q, err := inflight(ctx, tx, sr.Run.ThreadID)
	if err != nil {
		return err
	}
	if len(q) > 0 && q[0] == runID {
		// The head: its job, wherever it runs or will run, stops it.
		if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET cancel = $2 WHERE run_id = $1`, runID, action); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, cancelChannel, runID)
		return err
	}
	// Waiting behind another run: it never started, so it ends here.
	if action == "rollback" {
		_, err = tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1`, runID)
	} else {
		sr.Run.Status, sr.Run.UpdatedAt = "interrupted", now()
		if err = saveRun(ctx, tx, sr); err == nil {
			_, err = tx.Exec(ctx, `UPDATE agentgraph_server_runs SET finished_at = now() WHERE run_id = $1`, runID)
		}
	}
	if err != nil {
		return err
	}
	return endEvents(ctx, tx, runID)
}

// endEvents marks the end of a run's stream with an event of no name.
func endEvents(ctx context.Context, q querier, runID string) error {
	_, err := q.Exec(ctx, `WITH e AS (
			INSERT INTO agentgraph_server_run_events (run_id, seq, event, data)
			SELECT $1, coalesce(max(seq) + 1, 0), '', '' FROM agentgraph_server_run_events WHERE run_id = $1
			ON CONFLICT DO NOTHING RETURNING run_id)
		SELECT pg_notify($2, run_id) FROM e`, runID, eventsChannel)
	return err
}

// work executes one run, the job of River's attempt number attempt.
func (p *pgRuns) work(jobCtx context.Context, runID string, attempt int) error {
	s := p.s
	sr, cancelAction, err := loadRun(jobCtx, p.pool, runID, false)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted
	}
	if err != nil {
		return err
	}
	if isTerminal(sr.Run.Status) {
		return nil // ended by an earlier attempt
	}
	ctx, cancel := context.WithCancelCause(jobCtx)
	defer cancel(nil)
	p.mu.Lock()
	p.running[runID] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.running, runID)
		p.mu.Unlock()
	}()
	// Registered first, then read: a cancel sent in between is not lost.
	err = p.pool.QueryRow(jobCtx, `UPDATE agentgraph_server_runs SET status = 'running', attempt = $2 WHERE run_id = $1 RETURNING cancel`, runID, attempt).Scan(&cancelAction)
	if err != nil {
		return err
	}
	if cancelAction != "" {
		cancel(errCancelled)
	}
	g := s.cfg.graphs[sr.GraphID]
	var fn runFunc
	if g == nil {
		err = fmt.Errorf("server: graph %q is not served by this server: give every server the same graphs", sr.GraphID)
	} else {
		k := sr.Run.Kwargs
		k.Metadata = sr.Run.Metadata
		fn, err = g.handle.prepare(&k)
	}
	if err != nil {
		return p.finish(jobCtx, sr, g, nil, err, nil)
	}
	if _, err := p.pool.Exec(jobCtx, `UPDATE agentgraph_server_threads SET record = jsonb_set(record, '{status}', '"busy"') WHERE thread_id = $1`, sr.Run.ThreadID); err != nil {
		return err
	}
	resume := sr.Resume
	if !resume && attempt > 1 {
		// A retry after the first attempt's process died: if it saved the
		// input, continue its pending step rather than apply it again.
		resume = inputSaved(jobCtx, g, sr.Run.ThreadID, runID)
	}
	var next int
	if err := p.pool.QueryRow(jobCtx, `SELECT coalesce(max(seq) + 1, 0) FROM agentgraph_server_run_events WHERE run_id = $1`, runID).Scan(&next); err != nil {
		return err
	}
	emit := func(event string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": "EncodingError", "message": err.Error()})
			event = "error"
		}
		// A lost event is not worth failing the run for; a stale attempt's
		// is dropped.
		_, _ = p.pool.Exec(context.WithoutCancel(ctx), `WITH e AS (
				INSERT INTO agentgraph_server_run_events (run_id, seq, event, data) VALUES ($1, $2, $3, $4)
				ON CONFLICT DO NOTHING RETURNING run_id)
			SELECT pg_notify($5, run_id) FROM e`, runID, next, event, b, eventsChannel)
		next++
	}
	emit("metadata", map[string]any{"run_id": runID, "attempt": attempt})
	if st := s.cfg.store; st != nil {
		ctx = graph.ContextWithStore(ctx, st)
	}
	rc := runContext{threadID: sr.Run.ThreadID, runID: runID, graphID: g.id, assistantID: sr.Run.AssistantID, emit: emit, resumePending: resume, drain: p.drain}
	var result json.RawMessage
	if ctx.Err() == nil {
		result, err = runSafely(ctx, fn, rc)
	} else {
		err = context.Cause(ctx)
	}
	if errors.Is(err, checkpoint.ErrThreadBusy) && ctx.Err() == nil {
		// The thread's lease is held by a process that died with it: try
		// again once the lease has expired.
		return river.JobSnooze(time.Second)
	}
	stoppedBy := error(nil)
	if ctx.Err() != nil {
		stoppedBy = context.Cause(ctx)
	}
	if err != nil && stoppedBy == nil && !errors.Is(err, graph.ErrDrained) {
		emit("error", map[string]string{"error": errorName(err), "message": err.Error()})
	}
	return p.finish(jobCtx, sr, g, result, err, stoppedBy)
}

func inputSaved(ctx context.Context, g *registered, threadID, runID string) bool {
	if g == nil {
		return false
	}
	hist, err := g.handle.history(ctx, threadID, historyBody{Limit: ptr(1), Metadata: map[string]any{"run_id": runID}})
	return err == nil && len(hist) > 0
}

// finish records how a run ended and hands its thread to the next run.
// A run stopped by a shutdown goes back to River for any server to
// continue.
func (p *pgRuns) finish(jobCtx context.Context, sr *storedRun, g *registered, result json.RawMessage, err, stoppedBy error) error {
	ctx := context.WithoutCancel(jobCtx)
	runID, threadID := sr.Run.RunID, sr.Run.ThreadID
	drained := errors.Is(err, graph.ErrDrained)
	shutdown := drained || (stoppedBy != nil && !errors.Is(stoppedBy, errCancelled) && p.isClosing())
	if shutdown {
		sr.Resume = drained || inputSaved(ctx, g, threadID, runID)
		sr.Run.Status, sr.Run.UpdatedAt = "pending", now()
		if err := saveRun(ctx, p.pool, sr); err != nil {
			return err
		}
		return river.JobSnooze(0)
	}
	var action string
	if err := p.pool.QueryRow(ctx, `SELECT cancel FROM agentgraph_server_runs WHERE run_id = $1`, runID).Scan(&action); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	status := "success"
	switch {
	case stoppedBy != nil && errors.Is(stoppedBy, errCancelled):
		status = "interrupted"
	case stoppedBy != nil:
		status = "error"
		err = fmt.Errorf("server: run stopped after %s (PostgresConfig.RunTimeout): %w", p.cfg.RunTimeout, context.Cause(jobCtx))
	case err != nil:
		status = "error"
	}
	rollback := status == "interrupted" && action == "rollback"
	temporary := sr.Run.Kwargs.Temporary
	var st *threadState
	if g != nil && !rollback && !temporary {
		st, _ = g.handle.state(ctx, checkpoint.Config{ThreadID: threadID}, false)
	}
	if rollback && g != nil {
		p.s.rollbackThread(ctx, g, threadID, runID)
	}
	out := result
	if status == "error" && err != nil {
		out, _ = json.Marshal(map[string]any{"__error__": map[string]string{"error": errorName(err), "message": err.Error()}})
	}
	txErr := p.inTx(ctx, func(tx pgx.Tx) error {
		t, err := loadThread(ctx, tx, threadID, true)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) { // the thread was deleted meanwhile
				return nil
			}
			return err
		}
		if rollback {
			if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1`, runID); err != nil {
				return err
			}
		} else {
			sr.Run.Status, sr.Run.UpdatedAt = status, now()
			if err := saveRun(ctx, tx, sr); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE agentgraph_server_runs SET result = $2, finished_at = now() WHERE run_id = $1`, runID, nullJSON(out)); err != nil {
				return err
			}
		}
		if err := endEvents(ctx, tx, runID); err != nil {
			return err
		}
		if temporary {
			_, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_threads WHERE thread_id = $1`, threadID)
			if err == nil {
				_, err = tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE thread_id = $1`, threadID)
			}
			return err
		}
		t.UpdatedAt = now()
		if st != nil && st.Checkpoint != nil {
			t.Values = st.Values
			t.Interrupts = map[string][]wireInterrupt{}
			for _, task := range st.Tasks {
				if len(task.Interrupts) > 0 {
					t.Interrupts[task.ID] = task.Interrupts
				}
			}
		}
		rest, err := inflight(ctx, tx, threadID)
		if err != nil {
			return err
		}
		rest = deleteID(rest, runID)
		switch {
		case len(rest) > 0:
			t.Status = "busy"
		case status == "error":
			t.Status = "error"
		case st != nil && len(st.Next) > 0:
			t.Status = "interrupted"
		default:
			t.Status = "idle"
		}
		if err := saveThread(ctx, tx, t); err != nil {
			return err
		}
		if len(rest) > 0 {
			if _, err := p.river.InsertTx(ctx, tx, runArgs{RunID: rest[0]}, &river.InsertOpts{Queue: runQueue}); err != nil {
				return fmt.Errorf("server: enqueue the thread's next run: %w", err)
			}
		}
		return nil
	})
	if txErr != nil {
		return txErr
	}
	if temporary {
		if d, ok := p.s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			_ = d.DeleteThread(ctx, threadID)
		}
	}
	return nil
}

func deleteID(ids []string, id string) []string {
	out := ids[:0:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// rollbackThread undoes what run runID wrote to the thread: its next run
// starts from the last checkpoint written before it, or from nothing.
func (s *Server) rollbackThread(ctx context.Context, g *registered, threadID, runID string) {
	hist, err := g.handle.history(ctx, threadID, historyBody{Limit: ptr(1 << 20)})
	if err != nil {
		return
	}
	target := ""
	for _, h := range hist {
		if h.Metadata["run_id"] != runID && h.Checkpoint != nil {
			target = h.Checkpoint.CheckpointID
			break
		}
	}
	if target == "" {
		if d, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			_ = d.DeleteThread(ctx, threadID)
		}
		return
	}
	_, _ = g.handle.update(ctx, checkpoint.Config{ThreadID: threadID, CheckpointID: target}, nil, graph.END)
}

// events returns run id's events from seq from on, and whether its stream
// has ended.
func (p *pgRuns) events(ctx context.Context, runID string, from int) ([]sseEvent, bool, error) {
	rows, err := p.pool.Query(ctx, `SELECT event, data FROM agentgraph_server_run_events WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT 1000`, runID, from)
	if err != nil {
		return nil, false, err
	}
	var out []sseEvent
	ended := false
	for rows.Next() {
		var ev sseEvent
		if err := rows.Scan(&ev.event, &ev.data); err != nil {
			rows.Close()
			return nil, false, err
		}
		if ev.event == "" {
			ended = true
			break
		}
		out = append(out, ev)
	}
	rows.Close()
	return out, ended, rows.Err()
}
