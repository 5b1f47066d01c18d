package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/store"
)

// DefaultRecursionLimit is the number of supersteps a run may take when the
// run sets no limit. A step here is one round of nodes; the input is not a
// step, so a chain of N nodes needs a limit of at least N.
const DefaultRecursionLimit = 10000

// Config is a run's configuration as seen from inside it: every node, router
// and tool below a node reads it with ConfigFrom. Node, Step and TaskID say
// where in the run the caller is.
type Config struct {
	ThreadID       string
	Namespace      string
	CheckpointID   string
	RunID          string
	RecursionLimit int
	// Values carries the caller's own values (user id, tenant, ...).
	Values map[string]any

	Node   string
	Step   int
	TaskID string
}

type configKey struct{}

// ContextWithConfig returns ctx carrying cfg, so that code written to run under a
// graph (a tool, for example) can be called directly with a run config.
func ContextWithConfig(ctx context.Context, cfg Config) context.Context {
	return context.WithValue(ctx, configKey{}, &cfg)
}

type storeKey struct{}

// ContextWithStore returns ctx carrying s, for runs of graphs compiled
// without WithStore (a server gives its store to every graph it runs this
// way), and for code written to run under a graph called directly.
func ContextWithStore(ctx context.Context, s store.Store) context.Context {
	return context.WithValue(ctx, storeKey{}, s)
}

// StoreFrom returns the store of the run ctx belongs to: the graph's
// (WithStore), else the one the run's context carries (ContextWithStore),
// else nil. Subgraphs share their parent's.
func StoreFrom(ctx context.Context) store.Store {
	if t, ok := ctx.Value(taskKey{}).(*taskCtx); ok && t.run.store != nil {
		return t.run.store
	}
	s, _ := ctx.Value(storeKey{}).(store.Store)
	return s
}

// ConfigFrom returns the run configuration ctx carries, and whether it
// carries one. It works at any depth below a node.
func ConfigFrom(ctx context.Context) (Config, bool) {
	if t, ok := ctx.Value(taskKey{}).(*taskCtx); ok {
		cfg := t.run.cfg
		cfg.Node, cfg.Step, cfg.TaskID = t.node, t.step, t.taskID()
		return cfg, true
	}
	if c, ok := ctx.Value(configKey{}).(*Config); ok {
		return *c, true
	}
	return Config{}, false
}

// ThreadIDFrom returns the thread id of the run ctx belongs to, or "".
func ThreadIDFrom(ctx context.Context) string {
	cfg, _ := ConfigFrom(ctx)
	return cfg.ThreadID
}

// Durability says when a run with a saver writes its checkpoints.
type Durability uint8

const (
	// DurabilityAsync saves each step's checkpoint in the background, in
	// order, while the next step runs; the run returns after the last save.
	DurabilityAsync Durability = iota
	// DurabilitySync saves each step's checkpoint before the next step starts.
	DurabilitySync
	// DurabilityExit saves one checkpoint when the run ends: on success, on
	// error and on interrupt.
	DurabilityExit
)

func (d Durability) String() string {
	switch d {
	case DurabilitySync:
		return "sync"
	case DurabilityExit:
		return "exit"
	}
	return "async"
}

// Mode is a stream mode; modes combine with |.
type Mode uint8

// Stream modes.
const (
	// ModeValues yields the whole state after each step (and the input).
	ModeValues Mode = 1 << iota
	// ModeUpdates yields each task's writes after its step.
	ModeUpdates
	// ModeCustom yields what nodes pass to Emit.
	ModeCustom
	// ModeMessages yields what nodes pass to EmitMessage: a model's tokens.
	ModeMessages
	// ModeDebug yields task starts and ends and step summaries with timings.
	ModeDebug
	// ModeInterrupt yields the interrupts that pause a run; every stream has it.
	ModeInterrupt
)

func (m Mode) String() string {
	names := []string{"values", "updates", "custom", "messages", "debug", "interrupt"}
	out := ""
	for i, n := range names {
		if m&(1<<i) != 0 {
			if out != "" {
				out += "|"
			}
			out += n
		}
	}
	if out == "" {
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
	return out
}

// Options follow one rule across agentgraph: an option is a function named
// With<what it sets> (or Without<what it turns off>), and each kind of call
// takes its own option type, so an option given to a call it does not serve
// fails to compile instead of doing nothing. An option that serves several
// calls has a type that satisfies each of their option interfaces.

// RunOption configures one Invoke or Stream.
type RunOption interface{ applyRun(*runConfig) }

// StateOption configures GetState.
type StateOption interface{ applyState(*stateConfig) }

// HistoryOption configures GetStateHistory.
type HistoryOption interface{ applyHistory(*historyConfig) }

type runOption func(*runConfig)

func (f runOption) applyRun(r *runConfig) { f(r) }

type runConfig struct {
	cfg            Config
	maxConcurrency int
	durability     Durability
	modes          Mode
	subgraphs      bool
	resume         *resumeSpec
	metadata       map[string]string
	// breakpoints of this run only, by node name
	interruptBefore []string
	interruptAfter  []string
	drain           <-chan struct{}
}

type stateConfig struct {
	addr      checkpoint.Config
	subgraphs bool
}

type historyConfig struct {
	addr checkpoint.Config
	list checkpoint.ListOptions
}

type resumeSpec struct {
	value any
	byID  map[string]any
	none  bool // WithContinue: no value
}

// ThreadOption names the thread a call works on, and optionally a checkpoint
// of it. The same options serve Invoke, Stream, GetState, GetStateHistory and
// UpdateState, so a thread is named one way everywhere.
type ThreadOption func(*checkpoint.Config)

func (f ThreadOption) applyRun(r *runConfig) {
	a := checkpoint.Config{ThreadID: r.cfg.ThreadID, Namespace: r.cfg.Namespace, CheckpointID: r.cfg.CheckpointID}
	f(&a)
	r.cfg.ThreadID, r.cfg.Namespace, r.cfg.CheckpointID = a.ThreadID, a.Namespace, a.CheckpointID
}
func (f ThreadOption) applyState(s *stateConfig)     { f(&s.addr) }
func (f ThreadOption) applyHistory(h *historyConfig) { f(&h.addr) }

// WithThread names the thread: with a saver, a run continues it.
func WithThread(id string) ThreadOption { return func(c *checkpoint.Config) { c.ThreadID = id } }

// WithCheckpointID addresses one checkpoint of the thread instead of its
// latest. A run from an older checkpoint with no input replays the steps
// after it on a new branch, leaving the old one intact.
func WithCheckpointID(id string) ThreadOption {
	return func(c *checkpoint.Config) { c.CheckpointID = id }
}

// WithCheckpoint addresses the checkpoint cfg names (thread, namespace and
// id), as found in Snapshot.Config, Result.Checkpoint or UpdateState's
// result.
func WithCheckpoint(cfg checkpoint.Config) ThreadOption {
	return func(c *checkpoint.Config) { *c = cfg }
}

// subgraphsOption serves both Stream and GetState.
type subgraphsOption struct{}

func (subgraphsOption) applyRun(r *runConfig)     { r.subgraphs = true }
func (subgraphsOption) applyState(s *stateConfig) { s.subgraphs = true }

// WithSubgraphs includes subgraphs: a stream yields the events of subgraph
// runs too, each with its Namespace; GetState fills TaskInfo.State of each
// pending subgraph task with the subgraph's own snapshot.
func WithSubgraphs() interface {
	RunOption
	StateOption
} {
	return subgraphsOption{}
}

type historyOption func(*historyConfig)

func (f historyOption) applyHistory(h *historyConfig) { f(h) }

// WithLimit yields at most n checkpoints.
func WithLimit(n int) HistoryOption {
	return historyOption(func(h *historyConfig) { h.list.Limit = n })
}

// WithBefore yields only checkpoints older than the checkpoint id.
func WithBefore(id string) HistoryOption {
	return historyOption(func(h *historyConfig) { h.list.Before = id })
}

// WithFilter yields only checkpoints whose metadata has key set to value:
// "source", "step", "run_id", or a key given to WithMetadata.
func WithFilter(key, value string) HistoryOption {
	return historyOption(func(h *historyConfig) {
		if h.list.Filter == nil {
			h.list.Filter = map[string]string{}
		}
		h.list.Filter[key] = value
	})
}

// WithRunID names the run (default: a new id).
func WithRunID(id string) RunOption { return runOption(func(r *runConfig) { r.cfg.RunID = id }) }

// WithRecursionLimit caps the number of supersteps of this run.
func WithRecursionLimit(n int) RunOption {
	return runOption(func(r *runConfig) { r.cfg.RecursionLimit = n })
}

// WithMaxConcurrency caps how many tasks of one step run at once (0: no cap).
func WithMaxConcurrency(n int) RunOption {
	return runOption(func(r *runConfig) { r.maxConcurrency = n })
}

// WithDurability sets when checkpoints are written (default DurabilityAsync).
func WithDurability(d Durability) RunOption {
	return runOption(func(r *runConfig) { r.durability = d })
}

// WithValue adds a caller value to the run config, read with ConfigFrom.
func WithValue(key string, v any) RunOption {
	return runOption(func(r *runConfig) {
		if r.cfg.Values == nil {
			r.cfg.Values = map[string]any{}
		}
		r.cfg.Values[key] = v
	})
}

// WithMetadata adds string metadata to every checkpoint the run writes;
// GetStateHistory can filter by it with WithFilter.
func WithMetadata(key, value string) RunOption {
	return runOption(func(r *runConfig) {
		if r.metadata == nil {
			r.metadata = map[string]string{}
		}
		r.metadata[key] = value
	})
}

// WithStreamModes selects what Stream yields (default ModeUpdates).
// Interrupts are always yielded.
func WithStreamModes(m Mode) RunOption { return runOption(func(r *runConfig) { r.modes = m }) }

// WithResume answers the single pending interrupt of the thread with v: the
// interrupted node runs again from its start and its Interrupt call returns
// v. The run's input, if any, is applied first (a command on resume).
func WithResume(v any) RunOption {
	return runOption(func(r *runConfig) { r.resume = &resumeSpec{value: v} })
}

// WithContinue continues the step a thread left pending (after a static
// breakpoint, a failure or an interrupt) with the run's input applied to it
// as a command: its writes reach the state before the pending tasks run
// again, and its Gotos and Sends add tasks to that step. Without it, input
// to a thread starts a new run and the pending step is dropped (its Sends
// are kept). Pending interrupts are raised again: answer them with
// WithResume or WithResumeByID, which continue the step the same way. On a
// thread with nothing pending, the input starts a run as usual, and an
// empty input runs nothing: continuing a finished thread is not an error.
func WithContinue() RunOption {
	return runOption(func(r *runConfig) { r.resume = &resumeSpec{none: true} })
}

// WithDrain stops the run at the next step boundary once drain is closed:
// the step in flight finishes and is saved, and the run returns ErrDrained
// with its state. Continuing the thread (Invoke with an empty input) picks
// up the next step. A server stops its runs this way when it shuts down.
func WithDrain(drain <-chan struct{}) RunOption {
	return runOption(func(r *runConfig) { r.drain = drain })
}

// WithResumeByID answers several pending interrupts, by interrupt id; the
// ids may belong to interrupts raised inside subgraphs.
func WithResumeByID(values map[string]any) RunOption {
	return runOption(func(r *runConfig) { r.resume = &resumeSpec{byID: values} })
}

// Event is one item of a Stream. Which fields are set depends on Mode.
type Event[S any] struct {
	Mode Mode
	// Namespace is "" for an event of this graph's run, and the subgraph
	// run's namespace for an event a subgraph sent (WithSubgraphs).
	Namespace string
	Step      int
	Node      string
	TaskID    string
	// State is the whole state (ModeValues). A subgraph's state, of its own
	// type, is in Data instead.
	State S
	// Update maps key names to the values a task wrote (ModeUpdates).
	Update map[string]any
	// Data is what a node emitted (ModeCustom, ModeMessages).
	Data any
	// Debug describes a task or a step (ModeDebug).
	Debug *DebugInfo
	// Interrupts are the interrupts that paused the run (ModeInterrupt).
	Interrupts []Interruption
}

// DebugInfo is the payload of a ModeDebug event. Type is "task_start",
// "task_end" or "step".
type DebugInfo struct {
	Type     string
	Time     time.Time
	Duration time.Duration
	Tasks    int
	Err      error
}

// Emit sends v to the run's stream in ModeCustom, from the node ctx belongs
// to. It does nothing when the run does not stream that mode.
func Emit(ctx context.Context, v any) { emit(ctx, ModeCustom, v) }

// EmitMessage sends a model's output chunk to the run's stream in
// ModeMessages, with the node and step it came from.
func EmitMessage(ctx context.Context, chunk any) { emit(ctx, ModeMessages, chunk) }

// Streaming reports whether the run ctx belongs to streams mode m, so a node
// can skip work nobody reads (a model call can stream only when asked).
func Streaming(ctx context.Context, m Mode) bool {
	t, ok := ctx.Value(taskKey{}).(*taskCtx)
	return ok && t.run.modes&m != 0
}

func emit(ctx context.Context, mode Mode, v any) {
	if t, ok := ctx.Value(taskKey{}).(*taskCtx); ok && t.run.modes&mode != 0 {
		t.run.emit(t, mode, v)
	}
}
