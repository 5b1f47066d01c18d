package graph

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoSaver is returned by operations that need a saver on a graph
// compiled without one.
var ErrNoSaver = errors.New("graph: no saver: compile with graph.WithSaver")

// ErrNoThread is returned when a graph with a saver runs without a thread id.
var ErrNoThread = errors.New("graph: no thread id in run config: pass graph.WithThread(id) to Invoke or Stream")

// ErrDrained is returned by a run stopped at a step boundary by WithDrain;
// with a saver, its thread continues from there.
var ErrDrained = errors.New("graph: run drained at a step boundary: continue the thread with an empty input")

// NodeError is a node's failure: its error or panic, with the node and step.
type NodeError struct {
	Node  string
	Step  int
	Err   error
	Panic bool
}

func (e *NodeError) Error() string {
	if e.Panic {
		return fmt.Sprintf("graph: node %q panicked at step %d: %v", e.Node, e.Step, e.Err)
	}
	return fmt.Sprintf("graph: node %q failed at step %d: %v", e.Node, e.Step, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// InvalidUpdateError reports writes a key cannot take: two writes in one step
// to a last-value key, two overwrites of a key, or a key not declared in New.
type InvalidUpdateError struct {
	Key   string
	Nodes []string
	Step  int
	Msg   string
}

func (e *InvalidUpdateError) Error() string {
	return fmt.Sprintf("graph: step %d: key %q written by %s: %s", e.Step, e.Key, strings.Join(quoteAll(e.Nodes), " and "), e.Msg)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// RecursionLimitError reports a run that took Limit steps without ending.
type RecursionLimitError struct{ Limit int }

func (e *RecursionLimitError) Error() string {
	return fmt.Sprintf("graph: recursion limit of %d steps reached without hitting END: look for a loop in the graph, or raise the limit with graph.RecursionLimit", e.Limit)
}

// RouteError reports a router, Goto or Send naming a node the graph lacks.
type RouteError struct {
	From string
	To   string
	Step int
	Err  error
}

func (e *RouteError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("graph: step %d: routing after %q failed: %v", e.Step, e.From, e.Err)
	}
	return fmt.Sprintf("graph: step %d: %q routes to unknown node %q", e.Step, e.From, e.To)
}

func (e *RouteError) Unwrap() error { return e.Err }
