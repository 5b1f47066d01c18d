package graph

import "context"

// Update is what a node returns: writes to state keys and, optionally, where
// to go next (which makes it a command, as Command is in LangGraph). The zero
// Update writes nothing and routes nowhere beyond the node's edges.
type Update[S any] struct {
	writes []Write[S]
	gotos  []string
	sends  []Send[S]
}

// Updates groups writes into an Update.
func Updates[S any](writes ...Write[S]) Update[S] { return Update[S]{writes: writes} }

// Goto returns u that also routes to the named nodes after this step, in
// addition to the node's edges. END is allowed and does nothing.
func (u Update[S]) Goto(nodes ...string) Update[S] {
	u.gotos = append(u.gotos[:len(u.gotos):len(u.gotos)], nodes...)
	return u
}

// Send returns u that also schedules the given Sends for the next step.
func (u Update[S]) Send(sends ...Send[S]) Update[S] {
	u.sends = append(u.sends[:len(u.sends):len(u.sends)], sends...)
	return u
}

// Writes returns the writes of u.
func (u Update[S]) Writes() []Write[S] { return u.writes }

// Gotos returns the nodes u routes to.
func (u Update[S]) Gotos() []string { return u.gotos }

// Sends returns the Sends u schedules.
func (u Update[S]) Sends() []Send[S] { return u.sends }

// Merge returns u with the writes, gotos and sends of v appended.
func (u Update[S]) Merge(v Update[S]) Update[S] {
	u.writes = append(u.writes[:len(u.writes):len(u.writes)], v.writes...)
	u.gotos = append(u.gotos[:len(u.gotos):len(u.gotos)], v.gotos...)
	u.sends = append(u.sends[:len(u.sends):len(u.sends)], v.sends...)
	return u
}

// Send runs Node in the next step with State as its input instead of the
// graph's state; the node's writes are reduced into the graph's state like
// any other (map-reduce). A Node receives one task per Send.
type Send[S any] struct {
	Node  string
	State S
}

// SendTo is a Send of input to node.
func SendTo[S any](node string, input S) Send[S] { return Send[S]{Node: node, State: input} }

// Route is a router's decision: nodes to run next (END is a no-op) and Sends.
type Route[S any] struct {
	Nodes []string
	Sends []Send[S]
}

// To is a Route to the named nodes.
func To[S any](nodes ...string) Route[S] { return Route[S]{Nodes: nodes} }

// Router decides, after its source node ran, where the graph goes. It reads
// the state as the source node's own writes left it.
type Router[S any] func(ctx context.Context, s S) (Route[S], error)

// RouteFunc adapts a function that names one node (or END) to a Router.
func RouteFunc[S any](f func(s S) string) Router[S] {
	return func(_ context.Context, s S) (Route[S], error) {
		return Route[S]{Nodes: []string{f(s)}}, nil
	}
}

// Node is a step of a graph: it reads the state by value and returns writes.
type Node[S any] interface {
	Run(ctx context.Context, s S) (Update[S], error)
}

// NodeFunc adapts a function to a Node.
type NodeFunc[S any] func(ctx context.Context, s S) (Update[S], error)

// Run calls f.
func (f NodeFunc[S]) Run(ctx context.Context, s S) (Update[S], error) { return f(ctx, s) }
