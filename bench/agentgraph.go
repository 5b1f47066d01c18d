package main

import "context"

// agentgraph is this project's column. It reports "not yet" until the
// engine's API settles. Filling it in: build each workload with the engine in
// Prepare (the shared inputs and node bodies are in workloads.go: subjects,
// newReactScript, toolResult, wideSteps, wideWrites, wideReduce), return
// ErrNotApplicable for nothing, put the bolt variant's database under c.Dir,
// and implement Grower for the growth check.
type agentgraph struct{}

func init() { register(agentgraph{}) }

func (agentgraph) Name() string { return "agentgraph" }

func (agentgraph) Prepare(context.Context, Cell) (Runner, error) {
	return nil, ErrNotYet
}
