// Package graph is a typed state-graph engine for agents: nodes read a Go
// struct by value and return typed writes, and a superstep runtime runs them
// to completion. Threads become durable through a checkpoint.Saver.
//
// # State, keys and reducers
//
// State is a plain struct. Each field a node may write is declared once as a
// key with its reducer: LastValue (the default: one write per step), Append,
// Reduce with any binary function, or a custom message reducer. Writes are
// made through keys (Key.Set, SliceKey.Add, Key.Overwrite), so they are
// checked at compile time and "set this int to 0" is an ordinary write.
//
//	type State struct {
//		Messages []string
//		Votes    int
//	}
//	var (
//		Messages = graph.SliceField("messages", func(s *State) *[]string { return &s.Messages }, graph.Append[string]())
//		Votes    = graph.Field("votes", func(s *State) *int { return &s.Votes }, graph.Reduce(func(a, b int) int { return a + b }))
//	)
//
// # Supersteps
//
// A run is a sequence of steps. Every task of a step reads the same snapshot
// of the state and runs concurrently with the others (MaxConcurrency caps
// them); its writes become visible in the next step, applied in a fixed order
// (triggered nodes by name, then Sends in the order they were made). A step
// with one task runs it on the caller's goroutine. Two writes in one step to
// a LastValue key fail the run with an InvalidUpdateError naming the key and
// both nodes; a node's error or panic fails it with a NodeError naming the
// node and the step.
//
// After a step, edges pick the next step's tasks: plain edges, waiting edges
// (a join runs once after all its sources ran, across steps), conditional
// edges (a Router returns node names and Sends), and an Update's Goto and
// Send (a command). END ends a path. RecursionLimit bounds the number of
// steps (DefaultRecursionLimit by default).
//
// # Threads
//
// Compiled WithSaver, a graph keeps each thread's checkpoints: Invoke with
// WithThread(id) continues the thread; Interrupt pauses a node until the caller
// resumes with Resume; GetState, GetStateHistory and UpdateState read and
// fork a thread's history. A checkpoint stores what its step changed, and an
// append key stores only what was appended, so a long thread costs linear
// time and space.
//
// # Drawing
//
// Mermaid draws a compiled graph. The agent loop of the package example:
//
//	graph TD;
//		__start__ --> agent;
//		agent -. &nbsp;call&nbsp; .-> tools;
//		agent -. &nbsp;done&nbsp; .-> __end__;
//		tools --> agent;
package graph
