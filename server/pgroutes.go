package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// checkRun validates a run request: its graph, multitask strategy and
// kwargs, and that the graph accepts its input.
func (s *Server) checkRun(body *runCreate, stateless bool) (*registered, string, runKwargs, error) {
	var k runKwargs
	if body.AssistantID == "" {
		return nil, "", k, badField("assistant_id", "missing: name a graph or an assistant")
	}
	g, err := s.graphFor(body.AssistantID)
	if err != nil {
		return nil, "", k, err
	}
	strategy := body.MultitaskStrategy
	switch strategy {
	case "":
		strategy = "reject"
	case "reject", "interrupt", "rollback", "enqueue":
	default:
		return nil, "", k, badField("multitask_strategy", "unknown value %q: use reject, interrupt, rollback or enqueue", strategy)
	}
	for _, f := range []struct {
		name, value string
		ok          []string
	}{
		{"on_disconnect", body.OnDisconnect, []string{"cancel", "continue"}},
		{"if_not_exists", body.IfNotExists, []string{"reject", "create"}},
		{"on_completion", body.OnCompletion, []string{"delete", "keep"}},
	} {
		if f.value != "" && !slices.Contains(f.ok, f.value) {
			return nil, "", k, badField(f.name, "unknown value %q: use one of %v", f.value, f.ok)
		}
	}
	if body.AfterSeconds < 0 {
		return nil, "", k, badField("after_seconds", "must not be negative")
	}
	modes, err := normalizeModes(body.StreamMode)
	if err != nil {
		return nil, "", k, err
	}
	k = runKwargs{Input: body.Input, Command: body.Command, Config: body.Config, Context: body.Context, StreamMode: modes,
		Webhook: body.Webhook, FeedbackKeys: body.FeedbackKeys, Subgraphs: body.StreamSubgraphs, Resumable: body.StreamResumable,
		CheckpointID: body.CheckpointID, Durability: body.Durability, Metadata: body.Metadata,
		InterruptBefore: body.InterruptBefore, InterruptAfter: body.InterruptAfter}
	if body.Checkpoint != nil && body.Checkpoint.CheckpointID != "" {
		k.CheckpointID = body.Checkpoint.CheckpointID
	}
	if stateless {
		k.Temporary = body.OnCompletion != "keep"
	}
	if _, err := g.handle.prepare(&k); err != nil {
		return nil, "", k, err
	}
	return g, strategy, k, nil
}

// routes serves threads and runs from PostgreSQL.
func (p *pgRuns) routes() {
	s := p.s
	p.threadRoutes()
	create := func(stateless bool, respond func(w http.ResponseWriter, r *http.Request, runID, threadID string, body *runCreate, loc string) error) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			var body runCreate
			if err := decodeBody(r, &body); err != nil {
				return err
			}
			runID, threadID, err := p.createRun(r.Context(), r.PathValue("tid"), &body, stateless)
			if err != nil {
				return err
			}
			loc := "/runs/" + runID
			if !stateless {
				loc = "/threads/" + threadID + "/runs/" + runID
			}
			w.Header().Set("Content-Location", loc)
			return respond(w, r, runID, threadID, &body, loc)
		}
	}
	background := func(w http.ResponseWriter, r *http.Request, runID, _ string, _ *runCreate, _ string) error {
		sr, _, err := loadRun(r.Context(), p.pool, runID, false)
		if err != nil {
			return err
		}
		writeJSON(w, 200, &sr.Run)
		return nil
	}
	stream := func(w http.ResponseWriter, r *http.Request, runID, _ string, body *runCreate, loc string) error {
		w.Header().Set("Location", loc+"/stream")
		p.streamRun(w, r, runID, 0, body.OnDisconnect == "cancel")
		return nil
	}
	wait := func(w http.ResponseWriter, r *http.Request, runID, threadID string, body *runCreate, _ string) error {
		p.waitRun(w, r, runID, threadID, body.OnDisconnect == "cancel")
		return nil
	}
	s.handle("POST /threads/{tid}/runs", create(false, background))
	s.handle("POST /threads/{tid}/runs/stream", create(false, stream))
	s.handle("POST /threads/{tid}/runs/wait", create(false, wait))
	s.handle("POST /runs", create(true, background))
	s.handle("POST /runs/stream", create(true, stream))
	s.handle("POST /runs/wait", create(true, wait))

	s.handle("GET /threads/{tid}/runs", func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("tid")
		if _, err := loadThread(r.Context(), p.pool, id, false); err != nil {
			return err
		}
		q := r.URL.Query()
		limit, offset := 10, 0
		for _, f := range []struct {
			name string
			to   *int
		}{{"limit", &limit}, {"offset", &offset}} {
			if v := q.Get(f.name); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return badField(f.name, "not a count: %q", v)
				}
				*f.to = n
			}
		}
		status := q.Get("status")
		rows, err := p.pool.Query(r.Context(), `SELECT status, record FROM agentgraph_server_runs
			WHERE thread_id = $1 AND ($2 = '' OR status = $2) ORDER BY seq DESC LIMIT $3 OFFSET $4`, id, status, limit, offset)
		if err != nil {
			return err
		}
		out, err := pgx.CollectRows(rows, scanRun)
		if err != nil {
			return err
		}
		writeJSON(w, 200, out)
		return nil
	})
	s.handle("GET /threads/{tid}/runs/{rid}", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := p.runRecord(r.Context(), r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		writeJSON(w, 200, rec)
		return nil
	})
	s.handle("DELETE /threads/{tid}/runs/{rid}", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := p.runRecord(r.Context(), r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		if !isTerminal(rec.Status) {
			if _, err := p.cancel(r.Context(), rec.RunID, "interrupt"); err != nil {
				return err
			}
			if err := p.awaitEnd(r.Context(), rec.RunID); err != nil {
				return err
			}
		}
		if err := p.deleteRun(r.Context(), rec.RunID); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("POST /threads/{tid}/runs/{rid}/cancel", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := p.runRecord(r.Context(), r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		action := r.URL.Query().Get("action")
		switch action {
		case "":
			action = "interrupt"
		case "interrupt", "rollback":
		default:
			return badField("action", "unknown action %q: use interrupt or rollback", action)
		}
		if _, err := p.cancel(r.Context(), rec.RunID, action); err != nil {
			return err
		}
		if boolParam(r, "wait") {
			if err := p.awaitEnd(r.Context(), rec.RunID); err != nil && r.Context().Err() == nil {
				return err
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	})
	s.handle("POST /runs/cancel", func(w http.ResponseWriter, r *http.Request) error {
		body, action, err := decodeCancelRuns(r)
		if err != nil {
			return err
		}
		ids := body.RunIDs
		if len(ids) == 0 {
			status := body.Status
			if status == "all" {
				status = ""
			}
			rows, err := p.pool.Query(r.Context(), `SELECT run_id FROM agentgraph_server_runs
				WHERE ($1 = '' OR thread_id = $1) AND status IN ('pending', 'running') AND ($2 = '' OR status = $2) ORDER BY seq`, body.ThreadID, status)
			if err != nil {
				return err
			}
			if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
		}
		for _, id := range ids {
			if _, err := p.cancel(r.Context(), id, action); err != nil {
				return err
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("GET /threads/{tid}/runs/{rid}/join", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := p.runRecord(r.Context(), r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		p.waitRun(w, r, rec.RunID, rec.ThreadID, boolParam(r, "cancel_on_disconnect"))
		return nil
	})
	joinStream := func(w http.ResponseWriter, r *http.Request) error {
		if tid := r.PathValue("tid"); tid != "" {
			if _, err := p.runRecord(r.Context(), tid, r.PathValue("rid")); err != nil {
				return err
			}
		}
		from := 0
		if last := r.Header.Get("Last-Event-ID"); last != "" {
			n, err := strconv.Atoi(last)
			if err != nil {
				return badField("Last-Event-ID", "not an event id: %q", last)
			}
			from = n + 1
		}
		p.streamRun(w, r, r.PathValue("rid"), from, boolParam(r, "cancel_on_disconnect"))
		return nil
	}
	s.handle("GET /threads/{tid}/runs/{rid}/stream", joinStream)
	s.handle("GET /runs/{rid}/stream", joinStream)
}

func scanRun(row pgx.CollectableRow) (*runRecord, error) {
	var status string
	var raw []byte
	if err := row.Scan(&status, &raw); err != nil {
		return nil, err
	}
	var sr storedRun
	if err := json.Unmarshal(raw, &sr); err != nil {
		return nil, err
	}
	sr.Run.Status = status
	return &sr.Run, nil
}

func (p *pgRuns) runRecord(ctx context.Context, threadID, runID string) (*runRecord, error) {
	if _, err := loadThread(ctx, p.pool, threadID, false); err != nil {
		return nil, err
	}
	sr, _, err := loadRun(ctx, p.pool, runID, false)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && sr.Run.ThreadID != threadID) {
		return nil, notFound("Run not found")
	}
	if err != nil {
		return nil, err
	}
	return &sr.Run, nil
}

func (p *pgRuns) deleteRun(ctx context.Context, runID string) error {
	return p.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_runs WHERE run_id = $1`, runID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM agentgraph_server_run_events WHERE run_id = $1`, runID)
		return err
	})
}

// runStatus returns a run's status and final result; a deleted run is
// "interrupted".
func (p *pgRuns) runStatus(ctx context.Context, runID string) (string, json.RawMessage, error) {
	var status string
	var result []byte
	err := p.pool.QueryRow(ctx, `SELECT status, result FROM agentgraph_server_runs WHERE run_id = $1`, runID).Scan(&status, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return "interrupted", nil, nil
	}
	return status, result, err
}

// awaitEnd waits until the run has ended, on whichever server.
func (p *pgRuns) awaitEnd(ctx context.Context, runID string) error {
	ch, unsubscribe := p.subscribe(runID)
	defer unsubscribe()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		status, _, err := p.runStatus(ctx, runID)
		if err != nil {
			return err
		}
		if isTerminal(status) {
			return nil
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// streamRun writes the run's events from seq from on as server-sent
// events until the run ends, the client goes away, or this server shuts
// down: the client then reconnects, with Last-Event-ID, to another.
func (p *pgRuns) streamRun(w http.ResponseWriter, r *http.Request, runID string, from int, cancelOnDisconnect bool) {
	ch, unsubscribe := p.subscribe(runID)
	defer unsubscribe()
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 8<<10)
	// A poll beside the notifications, should one be lost.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	i := from
	gone := func() {
		if cancelOnDisconnect {
			_, _ = p.cancel(context.WithoutCancel(r.Context()), runID, "interrupt")
		}
	}
	for {
		evs, ended, err := p.events(r.Context(), runID, i)
		if err != nil {
			if r.Context().Err() != nil {
				gone()
			}
			return
		}
		for _, ev := range evs {
			bw.WriteString("event: ")
			bw.WriteString(ev.event)
			bw.WriteString("\ndata: ")
			bw.Write(ev.data)
			bw.WriteString("\nid: ")
			bw.WriteString(strconv.Itoa(i))
			bw.WriteString("\n\n")
			i++
		}
		if len(evs) > 0 && (bw.Flush() != nil || rc.Flush() != nil) {
			gone()
			return
		}
		if ended {
			return
		}
		if len(evs) == 0 {
			status, _, err := p.runStatus(r.Context(), runID)
			if err == nil && isTerminal(status) {
				// Ended, its events gone or never written.
				if evs, _, _ := p.events(r.Context(), runID, i); len(evs) == 0 {
					return
				}
				continue
			}
		}
		if len(evs) == 1000 {
			continue // a full page: read on
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-r.Context().Done():
			gone()
			return
		case <-p.s.closing:
			return
		}
	}
}

// waitRun answers with the run's final values once it ends, writing a
// newline every second meanwhile so that proxies keep the connection.
func (p *pgRuns) waitRun(w http.ResponseWriter, r *http.Request, runID, threadID string, cancelOnDisconnect bool) {
	ch, unsubscribe := p.subscribe(runID)
	defer unsubscribe()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		status, result, err := p.runStatus(r.Context(), runID)
		if err == nil && isTerminal(status) {
			out := result
			if len(out) == 0 || string(out) == "null" {
				if t, err := loadThread(r.Context(), p.pool, threadID, false); err == nil && t.Values != nil {
					out, _ = json.Marshal(t.Values)
				} else {
					out = []byte("null")
				}
			}
			_, _ = w.Write(out)
			return
		}
		select {
		case <-ch:
		case <-tick.C:
			_, _ = w.Write([]byte("\n"))
			_ = rc.Flush()
		case <-r.Context().Done():
			if cancelOnDisconnect {
				_, _ = p.cancel(context.WithoutCancel(r.Context()), runID, "interrupt")
			}
			return
		}
	}
}

// threadRoutes serves /threads from PostgreSQL.
func (p *pgRuns) threadRoutes() {
	s := p.s
	s.handle("POST /threads", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			ThreadID string         `json:"thread_id"`
			Metadata map[string]any `json:"metadata"`
			IfExists string         `json:"if_exists"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		if body.ThreadID == "" {
			body.ThreadID = newUUID7()
		} else if err := validID("thread_id", body.ThreadID); err != nil {
			return err
		}
		switch body.IfExists {
		case "", "raise", "do_nothing":
		default:
			return badField("if_exists", "unknown value %q: use raise or do_nothing", body.IfExists)
		}
		if body.Metadata == nil {
			body.Metadata = map[string]any{}
		}
		t := &threadRecord{ThreadID: body.ThreadID, CreatedAt: now(), Metadata: body.Metadata, Status: "idle", Config: map[string]any{}}
		t.UpdatedAt = t.CreatedAt
		b, _ := json.Marshal(t)
		tag, err := p.pool.Exec(r.Context(), `INSERT INTO agentgraph_server_threads (thread_id, record) VALUES ($1, $2) ON CONFLICT DO NOTHING`, t.ThreadID, b)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			if body.IfExists != "do_nothing" {
				return errorf(http.StatusConflict, "Thread already exists")
			}
			if t, err = loadThread(r.Context(), p.pool, t.ThreadID, false); err != nil {
				return err
			}
		}
		writeJSON(w, 200, t)
		return nil
	})
	// matching lists the threads whose metadata holds md and whose status
	// is status (any, if empty).
	matching := func(ctx context.Context, md map[string]any, status string) ([]*threadRecord, error) {
		if md == nil {
			md = map[string]any{}
		}
		mdJSON, err := json.Marshal(md)
		if err != nil {
			return nil, err
		}
		rows, err := p.pool.Query(ctx, `SELECT record FROM agentgraph_server_threads
			WHERE record->'metadata' @> $1 AND ($2 = '' OR record->>'status' = $2)`, mdJSON, status)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*threadRecord, error) {
			var t threadRecord
			var raw []byte
			if err := row.Scan(&raw); err != nil {
				return nil, err
			}
			return &t, json.Unmarshal(raw, &t)
		})
	}
	s.handle("POST /threads/search", func(w http.ResponseWriter, r *http.Request) error {
		body, err := decodeThreadSearch(r)
		if err != nil {
			return err
		}
		all, err := matching(r.Context(), body.Metadata, body.Status)
		if err != nil {
			return err
		}
		out := all[:0]
		for _, t := range all {
			if len(body.IDs) > 0 && !slices.Contains(body.IDs, t.ThreadID) {
				continue
			}
			if len(body.Values) > 0 {
				vals := map[string]any{}
				for k, v := range t.Values {
					var x any
					_ = json.Unmarshal(v, &x)
					vals[k] = x
				}
				if !contains(vals, body.Values) {
					continue
				}
			}
			out = append(out, t)
		}
		return writeThreadSearch(w, out, body)
	})
	s.handle("POST /threads/count", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Metadata map[string]any `json:"metadata"`
			Status   string         `json:"status"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		all, err := matching(r.Context(), body.Metadata, body.Status)
		if err != nil {
			return err
		}
		writeJSON(w, 200, len(all))
		return nil
	})
	s.handle("GET /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		t, err := loadThread(r.Context(), p.pool, r.PathValue("tid"), false)
		if err != nil {
			return err
		}
		writeJSON(w, 200, t)
		return nil
	})
	s.handle("PATCH /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		var t *threadRecord
		err := p.inTx(r.Context(), func(tx pgx.Tx) error {
			var err error
			if t, err = loadThread(r.Context(), tx, r.PathValue("tid"), true); err != nil {
				return err
			}
			maps.Copy(t.Metadata, body.Metadata)
			t.UpdatedAt = now()
			return saveThread(r.Context(), tx, t)
		})
		if err != nil {
			return err
		}
		writeJSON(w, 200, t)
		return nil
	})
	s.handle("DELETE /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("tid")
		ctx := r.Context()
		if _, err := loadThread(ctx, p.pool, id, false); err != nil {
			return err
		}
		runs, err := inflight(ctx, p.pool, id)
		if err != nil {
			return err
		}
		for _, rid := range runs {
			if _, err := p.cancel(ctx, rid, "interrupt"); err != nil {
				return err
			}
		}
		for _, rid := range runs {
			if err := p.awaitEnd(ctx, rid); err != nil {
				return err
			}
		}
		err = p.inTx(ctx, func(tx pgx.Tx) error {
			for _, q := range []string{
				`DELETE FROM agentgraph_server_run_events WHERE run_id IN (SELECT run_id FROM agentgraph_server_runs WHERE thread_id = $1)`,
				`DELETE FROM agentgraph_server_runs WHERE thread_id = $1`,
				`DELETE FROM agentgraph_server_threads WHERE thread_id = $1`,
			} {
				if _, err := tx.Exec(ctx, q, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if d, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			if err := d.DeleteThread(ctx, id); err != nil {
				return err
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("POST /threads/{tid}/copy", func(w http.ResponseWriter, r *http.Request) error {
		src, err := loadThread(r.Context(), p.pool, r.PathValue("tid"), false)
		if err != nil {
			return err
		}
		c, ok := s.cfg.saver.(checkpoint.ThreadCopier)
		if !ok {
			return errorf(http.StatusNotImplemented, "the server's saver cannot copy threads (give the server a saver implementing checkpoint.ThreadCopier with server.WithSaver)")
		}
		id := newUUID7()
		if err := c.CopyThread(r.Context(), src.ThreadID, id); err != nil && !isNotFound(err) {
			return err
		}
		md := maps.Clone(src.Metadata)
		md["thread_id"] = id
		t := &threadRecord{ThreadID: id, CreatedAt: now(), Metadata: md, Status: "idle", Config: map[string]any{}, Values: src.Values}
		t.UpdatedAt = t.CreatedAt
		if err := saveThread(r.Context(), p.pool, t); err != nil {
			return err
		}
		writeJSON(w, 200, t)
		return nil
	})
	s.stateReadRoutes(func(ctx context.Context, id string) (*threadRecord, error) { return loadThread(ctx, p.pool, id, false) })
	s.handle("POST /threads/{tid}/state", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Values       json.RawMessage `json:"values"`
			AsNode       string          `json:"as_node"`
			CheckpointID string          `json:"checkpoint_id"`
			Checkpoint   *checkpointBody `json:"checkpoint"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		ctx := r.Context()
		id := r.PathValue("tid")
		t, err := loadThread(ctx, p.pool, id, false)
		if err != nil {
			return err
		}
		g := s.threadGraph(t)
		if g == nil {
			if len(s.cfg.order) != 1 {
				return errorf(http.StatusBadRequest, "Thread %s has no graph ID: run it once, or create it with metadata.graph_id", id)
			}
			g = s.cfg.graphs[s.cfg.order[0]]
		}
		if runs, err := inflight(ctx, p.pool, id); err != nil {
			return err
		} else if len(runs) > 0 {
			return errorf(http.StatusConflict, "Thread is busy")
		}
		cfg := checkpoint.Config{ThreadID: id, CheckpointID: body.CheckpointID}
		if body.Checkpoint != nil && body.Checkpoint.CheckpointID != "" {
			cfg.CheckpointID = body.Checkpoint.CheckpointID
		}
		if strings.HasPrefix(strings.TrimSpace(string(body.Values)), "[") {
			return badField("values", "a list of updates is not supported: send one object of state keys")
		}
		next, err := g.handle.update(ctx, cfg, body.Values, body.AsNode)
		if err != nil {
			return err
		}
		if st, err := g.handle.state(ctx, checkpoint.Config{ThreadID: id}, false); err == nil {
			err = p.inTx(ctx, func(tx pgx.Tx) error {
				t, err := loadThread(ctx, tx, id, true)
				if err != nil {
					return err
				}
				t.Values, t.UpdatedAt = st.Values, now()
				t.Metadata["graph_id"] = g.id
				if len(st.Next) > 0 {
					t.Status = "interrupted"
				} else if t.Status == "interrupted" {
					t.Status = "idle"
				}
				return saveThread(ctx, tx, t)
			})
			if err != nil {
				return err
			}
		}
		writeJSON(w, 200, map[string]any{"checkpoint": toWireCheckpoint(&next)})
		return nil
	})
}
