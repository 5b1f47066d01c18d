package graph

import (
	"context"
	"fmt"
	"time"
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

// WithConfig returns ctx carrying cfg, so that code written to run under a
// graph (a tool, for example) can be called directly with a run config.
func WithConfig(ctx context.Context, cfg Config) context.Context {
	return context.WithValue(ctx, configKey{}, &cfg)
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

// RunOption configures one Invoke or Stream.
type RunOption func(*runConfig)

type runConfig struct {
	cfg            Config
	maxConcurrency int
	durability     Durability
	modes          Mode
	resume         *resumeSpec
	metadata       map[string]string
}

type resumeSpec struct {
	value any
	byID  map[string]any
}

// Thread runs on thread id: with a saver, the run continues the thread.
func Thread(id string) RunOption { return func(r *runConfig) { r.cfg.ThreadID = id } }

// AtCheckpoint runs from checkpoint id of the thread instead of its latest:
// with no input it replays the steps after it, leaving the old branch intact.
func AtCheckpoint(id string) RunOption { return func(r *runConfig) { r.cfg.CheckpointID = id } }

// RunID names the run (default: a new id).
func RunID(id string) RunOption { return func(r *runConfig) { r.cfg.RunID = id } }

// RecursionLimit caps the number of supersteps of this run.
func RecursionLimit(n int) RunOption { return func(r *runConfig) { r.cfg.RecursionLimit = n } }

// MaxConcurrency caps how many tasks of one step run at once (0: no cap).
func MaxConcurrency(n int) RunOption { return func(r *runConfig) { r.maxConcurrency = n } }

// WithDurability sets when checkpoints are written (default DurabilityAsync).
func WithDurability(d Durability) RunOption { return func(r *runConfig) { r.durability = d } }

// WithValue adds a caller value to the run config, read with ConfigFrom.
func WithValue(key string, v any) RunOption {
	return func(r *runConfig) {
		if r.cfg.Values == nil {
			r.cfg.Values = map[string]any{}
		}
		r.cfg.Values[key] = v
	}
}

// WithMetadata adds string metadata to every checkpoint the run writes;
// GetStateHistory can filter by it.
func WithMetadata(key, value string) RunOption {
	return func(r *runConfig) {
		if r.metadata == nil {
			r.metadata = map[string]string{}
		}
		r.metadata[key] = value
	}
}

// StreamModes selects what Stream yields (default ModeUpdates). Interrupts
// are always yielded.
func StreamModes(m Mode) RunOption { return func(r *runConfig) { r.modes = m } }

// Resume answers the single pending interrupt of the thread with v: the
// interrupted node runs again from its start and its Interrupt call returns v.
func Resume(v any) RunOption { return func(r *runConfig) { r.resume = &resumeSpec{value: v} } }

// ResumeByID answers several pending interrupts, by interrupt id.
func ResumeByID(values map[string]any) RunOption {
	return func(r *runConfig) { r.resume = &resumeSpec{byID: values} }
}

// Event is one item of a Stream. Which fields are set depends on Mode.
type Event[S any] struct {
	Mode   Mode
	Step   int
	Node   string
	TaskID string
	// State is the whole state (ModeValues).
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
