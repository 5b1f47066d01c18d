package graph

import "context"

// Tracer watches runs as they happen: the engine tells it when a run, each
// of its supersteps and each task starts and ends. Each Trace method returns
// the context the work inside runs under and a function the engine calls
// once when that work ends. A tracer that keeps a span in the context (as
// OpenTelemetry does) thereby nests every task under its step and run, and
// whatever a node does with its context (a model call, a tool call, a
// subgraph run) under its task, across the goroutines tasks run on.
//
// Give a tracer to runs through their context with ContextWithTracer; a
// subgraph run finds its parent's the same way. Without one the engine's cost
// is one nil check at each of these points. The engine calls the methods of
// one run from several goroutines at once (one per running task), so they must
// be safe for concurrent use; they should return quickly.
type Tracer interface {
	TraceRun(ctx context.Context, run TracedRun) (context.Context, func(Outcome))
	TraceStep(ctx context.Context, step TracedStep) (context.Context, func(Outcome))
	TraceTask(ctx context.Context, task TracedTask) (context.Context, func(Outcome))
}

// TracedRun describes a run to a Tracer.
type TracedRun struct {
	RunID    string
	ThreadID string
	// Namespace is "" for a graph's own run and the subgraph's path for a
	// subgraph run (see Interruption.Namespace).
	Namespace string
	// CheckpointID is the checkpoint a replay starts from, "" for the latest.
	CheckpointID string
	// Resume is set when the run resumes a paused step (WithResume).
	Resume bool
}

// TracedStep describes a superstep to a Tracer.
type TracedStep struct {
	RunID    string
	ThreadID string
	Step     int
	// Tasks is how many tasks the step holds, including those restored from
	// a paused or failed step, which do not run again.
	Tasks int
}

// TracedTask describes a task to a Tracer.
type TracedTask struct {
	RunID    string
	ThreadID string
	Node     string
	TaskID   string
	Step     int
	// Push is set for a task started by a Send.
	Push bool
}

// Outcome is how a run, a step or a task ended: with an error, paused by
// interrupts, or neither.
type Outcome struct {
	Err        error
	Interrupts []Interruption
}

type tracerKey struct{}

// ContextWithTracer returns ctx carrying t: the runs started with the
// returned context (and the subgraph runs their nodes start) report to t.
func ContextWithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, tracerKey{}, t)
}

// TracerFrom returns the Tracer ctx carries, or nil.
func TracerFrom(ctx context.Context) Tracer {
	t, _ := ctx.Value(tracerKey{}).(Tracer)
	return t
}

// runTrace is a traced run's link to its Tracer: the ends of the run's span
// and of its open step's, and the run's context to go back to after a step.
type runTrace struct {
	t       Tracer
	run     TracedRun
	runCtx  context.Context
	endRun  func(Outcome)
	endStep func(Outcome)
}

// newRunTrace starts tracing a run when ctx carries a Tracer, returning the
// run's context; it returns nil and ctx otherwise.
func newRunTrace(ctx context.Context, cfg *Config, resume bool) (*runTrace, context.Context) {
	t := TracerFrom(ctx)
	if t == nil {
		return nil, ctx
	}
	tr := &runTrace{t: t, run: TracedRun{RunID: cfg.RunID, ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cfg.CheckpointID, Resume: resume}}
	ctx, tr.endRun = t.TraceRun(ctx, tr.run)
	return tr, ctx
}

// end ends the open step, if any, and the run, with the run's outcome.
func (tr *runTrace) end(in []Interruption, err error) {
	o := Outcome{Err: err, Interrupts: in}
	if tr.endStep != nil {
		tr.endStep(o)
		tr.endStep = nil
	}
	tr.endRun(o)
}

// startStep starts a step's span and returns the context its tasks run
// under; stepDone returns ctx again.
func (tr *runTrace) startStep(ctx context.Context, step, tasks int) context.Context {
	tr.runCtx = ctx
	ctx, tr.endStep = tr.t.TraceStep(ctx, TracedStep{RunID: tr.run.RunID, ThreadID: tr.run.ThreadID, Step: step, Tasks: tasks})
	return ctx
}

// stepDone ends the step that finished without error and returns the run's
// context for what follows.
func (tr *runTrace) stepDone() context.Context {
	if tr.endStep != nil {
		tr.endStep(Outcome{})
		tr.endStep = nil
	}
	return tr.runCtx
}

// startTask starts a task's span and returns the context the node runs
// under.
func (tr *runTrace) startTask(ctx context.Context, t *taskCtx, push bool) (context.Context, func(Outcome)) {
	return tr.t.TraceTask(ctx, TracedTask{RunID: tr.run.RunID, ThreadID: tr.run.ThreadID, Node: t.node, TaskID: t.taskID(), Step: t.step, Push: push})
}
