package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Subgraph makes a compiled graph over state C a node of a graph over P. in
// maps the parent's state (or a Send's input) to the child's starting state;
// out maps the child's final state to the parent's writes.
//
// The child runs within the parent's task and is as durable as its parent:
// with the parent's saver, its checkpoints go into the parent's thread under
// the namespace "node:taskID" (nested levels joined by "|"). A node of the
// child, at any depth, can Interrupt: the parent run pauses with the
// interrupt (its Namespace says where it was raised), and resuming the
// parent resumes the child where it stopped, without running again what
// finished. A child node can also route the parent with ToParent.
//
// The child sees the parent's run config. Its custom and message events
// reach the parent's stream as the parent node's; with WithSubgraphs every
// event of the child reaches it, tagged with the child's namespace.
func Subgraph[P, C any](child *Graph[C], in func(ctx context.Context, p P) (C, error), out func(ctx context.Context, c C) (Update[P], error)) Node[P] {
	return &subgraphNode[P, C]{child: child, in: in, out: out}
}

type subgraphNode[P, C any] struct {
	child *Graph[C]
	in    func(ctx context.Context, p P) (C, error)
	out   func(ctx context.Context, c C) (Update[P], error)
}

func (n *subgraphNode[P, C]) Run(ctx context.Context, p P) (Update[P], error) {
	parent, ok := ctx.Value(taskKey{}).(*taskCtx)
	if !ok {
		return Update[P]{}, errors.New("graph: a subgraph node runs only inside a graph run")
	}
	start, err := n.in(ctx, p)
	if err != nil {
		return Update[P]{}, err
	}
	cfg := parent.run.cfg
	opts := []RunOption{WithThread(cfg.ThreadID), WithRunID(cfg.RunID), WithRecursionLimit(cfg.RecursionLimit)}
	for k, v := range cfg.Values {
		opts = append(opts, WithValue(k, v))
	}
	ns := childNamespace(cfg.Namespace, parent.node, parent.taskID())
	opts = append(opts, runOption(func(r *runConfig) { r.cfg.Namespace = ns }))
	r := &runner[C]{g: n.child, initial: &start, parent: parent}
	if parent.run.modes&^ModeInterrupt != 0 {
		r.yield = func(ev Event[C]) bool {
			parent.run.emitSub(parent, subEventOf(ns, ev))
			return true
		}
	}
	res, err := n.child.runWith(r, ctx, Update[C]{}, opts)
	if err != nil {
		var pc *parentCommand
		if errors.As(err, &pc) {
			if u, ok := pc.upd.(Update[P]); ok {
				return u, nil
			}
			return Update[P]{}, fmt.Errorf("graph: ToParent got an Update of %T, but the parent graph's state is %s", pc.upd, reflect.TypeFor[P]())
		}
		return Update[P]{}, err
	}
	if len(res.Interrupts) > 0 {
		parent.mu.Lock()
		parent.raised = append(parent.raised, res.Interrupts...)
		parent.mu.Unlock()
		return Update[P]{}, &interruptSignal{in: res.Interrupts[0]}
	}
	return n.out(ctx, res.State)
}

// childNamespace is the namespace of a subgraph run started by the task id
// of node, within namespace ns.
func childNamespace(ns, node, id string) string {
	if ns == "" {
		return node + ":" + id
	}
	return ns + "|" + node + ":" + id
}

// snapshot reads the subgraph state a task of the parent left in the
// thread, for GetState with WithSubgraphs.
func (n *subgraphNode[P, C]) snapshot(ctx context.Context, saver checkpoint.Saver, addr checkpoint.Config) (any, error) {
	snap, err := n.child.getStateWith(ctx, saver, stateConfig{addr: addr, subgraphs: true})
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	return snap, err
}

type subgraphSnapshotter interface {
	snapshot(ctx context.Context, saver checkpoint.Saver, addr checkpoint.Config) (any, error)
}

// parentCommand carries an Update for the graph above a subgraph.
type parentCommand struct{ upd any }

func (*parentCommand) Error() string {
	return "graph: ToParent's command was not taken by a parent graph: return it from a node of a graph run as a Subgraph"
}

// ToParent returns an error that a node of a subgraph returns to end the
// subgraph's run and have the parent graph take upd as the writes and
// routes (Goto, Send) of the parent's subgraph task, as LangGraph's
// Command(graph=Command.PARENT) does. P is the parent graph's state type.
func ToParent[P any](upd Update[P]) error { return &parentCommand{upd: upd} }

// subEvent is an event of a subgraph run on its way to a parent's stream.
type subEvent struct {
	ns         string
	mode       Mode
	step       int
	node       string
	taskID     string
	state      any
	update     map[string]any
	data       any
	debug      *DebugInfo
	interrupts []Interruption
}

func subEventOf[C any](ns string, ev Event[C]) subEvent {
	if ev.Namespace != "" {
		ns = ev.Namespace
	}
	se := subEvent{ns: ns, mode: ev.Mode, step: ev.Step, node: ev.Node, taskID: ev.TaskID, update: ev.Update, data: ev.Data, debug: ev.Debug, interrupts: ev.Interrupts}
	if ev.Mode == ModeValues {
		if ev.Data != nil {
			se.state = ev.Data
		} else {
			se.state = ev.State
		}
	}
	return se
}
