package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Framework builds the benchmark workloads with one agent-graph framework.
// Adding a column to the table is one file: a type implementing Framework,
// registered from that file's init function with register.
type Framework interface {
	// Name is the column heading, e.g. "eino".
	Name() string
	// Prepare builds the graph for one cell of the table and returns a Runner
	// that executes it once from a fresh start (a new thread when a saver is
	// used). It returns an error wrapping ErrNotApplicable when the framework
	// cannot express the cell, with the reason in the message.
	Prepare(ctx context.Context, c Cell) (Runner, error)
}

// Cell is one workload run with one saver.
type Cell struct {
	Workload
	Variant Variant
	// Dir is an empty directory for the cell's files (a bbolt database). The
	// harness removes it when the cell is done; anything the Runner opens
	// there must be closed by then, so open it per run or close it when the
	// context given to Prepare is done.
	Dir string
}

// Runner executes a prepared cell once and returns the workload's check value
// (Workload.Expect when the run did what the workload asks).
type Runner func(ctx context.Context) (check int, err error)

// Grower is implemented by frameworks that save a checkpoint at every step. It
// runs one agent loop of turns model-and-tool rounds on a new thread with an
// in-memory saver, calling tick at the start of every model call.
type Grower interface {
	Growth(ctx context.Context, turns int, tick func()) error
}

// selfMeasurer is implemented by frameworks measured outside this process
// (LangGraph.js runs in Node); they time their own cells.
type selfMeasurer interface {
	measure(ctx context.Context, p plan) ([]Result, []GrowthResult, error)
}

// ErrNotApplicable marks a cell the framework cannot express without bending
// the workload. The wrapping error's text is the reason shown in the table.
var ErrNotApplicable = errors.New("n/a")

// ErrNotYet marks a framework whose column is not filled in yet.
var ErrNotYet = errors.New("not yet")

// notApplicable returns an error wrapping ErrNotApplicable with a reason.
func notApplicable(reason string) error {
	return fmt.Errorf("%w: %s", ErrNotApplicable, reason)
}

// Variant says which saver a cell runs with.
type Variant string

const (
	NoSaver     Variant = "none"   // no checkpointer
	MemorySaver Variant = "memory" // the framework's in-memory checkpointer
	BoltSaver   Variant = "bolt"   // agentgraph's bbolt file saver
)

var allVariants = []Variant{NoSaver, MemorySaver, BoltSaver}

// column order of the table
var columnOrder = []string{"agentgraph", "eino", "langgraphgo", "langgraphjs"}

var frameworks = map[string]Framework{}

// register adds a framework column. It is called from init functions only.
func register(f Framework) {
	if _, dup := frameworks[f.Name()]; dup {
		panic("bench: framework registered twice: " + f.Name())
	}
	frameworks[f.Name()] = f
}

// frameworkNames lists registered frameworks in table order, then any others
// alphabetically.
func frameworkNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, n := range columnOrder {
		if _, ok := frameworks[n]; ok {
			names = append(names, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range frameworks {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}
