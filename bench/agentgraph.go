package main

import "context"

// agentgraph is this project's column. It reports "not yet" until the engine's
// API settles; filling it in means building each workload with the engine in
// Prepare (and implementing Grower for the growth check).
type agentgraph struct{}

func init() { register(agentgraph{}) }

func (agentgraph) Name() string { return "agentgraph" }

func (agentgraph) Prepare(context.Context, Workload, Variant) (Runner, error) {
	return nil, ErrNotYet
}
