package graph

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/store"
)

// runShared is the part of a run that tasks reach through their context,
// and that a subgraph run started by one of its tasks inherits.
type runShared struct {
	cfg        Config
	modes      Mode
	subgraphs  bool
	saver      checkpoint.Saver
	store      store.Store
	durability Durability
	// resume holds the resume values of this run by interrupt id, for the
	// tasks of this run and of the subgraphs they run.
	resume map[string]any
	emit   func(t *taskCtx, mode Mode, data any)
	// emitSub passes on an event of a subgraph run (WithSubgraphs).
	emitSub func(t *taskCtx, ev subEvent)
}

type taskKey struct{}

// taskCtx is what a node's context carries: where it runs, and the scratch
// state of Interrupt.
type taskCtx struct {
	mu      sync.Mutex // Interrupt may be called from the node's goroutines
	run     *runShared
	node    string
	step    int
	id      string
	idBase  string
	idStep  int
	idIndex int
	resume  []any
	calls   int
	raised  []Interruption
	// streamed is set once the task sent a message chunk to the stream.
	streamed atomic.Bool
}

// name sets the task's id to base/index, or base/step/index when step is
// not negative, formatted only when asked for.
func (t *taskCtx) name(base string, step, index int) {
	t.id, t.idBase, t.idStep, t.idIndex = "", base, step, index
}

// taskID returns the task's id.
func (t *taskCtx) taskID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lockedID()
}

func (t *taskCtx) lockedID() string {
	if t.id == "" && t.idBase != "" {
		if t.idStep >= 0 {
			t.id = t.idBase + "/" + strconv.Itoa(t.idStep) + "/" + strconv.Itoa(t.idIndex)
		} else {
			t.id = t.idBase + "/" + strconv.Itoa(t.idIndex)
		}
	}
	return t.id
}

// taskContext is a task's context and its taskCtx in one allocation.
type taskContext struct {
	context.Context
	tc taskCtx
}

func (c *taskContext) Value(key any) any {
	if key == (taskKey{}) {
		return &c.tc
	}
	return c.Context.Value(key)
}

type task[S any] struct {
	node  *nodeSpec[S]
	cx    taskContext
	input S
	push  bool
	// results
	upd         Update[S]
	err         error
	done        bool // restored from pending writes: not run again
	interrupted bool
	routes      []int
	sends       []Send[S]
	dur         time.Duration
}

type runner[S any] struct {
	g      *Graph[S]
	ctx    context.Context
	rc     runConfig
	shared runShared
	yield  func(Event[S]) bool
	stop   bool // the stream's consumer stopped
	// initial, for a subgraph, is the state the run starts from, and
	// parent the task that runs the subgraph.
	initial *S
	parent  *taskCtx
	// before and after are the run's static breakpoints, by node index.
	before, after []bool

	state    S
	step     int
	barriers [][]bool
	waiting  []bool // deferred nodes triggered and waiting for the others
	version  uint64
	p        *persister[S]
	tr       *runTrace // nil unless the run's context carries a Tracer

	// scratch, reused across steps
	buckets [][]Write[S]
	touched []int
	marks   []bool
	quick   []bool // by node: its last task in a step of several took under quickTask
	marked  []int
	bufs    [2][]*task[S]
	flip    int
	events  chan streamItem
}

type streamItem struct {
	t    *taskCtx
	mode Mode
	data any
	sub  *subEvent
}

func (g *Graph[S]) run(ctx context.Context, input Update[S], opts []RunOption, yield func(Event[S]) bool) (res Result[S], err error) {
	return g.runWith(&runner[S]{g: g, yield: yield}, ctx, input, opts)
}

// runWith runs the graph: it configures the run, opens the thread (with a
// saver), starts from the input or resumes the pending step, and loops over
// supersteps until no task is left, an interrupt pauses the run or a task
// fails.
func (g *Graph[S]) runWith(r *runner[S], ctx context.Context, input Update[S], opts []RunOption) (res Result[S], err error) {
	defer func() {
		// Caller-supplied code runs on this goroutine too (reducers,
		// routers, field accessors, codecs): whatever panics there, the run
		// fails with an error and the host goes on.
		if p := recover(); p != nil {
			err = fmt.Errorf("graph: run panicked at step %d: %v\n%s", r.step, p, debug.Stack())
		}
	}()
	if err := r.configure(ctx, opts); err != nil {
		return res, err
	}
	if r.tr, ctx = newRunTrace(ctx, &r.shared.cfg, r.rc.resume != nil); r.tr != nil {
		defer func() { r.tr.end(res.Interrupts, err) }()
	}
	var cancel context.CancelFunc
	r.ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	r.alloc()

	hasInput := len(input.writes) > 0 || len(input.gotos) > 0 || len(input.sends) > 0
	var pending []*task[S]
	loaded := false // the run continues a stored thread
	if r.shared.saver == nil {
		if r.rc.resume != nil || r.rc.cfg.CheckpointID != "" {
			return res, fmt.Errorf("graph: resuming or replaying a run: %w", ErrNoSaver)
		}
		r.step = -2
	} else {
		var unlock func()
		if unlock, err = r.lockThread(); err != nil {
			return res, err
		}
		defer unlock()
		r.p = newPersister(g, r)
		defer r.p.close()
		if pending, loaded, err = r.openThread(hasInput); err != nil {
			return res, err
		}
		defer func() {
			// err is the run's result: a save that failed in the
			// background fails the run.
			if perr := r.p.finish(); perr != nil && err == nil {
				err = perr
			}
			res.Checkpoint = r.p.cfg
			r.p.remember(r)
		}()
	}
	resuming := len(pending) > 0 && (!hasInput || r.rc.resume != nil)
	if r.rc.resume != nil && !resuming && !r.rc.resume.none {
		return res, fmt.Errorf("graph: thread %q has no pending step to resume: call Invoke without graph.WithResume to start a new run", r.rc.cfg.ThreadID)
	}
	// WithContinue on a thread with nothing pending: its input, if any,
	// starts a run; without input there is nothing to run. A run taken up
	// again after its process died may find its work all saved already.
	var tasks []*task[S]
	switch {
	case resuming:
		if tasks, err = r.resume(pending, input); err != nil {
			return res, err
		}
	case loaded && !hasInput:
		// A thread with nothing pending and no new input: nothing to run.
	default:
		if tasks, err = r.start(input, hasInput, pending); err != nil {
			return res, err
		}
	}
	return r.loop(tasks, resuming)
}

// configure reads the run options and, for a subgraph run, what it
// inherits from the task that started it.
func (r *runner[S]) configure(ctx context.Context, opts []RunOption) error {
	g := r.g
	r.rc.modes = ModeUpdates
	for _, o := range opts {
		o.applyRun(&r.rc)
	}
	cfg := &r.rc.cfg
	if cfg.RecursionLimit < 0 {
		return fmt.Errorf("graph: recursion limit %d: must be at least 1 (0 means the default, %d)", cfg.RecursionLimit, DefaultRecursionLimit)
	}
	if cfg.RecursionLimit == 0 {
		cfg.RecursionLimit = DefaultRecursionLimit
	}
	if cfg.RunID == "" {
		cfg.RunID = checkpoint.NewID()
	}
	if r.yield == nil {
		r.rc.modes = 0
	} else {
		r.rc.modes |= ModeInterrupt
	}
	r.shared = runShared{cfg: *cfg, modes: r.rc.modes, subgraphs: r.rc.subgraphs, saver: g.opts.saver, store: g.opts.store, durability: r.rc.durability, emit: r.emitFromTask, emitSub: r.emitSubFromTask}
	if r.shared.store == nil {
		r.shared.store, _ = ctx.Value(storeKey{}).(store.Store)
	}
	if err := r.breakpoints(); err != nil {
		return err
	}
	if r.parent != nil {
		// A subgraph run lives in its parent's task: it saves into the
		// parent's thread under its own namespace, with the parent's saver
		// and durability, and answers the resume values given to the parent.
		pr := r.parent.run
		r.shared.saver, r.shared.durability, r.shared.resume = pr.saver, pr.durability, pr.resume
		if r.shared.store == nil {
			r.shared.store = pr.store
		}
		r.rc.durability = pr.durability
		r.shared.cfg.Namespace = r.rc.cfg.Namespace
		switch {
		case pr.subgraphs:
			r.shared.modes = pr.modes &^ ModeInterrupt
			r.shared.subgraphs = true
			r.rc.modes = r.shared.modes
		default:
			// Without WithSubgraphs a subgraph's custom and message events
			// reach the parent's stream as the parent node's.
			r.shared.modes = pr.modes & (ModeCustom | ModeMessages)
			r.rc.modes = r.shared.modes
		}
	}
	return nil
}

// breakpoints merges the run's own breakpoints with the graph's.
func (r *runner[S]) breakpoints() error {
	r.before, r.after = r.g.interruptBefore, r.g.interruptAfter
	merge := func(set []bool, names []string, what string) ([]bool, error) {
		if len(names) == 0 {
			return set, nil
		}
		out := make([]bool, len(r.g.nodes))
		copy(out, set)
		for _, n := range names {
			spec, ok := r.g.byName[n]
			if !ok {
				return nil, fmt.Errorf("graph: %s: the graph has no node %q", what, n)
			}
			out[spec.idx] = true
		}
		return out, nil
	}
	var err error
	if r.before, err = merge(r.before, r.rc.interruptBefore, "WithInterruptBefore"); err != nil {
		return err
	}
	r.after, err = merge(r.after, r.rc.interruptAfter, "WithInterruptAfter")
	return err
}

// alloc makes the runner's scratch space.
func (r *runner[S]) alloc() {
	g := r.g
	r.buckets = make([][]Write[S], len(g.keys))
	r.marks = make([]bool, len(g.nodes))
	r.barriers = make([][]bool, len(g.joins))
	for i, j := range g.joins {
		r.barriers[i] = make([]bool, len(j.fromIdx))
	}
	if g.deferred {
		r.waiting = make([]bool, len(g.nodes))
	}
}

// lockThread takes the thread's lock when the saver has one. A subgraph run
// works under its parent's lock.
func (r *runner[S]) lockThread() (func(), error) {
	cfg := &r.rc.cfg
	if cfg.ThreadID == "" {
		return nil, ErrNoThread
	}
	l, ok := r.shared.saver.(checkpoint.ThreadLocker)
	if !ok || r.parent != nil {
		return func() {}, nil
	}
	unlock, err := l.TryLock(cfg.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("graph: thread %q: %w (one run per thread at a time: wait for the other run to end)", cfg.ThreadID, err)
	}
	return unlock, nil
}

// openThread loads the checkpoint the run starts from and returns the tasks
// it left pending, if any. A subgraph run that has nothing pending in its
// namespace starts afresh from its initial state.
func (r *runner[S]) openThread(hasInput bool) ([]*task[S], bool, error) {
	st, err := r.p.load(r.ctx, true)
	if err != nil {
		return nil, false, err
	}
	if st == nil {
		r.step = -2
		return nil, false, nil
	}
	if r.parent != nil && len(st.tuple.Checkpoint.Tasks) == 0 {
		r.p.cfg.CheckpointID, r.p.head = "", ""
		r.p.chain = chainInfo{}
		r.step = -2
		return nil, false, nil
	}
	r.state, r.barriers, r.version, r.step = st.state, st.barriers, st.version, st.step
	if st.waiting != nil {
		r.waiting = st.waiting
	}
	replay, err := r.p.dropReplayedWrites(r.ctx, st)
	if err != nil {
		return nil, true, err
	}
	tasks, err := r.restoreTasks(st)
	if err != nil || !replay || len(tasks) == 0 || hasInput {
		return tasks, true, err
	}
	// Replaying an older checkpoint starts a new branch with a copy of it
	// (source "fork"), so that what the replay leaves pending belongs to
	// the new branch, which is now the thread's latest.
	if err := r.p.commit(r, checkpoint.SourceFork, nil, tasks); err != nil {
		return nil, true, err
	}
	return tasks, true, nil
}

// start applies the input as the work of a virtual START task and plans the
// first step. Sends a thread left pending are kept for that step.
func (r *runner[S]) start(input Update[S], hasInput bool, pending []*task[S]) ([]*task[S], error) {
	g := r.g
	spec := g.start
	if len(input.gotos) > 0 || len(input.sends) > 0 {
		// An input that routes is a command, as in LangGraph: it goes
		// where it says, and START's own edges do not fire.
		spec = &nodeSpec[S]{name: START, idx: -1}
	}
	start := &task[S]{node: spec, upd: input}
	start.cx.tc = taskCtx{run: &r.shared, node: START, step: r.step}
	r.step++
	if r.initial != nil {
		r.state = *r.initial
	}
	if err := r.applyAndRoute([]*task[S]{start}); err != nil {
		return nil, err
	}
	tasks, err := r.plan([]*task[S]{start})
	if err != nil {
		return nil, err
	}
	for _, t := range pending {
		if t.push && !t.done {
			tasks = append(tasks, &task[S]{node: t.node, input: t.input, push: true})
		}
	}
	if r.p != nil {
		if err := r.p.commit(r, checkpoint.SourceInput, []*task[S]{start}, tasks); err != nil {
			return nil, err
		}
	}
	if hasInput || r.initial != nil {
		r.emitValues()
	}
	r.step++
	return tasks, nil
}

// resume continues the step a thread left pending: the input, if any, is
// applied first as a command (its writes are visible to the resumed tasks,
// its gotos add tasks to the step), then the resume values reach the
// interrupted tasks. The resumed step gets a number of its own.
func (r *runner[S]) resume(tasks []*task[S], input Update[S]) ([]*task[S], error) {
	r.step++
	var err error
	if tasks, err = r.applyCommand(tasks, input); err != nil {
		return nil, err
	}
	if err := r.assignResume(tasks); err != nil {
		return nil, err
	}
	r.emitValues()
	return tasks, nil
}

// loop runs supersteps until no task is left.
func (r *runner[S]) loop(tasks []*task[S], resuming bool) (Result[S], error) {
	cfg := &r.rc.cfg
	for steps := 0; len(tasks) > 0; steps++ {
		if r.stop {
			return r.result(nil), nil
		}
		if err := r.ctx.Err(); err != nil {
			return Result[S]{}, fmt.Errorf("graph: run cancelled at step %d: %w", r.step, err)
		}
		if steps >= cfg.RecursionLimit {
			return r.result(nil), &RecursionLimitError{Limit: cfg.RecursionLimit}
		}
		if in := r.breakBefore(tasks, resuming && steps == 0); in != nil {
			return r.result(in), nil
		}
		if r.tr != nil {
			r.ctx = r.tr.startStep(r.ctx, r.step, len(tasks))
		}
		r.runTasks(tasks)
		if r.stop {
			return r.result(nil), nil
		}
		if err := r.afterTasks(tasks); err != nil {
			return r.result(nil), err
		}
		if in := r.interrupts(tasks); len(in) > 0 {
			r.emitInterrupts(in)
			return r.result(in), nil
		}
		if err := r.applyAndRoute(tasks); err != nil {
			return r.result(nil), err
		}
		next, err := r.plan(tasks)
		if err != nil {
			return r.result(nil), err
		}
		if r.p != nil {
			if err := r.p.commit(r, checkpoint.SourceLoop, tasks, next); err != nil {
				return r.result(nil), err
			}
		}
		r.emitStep(tasks)
		if r.tr != nil {
			r.ctx = r.tr.stepDone()
		}
		if in := r.breakAfter(tasks, next); in != nil {
			return r.result(in), nil
		}
		if r.draining() && len(next) > 0 {
			return r.result(nil), ErrDrained
		}
		tasks = next
		r.step++
	}
	return r.result(nil), nil
}

// draining reports whether WithDrain's channel is closed.
func (r *runner[S]) draining() bool {
	if r.rc.drain == nil {
		return false
	}
	select {
	case <-r.rc.drain:
		return true
	default:
		return false
	}
}

// breakBefore pauses the run at a static breakpoint before a task, except
// on the step a run resumes.
func (r *runner[S]) breakBefore(tasks []*task[S], resumed bool) []Interruption {
	if r.before == nil || resumed {
		return nil
	}
	for _, t := range tasks {
		if t.node.idx >= 0 && r.before[t.node.idx] && !t.done {
			in := []Interruption{{ID: interruptID(r.rc.cfg.Namespace+"|"+t.cx.tc.taskID(), -1), Node: t.node.name, TaskID: t.cx.tc.taskID(), Namespace: r.rc.cfg.Namespace, When: "before"}}
			r.emitInterrupts(in)
			return in
		}
	}
	return nil
}

// breakAfter pauses the run at a static breakpoint after a task, when
// something is left to run.
func (r *runner[S]) breakAfter(tasks, next []*task[S]) []Interruption {
	if r.after == nil || len(next) == 0 {
		return nil
	}
	for _, t := range tasks {
		if t.node.idx >= 0 && r.after[t.node.idx] {
			in := []Interruption{{ID: interruptID(r.rc.cfg.Namespace+"|"+t.cx.tc.taskID(), -2), Node: t.node.name, TaskID: t.cx.tc.taskID(), Namespace: r.rc.cfg.Namespace, When: "after"}}
			r.emitInterrupts(in)
			return in
		}
	}
	return nil
}

func (r *runner[S]) result(in []Interruption) Result[S] {
	return Result[S]{State: r.g.view(&r.state), Interrupts: in}
}

// runTasks runs the step's tasks that are not already done: inline when
// there is one, else concurrently, the first failure cancelling the others.
func (r *runner[S]) runTasks(tasks []*task[S]) {
	var todo []*task[S]
	n := 0
	var only *task[S]
	for _, t := range tasks {
		if !t.done {
			n++
			only = t
		}
	}
	if n == 0 {
		return
	}
	if n == 1 {
		r.exec(r.ctx, only)
		return
	}
	todo = make([]*task[S], 0, n)
	for _, t := range tasks {
		if !t.done {
			todo = append(todo, t)
		}
	}
	stepCtx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var wg sync.WaitGroup
	var sem chan struct{}
	if r.rc.maxConcurrency > 0 {
		sem = make(chan struct{}, r.rc.maxConcurrency)
	}
	if r.rc.modes&(ModeCustom|ModeMessages|ModeDebug) != 0 || r.shared.subgraphs {
		// Events from the tasks (subgraphs' too) reach the stream through the
		// caller's goroutine, one at a time.
		r.events = make(chan streamItem)
	}
	// Each goroutine takes tasks until none is left, and a new one starts
	// only while tasks are waiting: tasks that block (a model call) still
	// all run at once, while a step of tiny tasks is done by a few
	// goroutines instead of paying one goroutine start per task.
	var taken atomic.Int64
	runOne := func(t *task[S]) {
		if sem != nil {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-stepCtx.Done():
				t.err = &NodeError{Node: t.node.name, Step: r.step, Err: stepCtx.Err()}
				return
			}
		}
		r.exec(stepCtx, t)
		if t.err != nil && !t.interrupted {
			cancel()
		}
	}
	take := func() {
		for {
			i := int(taken.Add(1) - 1)
			if i >= len(todo) {
				return
			}
			t := todo[i]
			start := time.Now()
			runOne(t)
			t.dur = time.Since(start)
		}
	}
	worker := func() {
		defer wg.Done()
		take()
	}
	defer r.noteQuick(todo)
	if r.events == nil && r.allQuick(todo) {
		// Every task's node ran in a moment the last time: the caller runs
		// them one after another, as starting a goroutine on another thread
		// costs more than they do. Should one of them take longer this
		// time (waiting on a sibling, say), the others start on their own
		// goroutines after slowTask, as they would have at once.
		var (
			mu     sync.Mutex
			closed bool
		)
		watch := time.AfterFunc(slowTask, func() {
			mu.Lock()
			defer mu.Unlock()
			for range len(todo) - int(taken.Load()) {
				if closed {
					return
				}
				wg.Add(1)
				go worker()
			}
		})
		stop := func() {
			mu.Lock()
			closed = true // no Add after this, so none races the Wait below
			mu.Unlock()
			watch.Stop()
		}
		defer stop() // also when a task's tracer or retry policy panics
		take()
		stop()
		wg.Wait() // for the goroutines the watchdog started, if any
		return
	}
	if r.events == nil {
		// The caller takes tasks too, so a step of two tiny tasks starts one goroutine, not three, and
		// nobody waits on a channel for a goroutine that waits for the others.
		for range len(todo) - 1 {
			if int(taken.Load()) >= len(todo) {
				break
			}
			wg.Add(1)
			go worker()
		}
		wg.Add(1)
		worker()
		wg.Wait()
		return
	}
	for range todo {
		if int(taken.Load()) >= len(todo) {
			break
		}
		wg.Add(1)
		go worker()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case it := <-r.events:
			r.deliver(it)
		case <-done:
			r.events = nil
			return
		}
	}
}

// quickTask is how long a task may take for its node to count as quick: a
// step whose tasks' nodes are all quick runs them on the caller's goroutine.
// It is about what handing a task to a sleeping thread costs. slowTask is
// how long such a step waits before starting the tasks not yet begun on
// goroutines of their own.
const (
	quickTask = 10 * time.Microsecond
	slowTask  = 100 * time.Microsecond
)

// allQuick reports whether every task's node ran quickly the last time it
// ran in a step of several tasks of this run.
func (r *runner[S]) allQuick(tasks []*task[S]) bool {
	if r.quick == nil {
		return false
	}
	for _, t := range tasks {
		if !r.quick[t.node.idx] {
			return false
		}
	}
	return true
}

// noteQuick records which nodes' tasks of a step of several ran quickly.
func (r *runner[S]) noteQuick(tasks []*task[S]) {
	if r.quick == nil {
		r.quick = make([]bool, len(r.g.nodes))
	}
	for _, t := range tasks {
		r.quick[t.node.idx] = true
	}
	for _, t := range tasks {
		if t.dur >= quickTask || t.err != nil {
			r.quick[t.node.idx] = false
		}
	}
}

// exec runs one task with its retry policy and timeout; a panic becomes a
// NodeError.
func (r *runner[S]) exec(ctx context.Context, t *task[S]) {
	t.cx.tc.run = &r.shared
	t.cx.tc.step = r.step
	t.cx.tc.node = t.node.name
	var endTask func(Outcome)
	if r.tr != nil {
		ctx, endTask = r.tr.startTask(ctx, &t.cx.tc, t.push)
	}
	t.cx.Context = ctx
	tctx := &t.cx
	debugging := r.rc.modes&ModeDebug != 0
	var start time.Time
	if debugging {
		start = time.Now()
		r.emitFromTask(&t.cx.tc, ModeDebug, &DebugInfo{Type: "task_start", Time: start})
	}
	for attempt := 1; ; attempt++ {
		t.cx.tc.calls, t.cx.tc.raised = 0, nil
		t.upd, t.err = r.call(tctx, t)
		if t.err == nil || t.node.retry == nil || !retryable(t.err) || ctx.Err() != nil {
			break
		}
		wait, again := t.node.retry.next(attempt, t.err)
		if !again {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
		if ctx.Err() != nil {
			break
		}
	}
	if debugging {
		t.dur = time.Since(start)
	}
	if t.err != nil {
		var ie *interruptSignal
		var pc *parentCommand
		switch {
		case errors.As(t.err, &ie):
			t.interrupted = true
			t.err = nil
		case errors.As(t.err, &pc):
			// A command for the graph above: the subgraph run ends with it
			// as its error, unwrapped, for the parent's task to take.
			t.err = pc
		default:
			var ne *NodeError
			if !errors.As(t.err, &ne) || ne.Node != t.node.name {
				t.err = &NodeError{Node: t.node.name, Step: r.step, Err: t.err}
			}
		}
	}
	if r.rc.modes&ModeDebug != 0 {
		r.emitFromTask(&t.cx.tc, ModeDebug, &DebugInfo{Type: "task_end", Time: time.Now(), Duration: t.dur, Err: t.err})
	}
	if endTask != nil {
		endTask(Outcome{Err: t.err, Interrupts: t.cx.tc.raised})
	}
}

func (r *runner[S]) call(ctx context.Context, t *task[S]) (upd Update[S], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Node: t.node.name, Step: r.step, Panic: true, Err: fmt.Errorf("%v\n%s", p, debug.Stack())}
		}
	}()
	if t.node.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.node.timeout)
		defer cancel()
		upd, err = t.node.node.Run(ctx, t.input)
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v: %w", t.node.timeout, err)
		}
		return upd, err
	}
	return t.node.node.Run(ctx, t.input)
}

// afterTasks handles a step in which a task failed: the writes of the tasks
// that succeeded are saved, so that resuming does not run them again.
func (r *runner[S]) afterTasks(tasks []*task[S]) error {
	var first error
	for _, t := range tasks {
		if t.err != nil && first == nil {
			first = t.err
		}
	}
	if first == nil {
		return nil
	}
	if r.p != nil {
		if err := r.routeEach(tasks); err != nil {
			return errors.Join(first, err)
		}
		if err := r.p.saveTasks(r, tasks); err != nil {
			return errors.Join(first, err)
		}
	}
	return first
}

// routeEach computes each finished task's routes on the state as its own
// writes left it, for steps whose writes are not applied together.
func (r *runner[S]) routeEach(tasks []*task[S]) error {
	for _, t := range tasks {
		if t.err != nil || t.interrupted || t.done {
			continue
		}
		if err := r.route(t, true); err != nil {
			return err
		}
	}
	return nil
}

// applyAndRoute folds the step's writes into the state in task order and
// computes where each task goes next.
func (r *runner[S]) applyAndRoute(tasks []*task[S]) error {
	// Routers read the state as their own task's writes left it. With one
	// task that is the state after the step; with several, each task's
	// writes are applied to a copy of the snapshot before the step's writes.
	single := len(tasks) == 1
	if !single {
		for _, t := range tasks {
			if t.done {
				continue
			}
			if err := r.route(t, true); err != nil {
				return err
			}
		}
	}
	if err := r.apply(tasks); err != nil {
		return err
	}
	if single && !tasks[0].done {
		return r.route(tasks[0], false)
	}
	return nil
}

func (r *runner[S]) apply(tasks []*task[S]) error {
	g := r.g
	for _, t := range tasks {
		for _, w := range t.upd.writes {
			ki, ok := g.keyIndex[w.key()]
			if !ok {
				return &InvalidUpdateError{Key: w.key().Name(), Nodes: []string{t.node.name}, Step: r.step, Msg: "the key is not declared in graph.New"}
			}
			if len(r.buckets[ki]) == 0 {
				r.touched = append(r.touched, ki)
			}
			r.buckets[ki] = append(r.buckets[ki], w)
		}
	}
	defer func() {
		for _, ki := range r.touched {
			clear(r.buckets[ki])
			r.buckets[ki] = r.buckets[ki][:0]
		}
		r.touched = r.touched[:0]
	}()
	for _, ki := range r.touched {
		ws := r.buckets[ki]
		k := g.keys[ki]
		over := 0
		for _, w := range ws {
			if w.isOverwrite() {
				over++
			}
		}
		switch {
		case over > 1:
			return &InvalidUpdateError{Key: k.Name(), Nodes: writers(tasks, k), Step: r.step, Msg: "two overwrites of one key in a step"}
		case k.isLastValue() && len(ws) > 1:
			return &InvalidUpdateError{Key: k.Name(), Nodes: writers(tasks, k), Step: r.step, Msg: "a last-value key takes one write per step: give the key a reducer, or write it from one node"}
		}
	}
	if r.p != nil {
		r.version++
	}
	for _, ki := range r.touched {
		k := g.keys[ki]
		if err := r.applyKey(k, &r.state, r.buckets[ki], tasks, ""); err != nil {
			return err
		}
		if r.p != nil {
			if err := r.p.record(k, &r.state, r.buckets[ki], r.version); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyKey folds writes into one key of s; a panicking reducer (or field
// accessor) becomes an error naming the key.
func (r *runner[S]) applyKey(k AnyKey[S], s *S, ws []Write[S], tasks []*task[S], node string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			nodes := []string{node}
			if node == "" {
				nodes = writers(tasks, k)
			}
			err = &InvalidUpdateError{Key: k.Name(), Nodes: nodes, Step: r.step, Msg: fmt.Sprintf("the key's reducer panicked: %v\n%s", p, debug.Stack())}
		}
	}()
	return k.apply(s, ws)
}

// callRouter calls a router; a panic becomes its error.
func callRouter[S any](router Router[S], ctx context.Context, s S) (rt Route[S], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the router panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return router(ctx, s)
}

func writers[S any](tasks []*task[S], k AnyKey[S]) []string {
	var names []string
	for _, t := range tasks {
		for _, w := range t.upd.writes {
			if w.key() == k {
				names = append(names, t.node.name)
			}
		}
	}
	return names
}

// route computes where t goes: static edges are resolved at plan time; here
// its routers, Gotos and Sends.
func (r *runner[S]) route(t *task[S], local bool) error {
	t.routes = t.routes[:0]
	t.sends = t.sends[:0]
	n := t.node
	if len(n.branches) > 0 {
		var s S
		if local {
			s = r.g.view(&r.state)
			for i := range t.upd.writes {
				w := t.upd.writes[i]
				ki, ok := r.g.keyIndex[w.key()]
				if !ok {
					return &InvalidUpdateError{Key: w.key().Name(), Nodes: []string{n.name}, Step: r.step, Msg: "the key is not declared in graph.New"}
				}
				if err := r.applyKey(r.g.keys[ki], &s, t.upd.writes[i:i+1], nil, n.name); err != nil {
					return err
				}
			}
		} else {
			s = r.g.view(&r.state)
		}
		ctx := context.WithValue(r.ctx, taskKey{}, &t.cx.tc)
		for _, b := range n.branches {
			rt, err := callRouter(b.router, ctx, s)
			if err != nil {
				return &RouteError{From: n.name, Step: r.step, Err: err}
			}
			for _, name := range rt.Nodes {
				if b.pathMap != nil {
					mapped, ok := b.pathMap[name]
					if !ok {
						return &RouteError{From: n.name, Step: r.step, Err: fmt.Errorf("router returned %q, which its path map lacks", name)}
					}
					name = mapped
				}
				if err := r.addRoute(t, name); err != nil {
					return err
				}
			}
			for _, s := range rt.Sends {
				if err := r.addSend(t, s); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range t.upd.gotos {
		if err := r.addRoute(t, name); err != nil {
			return err
		}
	}
	for _, s := range t.upd.sends {
		if err := r.addSend(t, s); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner[S]) addRoute(t *task[S], name string) error {
	if name == END {
		return nil
	}
	n, ok := r.g.byName[name]
	if !ok {
		return &RouteError{From: t.node.name, To: name, Step: r.step}
	}
	t.routes = append(t.routes, n.idx)
	return nil
}

func (r *runner[S]) addSend(t *task[S], s Send[S]) error {
	if _, ok := r.g.byName[s.Node]; !ok {
		return &RouteError{From: t.node.name, To: s.Node, Step: r.step}
	}
	t.sends = append(t.sends, s)
	return nil
}

// plan turns the step's routes into the next step's tasks: one task per
// triggered node in name order, then one per Send in order.
func (r *runner[S]) plan(tasks []*task[S]) ([]*task[S], error) {
	g := r.g
	marked := r.marked[:0]
	mark := func(i int) {
		if !r.marks[i] {
			r.marks[i] = true
			marked = append(marked, i)
		}
	}
	sends := 0
	// A join's target consumes the join when it runs (not when it is
	// planned), so a pending join survives a breakpoint and UpdateState.
	for _, t := range tasks {
		if !t.push {
			for _, ji := range t.node.joinsIn {
				clear(r.barriers[ji])
			}
		}
	}
	joined := false
	for _, t := range tasks {
		for _, i := range t.node.next {
			mark(i)
		}
		for _, i := range t.routes {
			mark(i)
		}
		sends += len(t.sends)
		for _, ji := range t.node.joins {
			j := &g.joins[ji]
			for p, f := range j.fromIdx {
				if f == t.node.idx {
					r.barriers[ji][p] = true
					joined = true
				}
			}
		}
	}
	if joined || len(tasks) == 1 && tasks[0].node.idx < 0 {
		for ji := range g.joins {
			b := r.barriers[ji]
			if slices.Contains(b, false) {
				continue
			}
			if j := &g.joins[ji]; j.toIdx >= 0 {
				mark(j.toIdx)
			} else {
				clear(b)
			}
		}
	}
	if g.deferred {
		marked = r.holdDeferred(marked, sends)
	}
	r.marked = marked
	if len(marked)+sends == 0 {
		return nil, nil
	}
	// Two buffers take turns: the slice returned two steps ago is dead.
	r.flip ^= 1
	next := r.bufs[r.flip][:0]
	clear(next[:cap(next)])
	if len(marked) > 0 {
		view := g.view(&r.state)
		for _, i := range marked {
			r.marks[i] = false
			next = append(next, &task[S]{node: g.nodes[i], input: view})
		}
		if len(next) > 1 {
			slices.SortFunc(next, func(a, b *task[S]) int { return a.node.rank - b.node.rank })
		}
	}
	for _, t := range tasks {
		for _, s := range t.sends {
			next = append(next, &task[S]{node: g.byName[s.Node], input: s.State, push: true})
		}
	}
	for _, t := range next {
		t.cx.tc.node = t.node.name
	}
	r.bufs[r.flip] = next
	return next, nil
}

// holdDeferred keeps the triggered nodes compiled WithDefer waiting while
// other tasks are left, and releases every waiting one when none is.
func (r *runner[S]) holdDeferred(marked []int, sends int) []int {
	kept := marked[:0]
	for _, i := range marked {
		if r.g.nodes[i].defers {
			r.marks[i] = false
			r.waiting[i] = true
			continue
		}
		kept = append(kept, i)
	}
	if len(kept)+sends > 0 {
		return kept
	}
	for i, w := range r.waiting {
		if w {
			r.waiting[i] = false
			r.marks[i] = true
			kept = append(kept, i)
		}
	}
	return kept
}

// emitFromTask delivers an event raised inside a task: directly when the
// task runs on the run's goroutine, through the step's channel otherwise.
func (r *runner[S]) emitFromTask(t *taskCtx, mode Mode, data any) {
	if r.rc.modes&mode == 0 || r.yield == nil {
		return
	}
	if mode == ModeMessages {
		t.streamed.Store(true)
	}
	if ch := r.events; ch != nil {
		select {
		case ch <- streamItem{t: t, mode: mode, data: data}:
		case <-r.ctx.Done():
		}
		return
	}
	r.deliver(streamItem{t: t, mode: mode, data: data})
}

// emitSubFromTask passes on an event of a subgraph run that task t runs:
// tagged with its namespace with WithSubgraphs, otherwise (custom and
// message events only) as t's own.
func (r *runner[S]) emitSubFromTask(t *taskCtx, ev subEvent) {
	if ev.mode == ModeInterrupt {
		return // the interrupts reach the stream as this run's
	}
	if !r.shared.subgraphs {
		r.emitFromTask(t, ev.mode, ev.data)
		return
	}
	if r.rc.modes&ev.mode == 0 || r.yield == nil {
		return
	}
	if ch := r.events; ch != nil {
		select {
		case ch <- streamItem{t: t, mode: ev.mode, sub: &ev}:
		case <-r.ctx.Done():
		}
		return
	}
	r.deliver(streamItem{t: t, mode: ev.mode, sub: &ev})
}

func (r *runner[S]) deliver(it streamItem) {
	if se := it.sub; se != nil {
		ev := Event[S]{Mode: se.mode, Namespace: se.ns, Step: se.step, Node: se.node, TaskID: se.taskID, Update: se.update, Data: se.data, Debug: se.debug, Interrupts: se.interrupts}
		if se.mode == ModeValues {
			// The subgraph's state is of its own type: it travels in Data.
			ev.Data = se.state
		}
		r.send(ev)
		return
	}
	ev := Event[S]{Mode: it.mode, Step: it.t.step, Node: it.t.node, TaskID: it.t.taskID()}
	if it.mode == ModeDebug {
		ev.Debug = it.data.(*DebugInfo)
	} else {
		ev.Data = it.data
	}
	r.send(ev)
}

func (r *runner[S]) send(ev Event[S]) {
	if r.stop || r.yield == nil {
		return
	}
	if !r.yield(ev) {
		r.stop = true
	}
}

func (r *runner[S]) emitValues() {
	if r.rc.modes&ModeValues != 0 {
		r.send(Event[S]{Mode: ModeValues, Step: r.step, State: r.g.view(&r.state)})
	}
}

func (r *runner[S]) emitStep(tasks []*task[S]) {
	if r.yield == nil {
		return
	}
	if r.rc.modes&ModeMessages != 0 {
		r.emitStateMessages(tasks)
	}
	if r.rc.modes&ModeUpdates != 0 {
		for _, t := range tasks {
			m := make(map[string]any, len(t.upd.writes))
			for _, w := range t.upd.writes {
				m[w.key().Name()] = w.value()
			}
			r.send(Event[S]{Mode: ModeUpdates, Step: r.step, Node: t.node.name, TaskID: t.cx.tc.taskID(), Update: m})
		}
	}
	if r.rc.modes&ModeDebug != 0 {
		r.send(Event[S]{Mode: ModeDebug, Step: r.step, Debug: &DebugInfo{Type: "step", Time: time.Now(), Tasks: len(tasks)}})
	}
	r.emitValues()
}

// emitStateMessages yields, in ModeMessages, the messages each task of the
// step wrote to keys marked AsMessages, when the task streamed none itself.
func (r *runner[S]) emitStateMessages(tasks []*task[S]) {
	for _, t := range tasks {
		if t.done || t.cx.tc.streamed.Load() {
			continue
		}
		for _, w := range t.upd.writes {
			for _, m := range w.key().messageItems(w) {
				r.send(Event[S]{Mode: ModeMessages, Step: r.step, Node: t.node.name, TaskID: t.cx.tc.taskID(), Data: m})
			}
		}
	}
}

func (r *runner[S]) emitInterrupts(in []Interruption) {
	r.send(Event[S]{Mode: ModeInterrupt, Step: r.step, Interrupts: in})
}
