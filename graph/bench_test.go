package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

func noop(ctx context.Context, s St) (graph.Update[St], error) { return graph.Update[St]{}, nil }

// BenchmarkChain1000 runs a chain of 1000 no-op nodes.
func BenchmarkChain1000(b *testing.B) {
	sb := newG()
	prev := graph.START
	for i := range 1000 {
		name := fmt.Sprint("n", i)
		sb.AddNodeFunc(name, noop)
		sb.AddEdge(prev, name)
		prev = name
	}
	g := mustCompile(b, sb)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Invoke(ctx, graph.Updates[St]()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFanout100 sends 100 inputs to a worker and collects the results.
func BenchmarkFanout100(b *testing.B) {
	sb := newG()
	sb.AddNodeFunc("worker", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Sum.Set(s.Count)), nil
	})
	sb.AddNodeFunc("collect", noop)
	sb.AddConditionalEdges(graph.START, func(ctx context.Context, s St) (graph.Route[St], error) {
		r := graph.Route[St]{Sends: make([]graph.Send[St], 100)}
		for i := range r.Sends {
			r.Sends[i] = graph.SendTo("worker", St{Count: i})
		}
		return r, nil
	}, graph.BranchConfig{Paths: []string{"worker"}})
	sb.AddEdge("worker", "collect")
	g := mustCompile(b, sb)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := g.Invoke(ctx, graph.Updates[St]())
		if err != nil || res.State.Sum != 4950 {
			b.Fatal(err, res.State.Sum)
		}
	}
}

func agentLoop(turns int) *graph.StateGraph[St] {
	sb := newG()
	sb.AddNodeFunc("agent", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add("call"), Count.Set(s.Count+1)), nil
	})
	sb.AddNodeFunc("tools", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add("result")), nil
	})
	sb.AddEdge(graph.START, "agent").AddEdge("tools", "agent")
	sb.AddConditionalEdges("agent", graph.RouteFunc(func(s St) string {
		if s.Count >= turns {
			return graph.END
		}
		return "tools"
	}), graph.BranchConfig{Paths: []string{"tools", graph.END}})
	return sb
}

// BenchmarkAgentLoop100 runs 100 agent/tools turns over an append key.
func BenchmarkAgentLoop100(b *testing.B) {
	g := mustCompile(b, agentLoop(100))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Invoke(ctx, graph.Updates[St]()); err != nil {
			b.Fatal(err)
		}
	}
}

type Wide struct{ V [100]int }

// BenchmarkWide100Keys10Steps writes 100 last-value keys in each of 10 steps.
func BenchmarkWide100Keys10Steps(b *testing.B) {
	keys := make([]*graph.Key[Wide, int], 100)
	for i := range keys {
		keys[i] = graph.Field(fmt.Sprint("k", i), func(s *Wide) *int { return &s.V[i] }, graph.LastValue[int]())
	}
	sb := graph.New[Wide](asAny(keys)...)
	prev := graph.START
	for step := range 10 {
		name := fmt.Sprint("s", step)
		sb.AddNodeFunc(name, func(ctx context.Context, s Wide) (graph.Update[Wide], error) {
			ws := make([]graph.Write[Wide], len(keys))
			for i, k := range keys {
				ws[i] = k.Set(s.V[i] + 1)
			}
			return graph.Updates(ws...), nil
		})
		sb.AddEdge(prev, name)
		prev = name
	}
	g, err := sb.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := g.Invoke(ctx, graph.Updates[Wide]())
		if err != nil || res.State.V[99] != 10 {
			b.Fatal(err)
		}
	}
}

func asAny(keys []*graph.Key[Wide, int]) []graph.AnyKey[Wide] {
	out := make([]graph.AnyKey[Wide], len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

// BenchmarkAgentLoopSaver runs the agent loop on one thread with the
// in-memory saver, one turn per Invoke, in each durability mode.
func BenchmarkAgentLoopSaver(b *testing.B) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityExit} {
		b.Run(d.String(), func(b *testing.B) {
			g := mustCompile(b, agentLoop(100), graph.WithSaver(checkpoint.NewMemory()))
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread(fmt.Sprint(i)), graph.WithDurability(d)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type pairs struct{ N int }

// BenchmarkPairs100 runs 100 steps of two tiny tasks side by side (a → {b, c} → a, 50 times): what a step of
// several tasks costs beyond its tasks.
func BenchmarkPairs100(b *testing.B) {
	n := graph.Field("n", func(s *pairs) *int { return &s.N }, graph.Reduce(func(cur, upd int) int { return cur + upd }))
	sb := graph.New[pairs](n)
	one := func(ctx context.Context, s pairs) (graph.Update[pairs], error) { return graph.Updates(n.Set(1)), nil }
	sb.AddNodeFunc("a", one).AddNodeFunc("b", one).AddNodeFunc("c", one)
	sb.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c")
	sb.AddConditionalEdges("b", graph.RouteFunc(func(s pairs) string {
		if s.N >= 150 {
			return graph.END
		}
		return "a"
	}), graph.BranchConfig{Paths: []string{"a", graph.END}})
	g, err := sb.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := g.Invoke(ctx, graph.Updates[pairs](), graph.WithRecursionLimit(1000))
		// b's route reads the state with b's own write but not c's, as LangGraph's does: 148 goes on.
		if err != nil || res.State.N != 153 {
			b.Fatalf("%+v, %v", res.State, err)
		}
	}
}
