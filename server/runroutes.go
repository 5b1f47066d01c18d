package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentgraph/agentgraph/graph"
)

func (s *Server) runRoutes() {
	create := func(stateless bool, respond func(w http.ResponseWriter, r *http.Request, lr *liveRun, body *runCreate, loc string) error) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			var body runCreate
			if err := decodeBody(r, &body); err != nil {
				return err
			}
			threadID := r.PathValue("tid")
			lr, err := s.createRun(threadID, &body, stateless)
			if err != nil {
				return err
			}
			loc := "/runs/" + lr.id
			if !stateless {
				loc = "/threads/" + threadID + "/runs/" + lr.id
			}
			w.Header().Set("Content-Location", loc)
			return respond(w, r, lr, &body, loc)
		}
	}
	background := func(w http.ResponseWriter, r *http.Request, lr *liveRun, _ *runCreate, _ string) error {
		s.recs.mu.Lock()
		var rec any
		if sr := s.recs.runs[lr.id]; sr != nil {
			rec = snapshot(&sr.Run)
		}
		s.recs.mu.Unlock()
		writeJSON(w, 200, rec)
		return nil
	}
	stream := func(w http.ResponseWriter, r *http.Request, lr *liveRun, body *runCreate, loc string) error {
		// The SDK reconnects to Location, with Last-Event-ID, when the
		// connection drops before the run ends.
		w.Header().Set("Location", loc+"/stream")
		s.streamRun(w, r, lr, 0, body.OnDisconnect == "cancel")
		return nil
	}
	wait := func(w http.ResponseWriter, r *http.Request, lr *liveRun, body *runCreate, _ string) error {
		s.waitRun(w, r, lr, body.OnDisconnect == "cancel")
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
		if _, err := s.thread(id); err != nil {
			return err
		}
		q := r.URL.Query()
		limit, offset := 10, 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return badField("limit", "not a count: %q", v)
			}
			limit = n
		}
		if v := q.Get("offset"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return badField("offset", "not a count: %q", v)
			}
			offset = n
		}
		status := q.Get("status")
		s.recs.mu.Lock()
		out := []*runRecord{}
		for _, sr := range s.recs.threadRuns(id) {
			if status == "" || sr.Run.Status == status {
				out = append(out, snapshot(&sr.Run))
			}
		}
		s.recs.mu.Unlock()
		writeJSON(w, 200, page(out, offset, &limit, 10))
		return nil
	})
	s.handle("GET /threads/{tid}/runs/{rid}", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := s.runRecord(r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		writeJSON(w, 200, rec)
		return nil
	})
	s.handle("DELETE /threads/{tid}/runs/{rid}", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := s.runRecord(r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		if rec.Status == "pending" || rec.Status == "running" {
			s.sched.cancel(rec.RunID, "interrupt")
			if lr := s.sched.get(rec.RunID); lr != nil {
				<-lr.done
			}
		}
		s.recs.mu.Lock()
		s.recs.deleteRun(rec.RunID)
		s.recs.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("POST /threads/{tid}/runs/{rid}/cancel", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := s.runRecord(r.PathValue("tid"), r.PathValue("rid"))
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
		s.sched.cancel(rec.RunID, action)
		if boolParam(r, "wait") {
			if lr := s.sched.get(rec.RunID); lr != nil {
				select {
				case <-lr.done:
				case <-r.Context().Done():
				}
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
			s.recs.mu.Lock()
			for _, sr := range s.recs.runs {
				if (body.ThreadID == "" || sr.Run.ThreadID == body.ThreadID) && (sr.Run.Status == "pending" || sr.Run.Status == "running") &&
					(body.Status == "" || body.Status == "all" || sr.Run.Status == body.Status) {
					ids = append(ids, sr.Run.RunID)
				}
			}
			s.recs.mu.Unlock()
		}
		for _, id := range ids {
			s.sched.cancel(id, action)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("GET /threads/{tid}/runs/{rid}/join", func(w http.ResponseWriter, r *http.Request) error {
		rec, err := s.runRecord(r.PathValue("tid"), r.PathValue("rid"))
		if err != nil {
			return err
		}
		lr := s.sched.get(rec.RunID)
		if lr == nil {
			t, err := s.thread(rec.ThreadID)
			if err != nil {
				return err
			}
			writeJSON(w, 200, t.Values)
			return nil
		}
		s.waitRun(w, r, lr, boolParam(r, "cancel_on_disconnect"))
		return nil
	})
	joinStream := func(w http.ResponseWriter, r *http.Request) error {
		tid := r.PathValue("tid")
		rid := r.PathValue("rid")
		var lr *liveRun
		if tid != "" {
			if _, err := s.runRecord(tid, rid); err != nil {
				return err
			}
		}
		lr = s.sched.get(rid)
		from := 0
		if last := r.Header.Get("Last-Event-ID"); last != "" {
			n, err := strconv.Atoi(last)
			if err != nil {
				return badField("Last-Event-ID", "not an event id: %q", last)
			}
			from = n + 1
		}
		if lr == nil {
			// The run is over and its events are gone: an empty stream.
			sseHeaders(w)
			w.WriteHeader(200)
			return nil
		}
		s.streamRun(w, r, lr, from, boolParam(r, "cancel_on_disconnect"))
		return nil
	}
	s.handle("GET /threads/{tid}/runs/{rid}/stream", joinStream)
	s.handle("GET /runs/{rid}/stream", joinStream)
}

func (s *Server) runRecord(threadID, runID string) (*runRecord, error) {
	s.recs.mu.Lock()
	defer s.recs.mu.Unlock()
	if s.recs.threads[threadID] == nil {
		return nil, notFound("Thread with ID %s not found", threadID)
	}
	sr := s.recs.runs[runID]
	if sr == nil || sr.Run.ThreadID != threadID {
		return nil, notFound("Run not found")
	}
	return snapshot(&sr.Run), nil
}

func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
}

// streamRun writes lr's events from index from on, as server-sent events
// (event, data, id lines), until the run ends or the client goes away.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, lr *liveRun, from int, cancelOnDisconnect bool) {
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 8<<10)
	i := from
	for {
		evs, closed, changed := lr.log.since(i)
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
		if len(evs) > 0 {
			if bw.Flush() != nil || rc.Flush() != nil {
				s.disconnected(lr, cancelOnDisconnect)
				return
			}
		}
		if closed && len(evs) == 0 {
			return
		}
		if closed {
			continue
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			s.disconnected(lr, cancelOnDisconnect)
			return
		case <-s.closing:
			// Shutting down: the run may be stopped; keep draining.
			select {
			case <-changed:
			case <-r.Context().Done():
				return
			case <-lr.done:
			}
		}
	}
}

func (s *Server) disconnected(lr *liveRun, cancel bool) {
	if cancel {
		s.sched.cancel(lr.id, "interrupt")
	}
}

// waitRun answers with the run's final values once it ends, writing a
// newline every second meanwhile so that proxies keep the connection.
func (s *Server) waitRun(w http.ResponseWriter, r *http.Request, lr *liveRun, cancelOnDisconnect bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-lr.done:
			out := lr.result
			if lr.err != nil && !lr.stopped && !errors.Is(lr.err, graph.ErrDrained) {
				out, _ = json.Marshal(map[string]any{"__error__": map[string]string{"error": errorName(lr.err), "message": lr.err.Error()}})
			}
			if out == nil {
				if t, err := s.thread(lr.threadID); err == nil && t.Values != nil {
					out, _ = json.Marshal(t.Values)
				} else {
					out = []byte("null")
				}
			}
			_, _ = w.Write(out)
			return
		case <-tick.C:
			_, _ = w.Write([]byte("\n"))
			_ = rc.Flush()
		case <-r.Context().Done():
			s.disconnected(lr, cancelOnDisconnect)
			return
		}
	}
}

// createRun validates a run request, applies the multitask strategy and
// queues the run.
func (s *Server) createRun(threadID string, body *runCreate, stateless bool) (*liveRun, error) {
	if body.AssistantID == "" {
		return nil, badField("assistant_id", "missing: name a graph or an assistant")
	}
	g, err := s.graphFor(body.AssistantID)
	if err != nil {
		return nil, err
	}
	strategy := body.MultitaskStrategy
	switch strategy {
	case "":
		strategy = "reject"
	case "reject", "interrupt", "rollback", "enqueue":
	default:
		return nil, badField("multitask_strategy", "unknown value %q: use reject, interrupt, rollback or enqueue", strategy)
	}
	for field, v := range map[string]string{"on_disconnect": body.OnDisconnect, "if_not_exists": body.IfNotExists, "on_completion": body.OnCompletion} {
		ok := map[string][]string{"on_disconnect": {"", "cancel", "continue"}, "if_not_exists": {"", "reject", "create"}, "on_completion": {"", "delete", "keep"}}[field]
		valid := false
		for _, x := range ok {
			valid = valid || x == v
		}
		if !valid {
			return nil, badField(field, "unknown value %q: use one of %v", v, ok[1:])
		}
	}
	if body.AfterSeconds < 0 {
		return nil, badField("after_seconds", "must not be negative")
	}
	modes, err := normalizeModes(body.StreamMode)
	if err != nil {
		return nil, err
	}
	k := runKwargs{Input: body.Input, Command: body.Command, Config: body.Config, Context: body.Context, StreamMode: modes,
		Webhook: body.Webhook, FeedbackKeys: body.FeedbackKeys, Subgraphs: body.StreamSubgraphs, Resumable: body.StreamResumable,
		CheckpointID: body.CheckpointID, Durability: body.Durability, Metadata: body.Metadata,
		InterruptBefore: body.InterruptBefore, InterruptAfter: body.InterruptAfter}
	if body.Checkpoint != nil && body.Checkpoint.CheckpointID != "" {
		k.CheckpointID = body.Checkpoint.CheckpointID
	}
	if stateless {
		k.Temporary = body.OnCompletion != "keep"
	}
	fn, err := g.handle.prepare(&k)
	if err != nil {
		return nil, err
	}
	runID := newUUID7()
	s.sched.mu.Lock()
	s.recs.mu.Lock()
	if stateless {
		threadID = newUUID7()
		s.newThreadLocked(threadID, nil)
	} else if err := validID("thread_id", threadID); err != nil {
		s.recs.mu.Unlock()
		s.sched.mu.Unlock()
		return nil, err
	}
	t := s.recs.threads[threadID]
	if t == nil {
		if body.IfNotExists != "create" {
			s.recs.mu.Unlock()
			s.sched.mu.Unlock()
			return nil, notFound("Thread with ID %s not found", threadID)
		}
		t = s.newThreadLocked(threadID, nil)
	}
	inflight := s.sched.inflightLocked(threadID)
	if len(inflight) > 0 && strategy == "reject" {
		s.recs.mu.Unlock()
		s.sched.mu.Unlock()
		return nil, badField("multitask_strategy", "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.")
	}
	assistantID := uuid5(graphNamespace, g.id)
	t.Metadata["graph_id"] = g.id
	t.Metadata["assistant_id"] = assistantID
	t.Status = "busy"
	t.UpdatedAt = now()
	s.recs.saveThread(t)
	md := map[string]any{"created_by": "system", "graph_id": g.id, "assistant_id": assistantID}
	for key, v := range t.Metadata {
		md[key] = v
	}
	for key, v := range body.Metadata {
		md[key] = v
	}
	created := now()
	if body.AfterSeconds > 0 {
		created = wireTime(time.Time(created).Add(time.Duration(body.AfterSeconds * float64(time.Second))))
	}
	sr := &storedRun{GraphID: g.id, Run: runRecord{RunID: runID, ThreadID: threadID, AssistantID: assistantID, Metadata: md, Status: "pending",
		Kwargs: k, MultitaskStrategy: strategy, CreatedAt: created, UpdatedAt: now()}}
	s.recs.runs[runID] = sr
	s.recs.saveRun(sr)
	s.recs.mu.Unlock()
	lr := s.newLiveRun(runID, threadID, g, fn, k.Temporary)
	if s.sched.closing {
		s.sched.mu.Unlock()
		return nil, errClosing
	}
	s.sched.enqueueLocked(lr)
	s.sched.mu.Unlock()
	if strategy == "interrupt" || strategy == "rollback" {
		for _, old := range inflight {
			s.sched.cancel(old.id, strategy)
		}
	}
	return lr, nil
}

// cancelRunsBody is POST /runs/cancel's body: the runs to cancel, or those of a thread (or of all threads)
// that are pending or running, optionally only in one status.
type cancelRunsBody struct {
	ThreadID string   `json:"thread_id"`
	RunIDs   []string `json:"run_ids"`
	Status   string   `json:"status"`
}

// decodeCancelRuns reads POST /runs/cancel's body and the action the query names (interrupt by default).
func decodeCancelRuns(r *http.Request) (cancelRunsBody, string, error) {
	var body cancelRunsBody
	if err := decodeBody(r, &body); err != nil {
		return body, "", err
	}
	action := r.URL.Query().Get("action")
	if action == "" {
		action = "interrupt"
	}
	return body, action, nil
}
