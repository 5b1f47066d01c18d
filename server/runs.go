package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// Why a run was stopped early.
var (
	errCancelled = errors.New("run cancelled")
	errShutdown  = errors.New("server shutting down")
)

// liveRun is a run the scheduler knows: queued, running, or finished with
// its event log still kept for clients that join late.
type liveRun struct {
	id, threadID string
	graph        *registered
	fn           runFunc
	resume       bool // continue the thread's pending step (after a shutdown)
	temporary    bool
	log          *eventLog
	ctx          context.Context
	cancel       context.CancelCauseFunc
	done         chan struct{}
	// Set by cancel before the run stops: "interrupt" or "rollback".
	action string
	// Set when the run ends.
	result  json.RawMessage
	err     error
	stopped bool // by a cancel or a shutdown, not by its own error
}

// eventLog is a run's stream: every event it sent, in order, for any number
// of clients, each reading from where it joined (Last-Event-ID).
type eventLog struct {
	mu      sync.Mutex
	events  []sseEvent
	closed  bool
	changed chan struct{}
}

type sseEvent struct {
	event string
	data  []byte
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(event string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.events = append(l.events, sseEvent{event, data})
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
}

// since returns the events from index i on, whether the log is complete,
// and a channel closed when it changes.
func (l *eventLog) since(i int) ([]sseEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i > len(l.events) {
		i = len(l.events)
	}
	return l.events[i:len(l.events):len(l.events)], l.closed, l.changed
}

// scheduler runs runs on a fixed pool of workers, one run per thread at a
// time, in the order they were created.
type scheduler struct {
	s        *Server
	mu       sync.Mutex
	cond     *sync.Cond
	ready    []*liveRun
	queued   map[string][]*liveRun // per thread, waiting
	active   map[string]*liveRun   // per thread, running
	live     map[string]*liveRun
	finished []string // ids of finished runs whose logs are kept, oldest first
	closing  bool
	stopped  bool
	wg       sync.WaitGroup
	// drain is closed when the server shuts down: running runs stop at
	// their next step boundary (graph.WithDrain).
	drain chan struct{}
}

// keptLogs bounds how many finished runs keep their event log for late
// joiners.
const keptLogs = 1024

func newScheduler(s *Server, workers int) *scheduler {
	sc := &scheduler{s: s, queued: map[string][]*liveRun{}, active: map[string]*liveRun{}, live: map[string]*liveRun{}, drain: make(chan struct{})}
	sc.cond = sync.NewCond(&sc.mu)
	for range workers {
		sc.wg.Add(1)
		go sc.work()
	}
	return sc
}

var errClosing = errorf(503, "the server is shutting down and takes no new runs")

// submit queues lr; the caller holds no locks.
func (sc *scheduler) submit(lr *liveRun) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closing {
		return errClosing
	}
	sc.enqueueLocked(lr)
	return nil
}

func (sc *scheduler) enqueueLocked(lr *liveRun) {
	sc.live[lr.id] = lr
	sc.queued[lr.threadID] = append(sc.queued[lr.threadID], lr)
	sc.promoteLocked(lr.threadID)
}

// promoteLocked makes the thread's next queued run ready if none runs.
func (sc *scheduler) promoteLocked(threadID string) {
	if sc.active[threadID] != nil {
		return
	}
	q := sc.queued[threadID]
	if len(q) == 0 {
		delete(sc.queued, threadID)
		return
	}
	lr := q[0]
	sc.queued[threadID] = q[1:]
	sc.active[threadID] = lr
	sc.ready = append(sc.ready, lr)
	sc.cond.Signal()
}

// inflight lists the thread's queued and running runs.
func (sc *scheduler) inflightLocked(threadID string) []*liveRun {
	var out []*liveRun
	if a := sc.active[threadID]; a != nil {
		out = append(out, a)
	}
	return append(out, sc.queued[threadID]...)
}

func (sc *scheduler) work() {
	defer sc.wg.Done()
	for {
		sc.mu.Lock()
		for len(sc.ready) == 0 && !sc.stopped {
			sc.cond.Wait()
		}
		if sc.stopped && len(sc.ready) == 0 {
			sc.mu.Unlock()
			return
		}
		lr := sc.ready[0]
		sc.ready = sc.ready[1:]
		sc.mu.Unlock()
		sc.execute(lr)
	}
}

func (sc *scheduler) execute(lr *liveRun) {
	s := sc.s
	if lr.ctx.Err() != nil {
		sc.finish(lr, nil, context.Cause(lr.ctx))
		return
	}
	select {
	case <-sc.drain:
		// Promoted as the server began to shut down: it stays pending.
		sc.finish(lr, nil, errShutdown)
		return
	default:
	}
	s.recs.mu.Lock()
	sr := s.recs.runs[lr.id]
	if sr == nil { // deleted while queued
		s.recs.mu.Unlock()
		sc.finish(lr, nil, errCancelled)
		return
	}
	sr.Run.Status = "running"
	sr.Run.UpdatedAt = now()
	s.recs.saveRun(sr)
	if t := s.recs.threads[lr.threadID]; t != nil {
		t.Status = "busy"
	}
	assistantID := sr.Run.AssistantID
	s.recs.mu.Unlock()

	emit := func(event string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": "EncodingError", "message": err.Error()})
			event = "error"
		}
		lr.log.add(event, b)
	}
	emit("metadata", map[string]any{"run_id": lr.id, "attempt": 1})
	ctx := lr.ctx
	if st := s.cfg.store; st != nil {
		ctx = graph.ContextWithStore(ctx, st)
	}
	rc := runContext{threadID: lr.threadID, runID: lr.id, graphID: lr.graph.id, assistantID: assistantID, emit: emit, resumePending: lr.resume, drain: sc.drain}
	result, err := runSafely(ctx, lr.fn, rc)
	if err != nil && lr.ctx.Err() == nil && !errors.Is(err, graph.ErrDrained) {
		emit("error", map[string]string{"error": errorName(err), "message": err.Error()})
	}
	sc.finish(lr, result, err)
}

// runSafely runs fn, turning a panic into an error: a run never takes the
// server down.
func runSafely(ctx context.Context, fn runFunc, rc runContext) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("server: run panicked: %v", p)
		}
	}()
	return fn(ctx, rc)
}

func errorName(err error) string {
	var ne *graph.NodeError
	var re *graph.RecursionLimitError
	var ie *graph.InvalidUpdateError
	var ae *apiError
	switch {
	case errors.As(err, &re):
		return "GraphRecursionError"
	case errors.As(err, &ie):
		return "InvalidUpdateError"
	case errors.As(err, &ae):
		return "ValueError"
	case errors.As(err, &ne):
		return "NodeError"
	}
	return "Error"
}

// finish records how lr ended, updates its thread, and starts the thread's
// next run.
func (sc *scheduler) finish(lr *liveRun, result json.RawMessage, err error) {
	s := sc.s
	cause := context.Cause(lr.ctx)
	stoppedBy := error(nil)
	if lr.ctx.Err() != nil {
		stoppedBy = cause
	}
	ctx := context.WithoutCancel(lr.ctx)
	status := "success"
	drained := errors.Is(err, graph.ErrDrained)
	switch {
	case errors.Is(stoppedBy, errShutdown), errors.Is(err, errShutdown), drained && stoppedBy == nil:
		status = "pending"
	case stoppedBy != nil:
		status = "interrupted"
	case err != nil:
		status = "error"
	}
	rollback := status == "interrupted" && lr.action == "rollback"
	resume := false
	if status == "pending" {
		// A drained run stopped after a saved step; a cancelled one may
		// have been stopped before its first.
		resume = drained || sc.inputSaved(ctx, lr)
	}
	var st *threadState
	if !rollback && !lr.temporary {
		st, _ = lr.graph.handle.state(ctx, checkpoint.Config{ThreadID: lr.threadID}, false)
	}
	if rollback {
		sc.rollback(ctx, lr)
	}
	s.recs.mu.Lock()
	if sr := s.recs.runs[lr.id]; sr != nil {
		if rollback {
			s.recs.deleteRun(lr.id)
		} else {
			sr.Run.Status = status
			sr.Run.UpdatedAt = now()
			sr.Resume = resume
			s.recs.saveRun(sr)
		}
	}
	if t := s.recs.threads[lr.threadID]; t != nil && !lr.temporary {
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
		switch {
		case status == "error":
			t.Status = "error"
		case status == "pending":
			t.Status = "busy" // the run continues when the server restarts
		case st != nil && len(st.Next) > 0:
			t.Status = "interrupted"
		default:
			t.Status = "idle"
		}
		s.recs.saveThread(t)
	}
	if lr.temporary {
		s.recs.deleteThread(lr.threadID)
	}
	s.recs.mu.Unlock()
	if lr.temporary {
		if d, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			_ = d.DeleteThread(ctx, lr.threadID)
		}
	}

	sc.mu.Lock()
	lr.result, lr.err, lr.stopped = result, err, stoppedBy != nil
	if sc.active[lr.threadID] == lr {
		delete(sc.active, lr.threadID)
	}
	sc.finished = append(sc.finished, lr.id)
	if len(sc.finished) > keptLogs {
		delete(sc.live, sc.finished[0])
		sc.finished = sc.finished[1:]
	}
	if len(sc.inflightLocked(lr.threadID)) > 0 {
		s.recs.mu.Lock()
		if t := s.recs.threads[lr.threadID]; t != nil {
			t.Status = "busy"
		}
		s.recs.mu.Unlock()
	}
	if !sc.closing {
		sc.promoteLocked(lr.threadID)
	}
	sc.mu.Unlock()
	lr.cancel(nil)
	lr.log.close()
	close(lr.done)
}

// inputSaved reports whether the thread holds a checkpoint of run lr, so
// that running it again must continue its pending step, not apply its
// input a second time.
func (sc *scheduler) inputSaved(ctx context.Context, lr *liveRun) bool {
	if lr.resume {
		return true
	}
	hist, err := lr.graph.handle.history(ctx, lr.threadID, historyBody{Limit: ptr(1), Metadata: map[string]any{"run_id": lr.id}})
	return err == nil && len(hist) > 0
}

func ptr[T any](v T) *T { return &v }

// rollback undoes what run lr wrote to its thread: the thread's next run
// starts from the last checkpoint written before lr, or from nothing.
func (sc *scheduler) rollback(ctx context.Context, lr *liveRun) {
	s := sc.s
	hist, err := lr.graph.handle.history(ctx, lr.threadID, historyBody{Limit: ptr(1 << 20)})
	if err != nil {
		return
	}
	target := ""
	for _, h := range hist {
		if h.Metadata["run_id"] != lr.id && h.Checkpoint != nil {
			target = h.Checkpoint.CheckpointID
			break
		}
	}
	if target == "" {
		if d, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			_ = d.DeleteThread(ctx, lr.threadID)
		}
		return
	}
	// Fork the thread at target: its latest state becomes target's again.
	_, _ = lr.graph.handle.update(ctx, checkpoint.Config{ThreadID: lr.threadID, CheckpointID: target}, nil, graph.END)
}

// cancel stops a queued or running run. It reports false if the run is
// unknown or already over.
func (sc *scheduler) cancel(runID, action string) bool {
	sc.mu.Lock()
	lr := sc.live[runID]
	if lr == nil {
		sc.mu.Unlock()
		return false
	}
	select {
	case <-lr.done:
		sc.mu.Unlock()
		return true
	default:
	}
	lr.action = action
	queued := false
	if q := sc.queued[lr.threadID]; slices.Contains(q, lr) {
		sc.queued[lr.threadID] = slices.DeleteFunc(slices.Clone(q), func(x *liveRun) bool { return x == lr })
		queued = true
	}
	sc.mu.Unlock()
	lr.cancel(errCancelled)
	if queued {
		sc.finish(lr, nil, errCancelled)
	}
	return true
}

func (sc *scheduler) get(runID string) *liveRun {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.live[runID]
}

// shutdown stops taking runs, drains the running ones at their next step
// boundary, waits for them until ctx is done, then cancels those still in
// a step, and stops the workers.
func (sc *scheduler) shutdown(ctx context.Context) error {
	sc.mu.Lock()
	sc.closing = true
	var running []*liveRun
	for _, lr := range sc.active {
		running = append(running, lr)
	}
	close(sc.drain)
	sc.mu.Unlock()
	var err error
	for _, lr := range running {
		select {
		case <-lr.done:
		case <-ctx.Done():
			err = ctx.Err()
			for _, r := range running {
				r.cancel(errShutdown)
			}
			<-lr.done
		}
	}
	for _, lr := range running {
		<-lr.done
	}
	// Queued runs stay pending in the records; their logs end here.
	sc.mu.Lock()
	for _, q := range sc.queued {
		for _, lr := range q {
			lr.log.close()
		}
	}
	sc.mu.Unlock()
	sc.stop()
	return err
}

// stop ends the workers once the ready runs are done.
func (sc *scheduler) stop() {
	sc.mu.Lock()
	sc.stopped = true
	sc.cond.Broadcast()
	sc.mu.Unlock()
	sc.wg.Wait()
}

// restore queues the runs the state file holds as pending or running.
func (sc *scheduler) restore() error {
	s := sc.s
	s.recs.mu.Lock()
	var todo []*storedRun
	for _, sr := range s.recs.runs {
		if sr.Run.Status == "pending" || sr.Run.Status == "running" {
			todo = append(todo, sr)
		}
	}
	s.recs.mu.Unlock()
	slices.SortFunc(todo, func(a, b *storedRun) int {
		return time.Time(a.Run.CreatedAt).Compare(time.Time(b.Run.CreatedAt))
	})
	for _, sr := range todo {
		g := s.cfg.graphs[sr.GraphID]
		if g == nil {
			continue
		}
		k := sr.Run.Kwargs
		k.Metadata = sr.Run.Metadata
		fn, err := g.handle.prepare(&k)
		if err != nil {
			continue
		}
		lr := s.newLiveRun(sr.Run.RunID, sr.Run.ThreadID, g, fn, k.Temporary)
		lr.resume = sr.Resume || sr.Run.Status == "running"
		if err := sc.submit(lr); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) newLiveRun(id, threadID string, g *registered, fn runFunc, temporary bool) *liveRun {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &liveRun{id: id, threadID: threadID, graph: g, fn: fn, temporary: temporary, log: newEventLog(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}
