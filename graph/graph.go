package graph

import (
	"context"
	"iter"
	"sync"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Graph is a compiled, runnable graph over state S. It is safe for concurrent
// use: runs on different threads proceed in parallel.
type Graph[S any] struct {
	keys            []AnyKey[S]
	keyIndex        map[AnyKey[S]]int
	keyByName       map[string]int
	nodes           []*nodeSpec[S]
	byName          map[string]*nodeSpec[S]
	joins           []joinSpec
	startNext       []int
	startBranches   []*branchSpec[S]
	start           *nodeSpec[S]
	opts            compileOptions
	interruptBefore []bool
	interruptAfter  []bool
	clipKeys        []AnyKey[S]
	deferred        bool // some node runs WithDefer

	cacheMu sync.Mutex
	cache   map[checkpoint.Config]*threadState[S]
}

// threadState is what a run leaves behind for the next run on its thread, so
// that continuing a thread does not rebuild its state from storage.
type threadState[S any] struct {
	cpID     string
	state    S
	barriers [][]bool
	waiting  []bool
	version  uint64
	chain    chainInfo
	step     int
}

const maxCachedThreads = 4096

func (g *Graph[S]) build() {
	g.keyByName = make(map[string]int, len(g.keys))
	for i, k := range g.keys {
		g.keyByName[k.Name()] = i
		if k.clips() {
			g.clipKeys = append(g.clipKeys, k)
		}
	}
	for _, n := range g.nodes {
		g.deferred = g.deferred || n.defers
	}
	g.start = &nodeSpec[S]{name: START, idx: -1, next: g.startNext, branches: g.startBranches}
	g.cache = map[checkpoint.Config]*threadState[S]{}
}

// Invoke runs the graph from input and returns the final state. With a saver,
// it continues the thread named by Thread: input is applied to the thread's
// state; an empty input resumes the thread's pending tasks (after an
// interrupt or an error) or replays from AtCheckpoint.
func (g *Graph[S]) Invoke(ctx context.Context, input Update[S], opts ...RunOption) (Result[S], error) {
	return g.run(ctx, input, opts, nil)
}

// Stream runs the graph like Invoke and yields its events in the modes chosen
// with StreamModes (ModeUpdates by default). The run ends with the loop: a
// final error is yielded once; breaking out of the loop cancels the run and
// waits for its tasks to stop.
func (g *Graph[S]) Stream(ctx context.Context, input Update[S], opts ...RunOption) iter.Seq2[Event[S], error] {
	return func(yield func(Event[S], error) bool) {
		stopped := false
		_, err := g.run(ctx, input, opts, func(ev Event[S]) bool {
			if stopped {
				return false
			}
			if !yield(ev, nil) {
				stopped = true
			}
			return !stopped
		})
		if err != nil && !stopped {
			yield(Event[S]{}, err)
		}
	}
}

// Result is the outcome of a run.
type Result[S any] struct {
	// State is the state when the run ended.
	State S
	// Interrupts are set when the run paused: resume with Invoke and Resume.
	Interrupts []Interruption
	// Checkpoint addresses the run's last checkpoint (with a saver).
	Checkpoint checkpoint.Config
}

// Interrupted reports whether the run paused on an interrupt.
func (r Result[S]) Interrupted() bool { return len(r.Interrupts) > 0 }

// view returns a copy of s that readers may keep and append to without
// touching the run's state.
func (g *Graph[S]) view(s *S) S {
	v := *s
	for _, k := range g.clipKeys {
		v = k.clipped(v)
	}
	return v
}
