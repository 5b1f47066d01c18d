package graph

import "context"

// Subgraph makes a compiled graph over state C a node of a graph over P. in
// maps the parent's state (or a Send's input) to the child's starting state;
// out maps the child's final state to the parent's writes. The child runs
// within the parent's task: it sees the parent's run config, its custom and
// message events reach the parent's stream as the parent node's, and it is
// checkpointed as part of the parent's step, not on its own. For that
// reason Interrupt inside a subgraph fails with ErrNoSaver: pause in a node
// of the parent instead.
func Subgraph[P, C any](child *Graph[C], in func(ctx context.Context, p P) (C, error), out func(ctx context.Context, c C) (Update[P], error)) Node[P] {
	return NodeFunc[P](func(ctx context.Context, p P) (Update[P], error) {
		start, err := in(ctx, p)
		if err != nil {
			return Update[P]{}, err
		}
		opts := []RunOption{}
		if cfg, ok := ConfigFrom(ctx); ok {
			opts = append(opts, WithThread(cfg.ThreadID), WithRunID(cfg.RunID), WithRecursionLimit(cfg.RecursionLimit))
			for k, v := range cfg.Values {
				opts = append(opts, WithValue(k, v))
			}
		}
		res, err := child.runWith(&runner[C]{g: child, initial: &start}, ctx, Update[C]{}, opts)
		if err != nil {
			return Update[P]{}, err
		}
		return out(ctx, res.State)
	})
}
