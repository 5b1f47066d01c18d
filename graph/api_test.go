package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/store"
)

func TestContextWithConfigOutsideARun(t *testing.T) {
	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "t9", Values: map[string]any{"user": "u1"}})
	cfg, ok := graph.ConfigFrom(ctx)
	if !ok || cfg.ThreadID != "t9" || cfg.Values["user"] != "u1" || graph.ThreadIDFrom(ctx) != "t9" {
		t.Fatalf("config %+v %v", cfg, ok)
	}
	if _, ok := graph.ConfigFrom(context.Background()); ok {
		t.Fatal("a bare context carries a config")
	}
}

func TestStoreReachesNodesAndSubgraphs(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	remember := func(label string) graph.NodeFunc[St] {
		return func(ctx context.Context, s St) (graph.Update[St], error) {
			st := graph.StoreFrom(ctx)
			if st == nil {
				return graph.Update[St]{}, errors.New("no store")
			}
			if err := st.Put(ctx, []string{"users", "u1"}, label, map[string]any{"seen": true}, store.PutOptions{}); err != nil {
				return graph.Update[St]{}, err
			}
			return graph.Updates(Log.Add(label)), nil
		}
	}
	cb := newG()
	cb.AddNode("inner", remember("inner")).AddEdge(graph.START, "inner")
	child := mustCompile(t, cb)
	b := newG()
	b.AddNode("outer", remember("outer"))
	b.AddNode("sub", graph.Subgraph(child, logsOf, logsBack))
	b.AddEdge(graph.START, "outer").AddEdge("outer", "sub")
	ctx := context.Background()
	if _, err := mustCompile(t, b, graph.WithStore(mem)).Invoke(ctx, graph.Updates[St]()); err != nil {
		t.Fatal(err)
	}
	items, err := mem.Search(ctx, []string{"users"}, store.SearchOptions{})
	if err != nil || len(items) != 2 {
		t.Fatalf("items %v %v", items, err)
	}
	// A graph compiled without a store takes the one its run's context
	// carries; with neither, StoreFrom is nil.
	if _, err := mustCompile(t, b).Invoke(graph.ContextWithStore(ctx, mem), graph.Updates[St]()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustCompile(t, b).Invoke(ctx, graph.Updates[St]()); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Fatalf("without a store: %v", err)
	}
}

func TestIsInterrupt(t *testing.T) {
	b := newG()
	var seen error
	b.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		_, err := graph.Interrupt(ctx, "q")
		seen = fmt.Errorf("tool runner: %w", err)
		return graph.Update[St]{}, seen
	})
	b.AddEdge(graph.START, "a")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil || !res.Interrupted() || !graph.IsInterrupt(seen) || graph.IsInterrupt(errors.New("other")) {
		t.Fatalf("res %+v err %v seen %v", res, err, seen)
	}
	if _, err := graph.Interrupt(context.Background(), "q"); !errors.Is(err, graph.ErrNotInRun) {
		t.Fatalf("outside a run: %v", err)
	}
}

func TestReduceSlice(t *testing.T) {
	type S struct{ Set []string }
	Set := graph.SliceField("set", func(s *S) *[]string { return &s.Set }, graph.ReduceSlice(func(cur, upd []string) []string {
		for _, u := range upd {
			if !slices.Contains(cur, u) {
				cur = append(cur, u)
			}
		}
		return cur
	}))
	b := graph.New[S](Set)
	b.AddNodeFunc("a", func(ctx context.Context, s S) (graph.Update[S], error) { return graph.Updates(Set.Add("x", "y")), nil })
	b.AddEdge(graph.START, "a")
	g, _ := b.Compile()
	res, err := g.Invoke(context.Background(), graph.Updates(Set.Add("y", "z")))
	if err != nil || !slices.Equal(res.State.Set, []string{"y", "z", "x"}) {
		t.Fatalf("set %v %v", res.State.Set, err)
	}
}

func TestStreaming(t *testing.T) {
	b := newG()
	var got []bool
	b.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		got = append(got, graph.Streaming(ctx, graph.ModeMessages), graph.Streaming(ctx, graph.ModeCustom))
		return graph.Update[St]{}, nil
	})
	b.AddEdge(graph.START, "a")
	g := mustCompile(t, b)
	for _, err := range g.Stream(context.Background(), graph.Updates[St](), graph.WithStreamModes(graph.ModeMessages)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Invoke(context.Background(), graph.Updates[St]()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{true, false, false, false}) || graph.Streaming(context.Background(), graph.ModeMessages) {
		t.Fatalf("streaming %v", got)
	}
}

func TestHistoryOptions(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddEdge(graph.START, "a").AddEdge("a", "b")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	ctx := context.Background()
	if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("h"), graph.WithRunID("run-1"), graph.WithMetadata("user", "ada")); err != nil {
		t.Fatal(err)
	}
	all := history(t, g, "h")
	if len(all) != 3 || all[0].Metadata.RunID != "run-1" {
		t.Fatalf("%d snapshots, run id %q", len(all), all[0].Metadata.RunID)
	}
	var got []string
	for s, err := range g.GetStateHistory(ctx, graph.WithThread("h"), graph.WithFilter("source", "loop"), graph.WithBefore(all[0].Config.CheckpointID), graph.WithLimit(5)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(s.Metadata.Source, s.Metadata.Step, s.Metadata.Extra["user"]))
	}
	if !slices.Equal(got, []string{"loop0ada"}) {
		t.Fatalf("filtered history %q", got)
	}
	for _, err := range g.GetStateHistory(ctx) {
		if !errors.Is(err, graph.ErrNoThread) {
			t.Fatalf("history without a thread: %v", err)
		}
	}
}

// upperCodec stores JSON with every letter upper-cased, to show that the
// graph's codec is the one its saver's bytes go through.
type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) {
	b, err := checkpoint.JSON.Marshal(v)
	return []byte(strings.ToUpper(string(b))), err
}

func (upperCodec) Unmarshal(b []byte, v any) error {
	return checkpoint.JSON.Unmarshal([]byte(strings.ToLower(string(b))), v)
}

func TestWithCodecAndWithName(t *testing.T) {
	saver := checkpoint.NewMemory()
	b := newG()
	b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
	g := mustCompile(t, b, graph.WithSaver(saver), graph.WithCodec(upperCodec{}), graph.WithName("shouty"))
	ctx := context.Background()
	if _, err := g.Invoke(ctx, graph.Updates(Log.Add("x")), graph.WithThread("c")); err != nil {
		t.Fatal(err)
	}
	tuple, err := saver.Get(ctx, checkpoint.Config{ThreadID: "c"})
	if err != nil || !strings.Contains(string(tuple.Checkpoint.Values["log"])+strings.Join(byteStrings(tuple.Checkpoint.Deltas["log"]), ""), `"A"`) {
		t.Fatalf("stored %v %v", tuple, err)
	}
	snap, err := mustCompile(t, b, graph.WithSaver(saver), graph.WithCodec(upperCodec{})).GetState(ctx, graph.WithThread("c"))
	if err != nil || !slices.Equal(snap.Values.Log, []string{"x", "a"}) {
		t.Fatalf("read back %v %v", snap.Values.Log, err)
	}
	if g.Name() != "shouty" {
		t.Fatalf("name %q", g.Name())
	}
}

func byteStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestRunBreakpointsAndDrain(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	ctx := context.Background()
	// A breakpoint given to one run holds for that run only.
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("bp"), graph.WithInterruptBefore("b"))
	if err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].Node != "b" || !slices.Equal(res.State.Log, []string{"a"}) {
		t.Fatalf("before b: %+v %v", res, err)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithThread("bp"))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
		t.Fatalf("continued: %+v %v", res, err)
	}
	if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("x"), graph.WithInterruptAfter("nope")); err == nil || !strings.Contains(err.Error(), `no node "nope"`) {
		t.Fatalf("unknown node: %v", err)
	}
	// Drained at a step boundary: the step in flight is saved, and the
	// thread goes on from the next.
	drain := make(chan struct{})
	b2 := newG()
	b2.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		close(drain)
		return graph.Updates(Log.Add("a")), nil
	})
	b2.AddNode("b", logNode("b")).AddEdge(graph.START, "a").AddEdge("a", "b")
	g2 := mustCompile(t, b2, graph.WithSaver(checkpoint.NewMemory()))
	res, err = g2.Invoke(ctx, graph.Updates[St](), graph.WithThread("d"), graph.WithDrain(drain))
	if !errors.Is(err, graph.ErrDrained) || !slices.Equal(res.State.Log, []string{"a"}) {
		t.Fatalf("drained: %+v %v", res, err)
	}
	res, err = g2.Invoke(ctx, graph.Updates[St](), graph.WithThread("d"))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b"}) {
		t.Fatalf("after the drain: %+v %v", res, err)
	}
}
