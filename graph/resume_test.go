package graph_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// humanLoop is LangGraph's time-travel graph: node_a, then ask_human, which
// interrupts, then node_b.
func humanLoop(t *testing.T, counts *sync.Map) *graph.Graph[St] {
	t.Helper()
	count := func(name string) {
		n, _ := counts.LoadOrStore(name, new(int))
		*n.(*int)++
	}
	b := newG()
	b.AddNodeFunc("node_a", func(ctx context.Context, s St) (graph.Update[St], error) {
		count("node_a")
		return graph.Updates(Log.Add("a")), nil
	})
	b.AddNodeFunc("ask_human", func(ctx context.Context, s St) (graph.Update[St], error) {
		count("ask_human")
		v, err := graph.Interrupt(ctx, "What is your input?")
		if err != nil {
			return graph.Update[St]{}, err
		}
		return graph.Updates(Log.Add("human:" + v.(string))), nil
	})
	b.AddNodeFunc("node_b", func(ctx context.Context, s St) (graph.Update[St], error) {
		count("node_b")
		return graph.Updates(Log.Add("b")), nil
	})
	b.AddEdge(graph.START, "node_a").AddEdge("node_a", "ask_human").AddEdge("ask_human", "node_b")
	return mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
}

func history(t *testing.T, g *graph.Graph[St], thread string) []graph.Snapshot[St] {
	t.Helper()
	var out []graph.Snapshot[St]
	for s, err := range g.GetStateHistory(context.Background(), graph.WithThread(thread)) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestReplayBeforeInterruptRefires(t *testing.T) {
	ctx := context.Background()
	var counts sync.Map
	g := humanLoop(t, &counts)
	th := graph.WithThread("1")
	res, err := g.Invoke(ctx, graph.Updates[St](), th)
	if err != nil || !res.Interrupted() {
		t.Fatalf("first run: %+v %v", res, err)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), th, graph.WithResume("old"))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "human:old", "b"}) {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	// Steps count across the thread; the resumed step has its own number.
	var steps []int
	var before graph.Snapshot[St]
	for _, s := range history(t, g, "1") {
		steps = append(steps, s.Metadata.Step)
		if slices.Equal(s.Next, []string{"ask_human"}) {
			before = s
		}
	}
	if want := []int{2, 1, 0, -1}; !slices.Equal(steps, want) {
		t.Fatalf("history steps %v, want %v", steps, want)
	}
	// Replaying from before ask_human raises the interrupt again: the old
	// branch's answer is not the new branch's.
	for range 2 {
		res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithCheckpoint(before.Config))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Interrupts) != 1 || res.Interrupts[0].Value != "What is your input?" || !slices.Equal(res.State.Log, []string{"a"}) {
			t.Fatalf("replay: %+v", res)
		}
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), th, graph.WithResume("new"))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "human:new", "b"}) {
		t.Fatalf("resume on the new branch: %+v %v", res, err)
	}
	if runs(&counts, "node_a") != 1 || runs(&counts, "ask_human") != 5 || runs(&counts, "node_b") != 2 {
		t.Fatalf("runs: node_a %d ask_human %d node_b %d", runs(&counts, "node_a"), runs(&counts, "ask_human"), runs(&counts, "node_b"))
	}
	// The old branch is intact.
	old, err := g.GetState(ctx, graph.WithThread("1"), graph.WithCheckpointID(history(t, g, "1")[0].Config.CheckpointID))
	if err != nil || !slices.Equal(old.Values.Log, []string{"a", "human:new", "b"}) {
		t.Fatalf("latest: %+v %v", old.Values, err)
	}
}

func TestForkBeforeInterruptRefires(t *testing.T) {
	ctx := context.Background()
	var counts sync.Map
	g := humanLoop(t, &counts)
	th := graph.WithThread("f")
	if _, err := g.Invoke(ctx, graph.Updates[St](), th); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, graph.Updates[St](), th, graph.WithResume("old")); err != nil {
		t.Fatal(err)
	}
	var before graph.Snapshot[St]
	for _, s := range history(t, g, "f") {
		if slices.Equal(s.Next, []string{"ask_human"}) {
			before = s
		}
	}
	cfg, err := g.UpdateState(ctx, graph.Updates(Log.Add("edited")), "node_a", graph.WithCheckpoint(before.Config))
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithCheckpoint(cfg))
	if err != nil || len(res.Interrupts) != 1 || !slices.Equal(res.State.Log, []string{"a", "edited"}) {
		t.Fatalf("fork: %+v %v", res, err)
	}
}

func TestCommandWithStaticBreakpoints(t *testing.T) {
	ctx := context.Background()
	// LangGraph's test_command_with_static_breakpoints and
	// test_command_goto_with_static_breakpoints.
	build := func() *graph.Graph[St] {
		b := newG()
		b.AddNode("node1", logNode("node-1")).AddNode("node2", logNode("node-2"))
		b.AddEdge(graph.START, "node1").AddEdge("node1", "node2")
		return mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptBefore("node1"))
	}
	g := build()
	th := graph.WithThread("r")
	if res, err := g.Invoke(ctx, graph.Updates(Log.Add("abc")), th); err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].When != "before" {
		t.Fatalf("breakpoint: %+v %v", res, err)
	}
	res, err := g.Invoke(ctx, graph.Updates[St](), th, graph.WithResume("node1"))
	if err != nil || !slices.Equal(res.State.Log, []string{"abc", "node-1", "node-2"}) {
		t.Fatalf("resume: %+v %v", res, err)
	}

	g = build()
	th = graph.WithThread("g")
	if _, err := g.Invoke(ctx, graph.Updates(Log.Add("abc")), th); err != nil {
		t.Fatal(err)
	}
	res, err = g.Invoke(ctx, graph.Update[St]{}.Goto("node2"), th, graph.WithContinue())
	if err != nil || !slices.Equal(res.State.Log, []string{"abc", "node-1", "node-2", "node-2"}) {
		t.Fatalf("goto: %+v %v", res, err)
	}
}

func TestCommandUpdateOnResume(t *testing.T) {
	ctx := context.Background()
	b := newG()
	var seen []string
	b.AddNodeFunc("ask", func(ctx context.Context, s St) (graph.Update[St], error) {
		seen = append(seen, s.Name)
		v, err := graph.Interrupt(ctx, "name?")
		if err != nil {
			return graph.Update[St]{}, err
		}
		return graph.Updates(Log.Add(s.Name + ":" + v.(string))), nil
	})
	b.AddEdge(graph.START, "ask")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	th := graph.WithThread("u")
	if _, err := g.Invoke(ctx, graph.Updates(Name.Set("before")), th); err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(ctx, graph.Updates(Name.Set("after")), th, graph.WithResume("ok"))
	if err != nil || !slices.Equal(res.State.Log, []string{"after:ok"}) || !slices.Equal(seen, []string{"before", "after"}) {
		t.Fatalf("command: %+v %v, node saw %q", res, err, seen)
	}
}

func TestUpdateStateKeepsPendingJoin(t *testing.T) {
	ctx := context.Background()
	b := newG()
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge(graph.START, "b").AddWaitingEdge([]string{"a", "b"}, "c")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptBefore("c"))
	th := graph.WithThread("j")
	res, err := g.Invoke(ctx, graph.Updates[St](), th)
	if err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].Node != "c" {
		t.Fatalf("breakpoint: %+v %v", res, err)
	}
	if _, err := g.UpdateState(ctx, graph.Updates(Log.Add("edit")), "b", th); err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(ctx, th)
	if err != nil || !slices.Equal(snap.Next, []string{"c"}) {
		t.Fatalf("after the update next is %v (%v): the join's trigger is lost", snap.Next, err)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), th)
	if err != nil || res.State.Log[len(res.State.Log)-1] != "c" {
		t.Fatalf("continued: %+v %v", res, err)
	}
}

func TestNewInputKeepsPendingSends(t *testing.T) {
	ctx := context.Background()
	b := newG()
	b.AddNodeFunc("fan", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Update[St]{}.Send(graph.SendTo("work", St{Name: "x"}), graph.SendTo("work", St{Name: "y"})), nil
	}, graph.WithDestinations("work"))
	b.AddNodeFunc("work", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add("work " + s.Name)), nil
	})
	b.AddNode("gate", logNode("gate"))
	b.AddEdge(graph.START, "gate").AddEdge("gate", "fan")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptAfter("fan"))
	th := graph.WithThread("s")
	res, err := g.Invoke(ctx, graph.Updates[St](), th)
	if err != nil || !res.Interrupted() {
		t.Fatalf("first: %+v %v", res, err)
	}
	res, err = g.Invoke(ctx, graph.Updates(Log.Add("more")), th)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.State.Log, ",")
	if !strings.Contains(got, "work x") || !strings.Contains(got, "work y") {
		t.Fatalf("log %q: the pending Sends were dropped", got)
	}
}

func TestInputWithGotoIsACommand(t *testing.T) {
	// As LangGraph's Command(update=..., goto=...) as a first input: the
	// input goes where it says; START's own edges do not fire.
	b := newG()
	b.AddNode("agent", logNode("agent")).AddNode("tools", logNode("tools"))
	b.AddEdge(graph.START, "agent").AddEdge("agent", "tools")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	res, err := g.Invoke(context.Background(), graph.Updates(Log.Add("in")).Goto("tools"), graph.WithThread("c"))
	if err != nil || !slices.Equal(res.State.Log, []string{"in", "tools"}) {
		t.Fatalf("log %v err %v", res.State.Log, err)
	}
}

func TestContinueWithNothingPending(t *testing.T) {
	ctx := context.Background()
	b := newG()
	b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	th := graph.WithThread("done")
	if _, err := g.Invoke(ctx, graph.Updates(Log.Add("in")), th); err != nil {
		t.Fatal(err)
	}
	// A finished thread: continuing it runs nothing and returns its state.
	res, err := g.Invoke(ctx, graph.Updates[St](), th, graph.WithContinue())
	if err != nil || !slices.Equal(res.State.Log, []string{"in", "a"}) {
		t.Fatalf("continue a finished thread: %+v %v", res, err)
	}
	// With input, it starts a run.
	res, err = g.Invoke(ctx, graph.Updates(Log.Add("more")), th, graph.WithContinue())
	if err != nil || !slices.Equal(res.State.Log, []string{"in", "a", "more", "a"}) {
		t.Fatalf("continue with input: %+v %v", res, err)
	}
	// A value for an interrupt that is not there is still an error.
	if _, err := g.Invoke(ctx, graph.Updates[St](), th, graph.WithResume("x")); err == nil {
		t.Fatal("WithResume on a finished thread succeeded")
	}
}
