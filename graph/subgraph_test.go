package graph_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// KS is the one-key state of the subgraph tests, after LangGraph's
// {"my_key": str} states.
type KS struct{ Key string }

var MyKey = graph.Field("my_key", func(s *KS) *string { return &s.Key }, graph.LastValue[string]())

func appendNode(suffix string, ran *[]string, mu *sync.Mutex, name string) graph.NodeFunc[KS] {
	return func(ctx context.Context, s KS) (graph.Update[KS], error) {
		mu.Lock()
		*ran = append(*ran, name)
		mu.Unlock()
		return graph.Updates(MyKey.Set(s.Key + suffix)), nil
	}
}

func sameState(ctx context.Context, s KS) (KS, error) { return s, nil }
func keyBack(ctx context.Context, s KS) (graph.Update[KS], error) {
	return graph.Updates(MyKey.Set(s.Key)), nil
}

// doublyNested builds LangGraph's test_doubly_nested_graph_interrupts: a
// grandchild compiled with a breakpoint before its second node, inside a
// child, inside the parent.
func doublyNested(t *testing.T, saver checkpoint.Saver, ran *[]string) *graph.Graph[KS] {
	t.Helper()
	var mu sync.Mutex
	gc := graph.New[KS](MyKey)
	gc.AddNode("grandchild_1", appendNode(" here", ran, &mu, "grandchild_1"))
	gc.AddNode("grandchild_2", appendNode(" and there", ran, &mu, "grandchild_2"))
	gc.AddEdge(graph.START, "grandchild_1").AddEdge("grandchild_1", "grandchild_2")
	grandchild, err := gc.Compile(graph.WithInterruptBefore("grandchild_2"))
	if err != nil {
		t.Fatal(err)
	}
	ch := graph.New[KS](MyKey)
	ch.AddNode("child_1", graph.Subgraph(grandchild, sameState, keyBack))
	ch.AddEdge(graph.START, "child_1")
	child, err := ch.Compile()
	if err != nil {
		t.Fatal(err)
	}
	p := graph.New[KS](MyKey)
	p.AddNodeFunc("parent_1", func(ctx context.Context, s KS) (graph.Update[KS], error) {
		mu.Lock()
		*ran = append(*ran, "parent_1")
		mu.Unlock()
		return graph.Updates(MyKey.Set("hi " + s.Key)), nil
	})
	p.AddNode("child", graph.Subgraph(child, sameState, keyBack))
	p.AddNode("parent_2", appendNode(" and back again", ran, &mu, "parent_2"))
	p.AddEdge(graph.START, "parent_1").AddEdge("parent_1", "child").AddEdge("child", "parent_2")
	g, err := p.Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDoublyNestedInterrupts(t *testing.T) {
	for _, d := range durabilities {
		t.Run(d.String(), func(t *testing.T) {
			ctx := context.Background()
			var ran []string
			g := doublyNested(t, checkpoint.NewMemory(), &ran)
			opts := []graph.RunOption{graph.WithThread("1"), graph.WithDurability(d)}
			res, err := g.Invoke(ctx, graph.Updates(MyKey.Set("my value")), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.State.Key != "hi my value" || len(res.Interrupts) != 1 {
				t.Fatalf("first run: %+v", res)
			}
			in := res.Interrupts[0]
			if in.Node != "grandchild_2" || in.When != "before" || !strings.HasPrefix(in.Namespace, "child:") || strings.Count(in.Namespace, "|") != 1 || !strings.Contains(in.Namespace, "|child_1:") {
				t.Fatalf("interrupt %+v: want grandchild_2 in namespace child:<id>|child_1:<id>", in)
			}
			res, err = g.Invoke(ctx, graph.Updates[KS](), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.State.Key != "hi my value here and there and back again" || res.Interrupted() {
				t.Fatalf("resumed run: %+v", res)
			}
			want := []string{"parent_1", "grandchild_1", "grandchild_2", "parent_2"}
			if !slices.Equal(ran, want) {
				t.Fatalf("nodes ran %v, want %v (nothing that finished runs again)", ran, want)
			}
		})
	}
}

func TestDoublyNestedInterruptsStream(t *testing.T) {
	ctx := context.Background()
	var ran []string
	g := doublyNested(t, checkpoint.NewMemory(), &ran)
	collect := func(in graph.Update[KS], opts ...graph.RunOption) []string {
		var got []string
		for ev, err := range g.Stream(ctx, in, opts...) {
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Mode {
			case graph.ModeUpdates:
				got = append(got, fmt.Sprintf("%s:%v", ev.Node, ev.Update["my_key"]))
			case graph.ModeValues:
				got = append(got, ev.State.Key)
			case graph.ModeInterrupt:
				got = append(got, "__interrupt__")
			}
		}
		return got
	}
	got := collect(graph.Updates(MyKey.Set("my value")), graph.WithThread("2"))
	if want := []string{"parent_1:hi my value", "__interrupt__"}; !slices.Equal(got, want) {
		t.Fatalf("updates %q, want %q", got, want)
	}
	got = collect(graph.Updates[KS](), graph.WithThread("2"))
	if want := []string{"child:hi my value here and there", "parent_2:hi my value here and there and back again"}; !slices.Equal(got, want) {
		t.Fatalf("resumed updates %q, want %q", got, want)
	}
	values := graph.WithStreamModes(graph.ModeValues)
	got = collect(graph.Updates(MyKey.Set("my value")), graph.WithThread("3"), values)
	if want := []string{"my value", "hi my value", "__interrupt__"}; !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	got = collect(graph.Updates[KS](), graph.WithThread("3"), values)
	if want := []string{"hi my value", "hi my value here and there", "hi my value here and there and back again"}; !slices.Equal(got, want) {
		t.Fatalf("resumed values %q, want %q (the state comes first on resume)", got, want)
	}
}

// askNode interrupts with a question and writes the answer after its name.
func askNode(name string, runs *sync.Map) graph.NodeFunc[St] {
	return func(ctx context.Context, s St) (graph.Update[St], error) {
		n, _ := runs.LoadOrStore(name, new(int))
		*n.(*int)++
		v, err := graph.Interrupt(ctx, "question from "+name)
		if err != nil {
			return graph.Update[St]{}, err
		}
		return graph.Updates(Log.Add(name + "=" + fmt.Sprint(v))), nil
	}
}

func runs(m *sync.Map, name string) int {
	n, ok := m.Load(name)
	if !ok {
		return 0
	}
	return *n.(*int)
}

// inner is a subgraph over St: "before" logs, then "ask" interrupts.
func inner(t *testing.T, name string, counts *sync.Map) *graph.Graph[St] {
	t.Helper()
	b := newG()
	b.AddNodeFunc("before", func(ctx context.Context, s St) (graph.Update[St], error) {
		n, _ := counts.LoadOrStore(name+"/before", new(int))
		*n.(*int)++
		return graph.Updates(Log.Add(name + " before")), nil
	})
	b.AddNode("ask", askNode(name+"/ask", counts))
	b.AddEdge(graph.START, "before").AddEdge("before", "ask")
	return mustCompile(t, b)
}

func logsOf(ctx context.Context, s St) (St, error) { return St{}, nil }
func logsBack(ctx context.Context, c St) (graph.Update[St], error) {
	return graph.Updates(Log.Add(c.Log...)), nil
}

func TestParallelSubgraphInterrupts(t *testing.T) {
	for _, d := range durabilities {
		t.Run(d.String(), func(t *testing.T) {
			ctx := context.Background()
			var counts sync.Map
			b := newG()
			b.AddNode("one", graph.Subgraph(inner(t, "one", &counts), logsOf, logsBack))
			b.AddNode("two", graph.Subgraph(inner(t, "two", &counts), logsOf, logsBack))
			b.AddNode("top", askNode("top", &counts))
			b.AddEdge(graph.START, "one").AddEdge(graph.START, "two").AddEdge(graph.START, "top")
			g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
			opts := []graph.RunOption{graph.WithThread("p"), graph.WithDurability(d)}
			res, err := g.Invoke(ctx, graph.Updates[St](), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Interrupts) != 3 {
				t.Fatalf("interrupts %+v, want three", res.Interrupts)
			}
			byValue := map[string]graph.Interruption{}
			ids := map[string]bool{}
			for _, in := range res.Interrupts {
				byValue[fmt.Sprint(in.Value)] = in
				ids[in.ID] = true
			}
			if len(ids) != 3 || byValue["question from top"].Namespace != "" || !strings.HasPrefix(byValue["question from one/ask"].Namespace, "one:") || !strings.HasPrefix(byValue["question from two/ask"].Namespace, "two:") {
				t.Fatalf("interrupts %+v: want distinct ids, each with its namespace", res.Interrupts)
			}
			snap, err := g.GetState(ctx, graph.WithThread("p"))
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Interrupts) != 3 || !slices.Equal(snap.Next, []string{"one", "top", "two"}) {
				t.Fatalf("state: interrupts %+v next %v", snap.Interrupts, snap.Next)
			}
			// One value for three interrupts is refused and loses nothing.
			if _, err := g.Invoke(ctx, graph.Updates[St](), append(opts, graph.WithResume("x"))...); err == nil || !strings.Contains(err.Error(), "3 interrupts are pending") {
				t.Fatalf("single value for three interrupts: %v", err)
			}
			// Answer two of them: the third asks again.
			res, err = g.Invoke(ctx, graph.Updates[St](), append(opts, graph.WithResumeByID(map[string]any{
				byValue["question from one/ask"].ID: "1",
				byValue["question from top"].ID:     "t",
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Interrupts) != 1 || res.Interrupts[0].Value != "question from two/ask" {
				t.Fatalf("after a partial answer: %+v", res.Interrupts)
			}
			// The last one alone takes a single value.
			res, err = g.Invoke(ctx, graph.Updates[St](), append(opts, graph.WithResume("2"))...)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(res.State.Log))
			want := []string{"one before", "one/ask=1", "top=t", "two before", "two/ask=2"}
			if !slices.Equal(got, want) || res.Interrupted() {
				t.Fatalf("final log %q, want %q", got, want)
			}
			if runs(&counts, "one/before") != 1 || runs(&counts, "two/before") != 1 {
				t.Fatalf("finished subgraph nodes ran again: one %d, two %d", runs(&counts, "one/before"), runs(&counts, "two/before"))
			}
			if runs(&counts, "one/ask") != 2 || runs(&counts, "two/ask") != 3 || runs(&counts, "top") != 2 {
				t.Fatalf("interrupting nodes ran one %d, two %d, top %d times", runs(&counts, "one/ask"), runs(&counts, "two/ask"), runs(&counts, "top"))
			}
		})
	}
}

func TestSubgraphStateAndStream(t *testing.T) {
	ctx := context.Background()
	var counts sync.Map
	b := newG()
	b.AddNode("sub", graph.Subgraph(inner(t, "sub", &counts), logsOf, logsBack))
	b.AddEdge(graph.START, "sub")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	var events []string
	for ev, err := range g.Stream(ctx, graph.Updates[St](), graph.WithThread("s"), graph.WithSubgraphs(), graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues)) {
		if err != nil {
			t.Fatal(err)
		}
		ns, _, _ := strings.Cut(ev.Namespace, ":")
		switch ev.Mode {
		case graph.ModeUpdates:
			events = append(events, fmt.Sprintf("%s updates %s %v", ns, ev.Node, ev.Update["log"]))
		case graph.ModeValues:
			if ev.Namespace != "" {
				events = append(events, fmt.Sprintf("%s values %v", ns, ev.Data.(St).Log))
			}
		case graph.ModeInterrupt:
			events = append(events, "interrupt "+ns+" "+ev.Interrupts[0].Node)
		}
	}
	want := []string{"sub values []", "sub updates before [sub before]", "sub values [sub before]", "interrupt  ask"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %q, want %q", events, want)
	}
	plain, err := g.GetState(ctx, graph.WithThread("s"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Tasks[0].State != nil {
		t.Fatalf("without WithSubgraphs the task's state is %v", plain.Tasks[0].State)
	}
	snap, err := g.GetState(ctx, graph.WithThread("s"), graph.WithSubgraphs())
	if err != nil {
		t.Fatal(err)
	}
	sub, ok := snap.Tasks[0].State.(graph.Snapshot[St])
	if !ok {
		t.Fatalf("task state %T, want graph.Snapshot[St]", snap.Tasks[0].State)
	}
	if !slices.Equal(sub.Next, []string{"ask"}) || !slices.Equal(sub.Values.Log, []string{"sub before"}) || sub.Config.Namespace != snap.Interrupts[0].Namespace || sub.Config.ThreadID != "s" {
		t.Fatalf("subgraph snapshot %+v (interrupt %+v)", sub, snap.Interrupts[0])
	}
}

func TestToParent(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprint("saver=", persist), func(t *testing.T) {
			// LangGraph's test_parent_command_goto.
			sb := newG()
			sb.AddNode("node_a_child", logNode("a_child_state"))
			sb.AddNodeFunc("node_b_child", func(ctx context.Context, s St) (graph.Update[St], error) {
				return graph.Update[St]{}, graph.ToParent(graph.Updates(Log.Add("b_child_state")).Goto("node_b_parent"))
			})
			sb.AddEdge(graph.START, "node_a_child").AddEdge("node_a_child", "node_b_child")
			sub := mustCompile(t, sb)
			b := newG()
			b.AddNode("subgraph_node", graph.Subgraph(sub, logsOf, logsBack), graph.WithDestinations("node_b_parent"))
			b.AddNode("node_b_parent", logNode("node_b_parent"))
			b.AddEdge(graph.START, "subgraph_node")
			var opts []graph.CompileOption
			var run []graph.RunOption
			if persist {
				opts = append(opts, graph.WithSaver(checkpoint.NewMemory()))
				run = append(run, graph.WithThread("1"))
			}
			g := mustCompile(t, b, opts...)
			res, err := g.Invoke(context.Background(), graph.Updates(Log.Add("init_state")), run...)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"init_state", "b_child_state", "node_b_parent"}; !slices.Equal(res.State.Log, want) {
				t.Fatalf("log %q, want %q", res.State.Log, want)
			}
		})
	}
}

func TestToParentWrongType(t *testing.T) {
	sb := newG()
	sb.AddNodeFunc("x", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Update[St]{}, graph.ToParent(graph.Updates(MyKey.Set("wrong state type")))
	})
	sb.AddEdge(graph.START, "x")
	b := newG()
	b.AddNode("sub", graph.Subgraph(mustCompile(t, sb), logsOf, logsBack))
	b.AddEdge(graph.START, "sub")
	_, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err == nil || !strings.Contains(err.Error(), "parent graph's state is graph_test.St") {
		t.Fatalf("err %v", err)
	}
}

func TestInterruptWithoutSaver(t *testing.T) {
	b := newG()
	var counts sync.Map
	b.AddNode("ask", askNode("ask", &counts), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, NoJitter: true}))
	b.AddEdge(graph.START, "ask")
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), graph.Updates(Log.Add("in")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interrupts) != 1 || res.Interrupts[0].Value != "question from ask" || !slices.Equal(res.State.Log, []string{"in"}) {
		t.Fatalf("result %+v", res)
	}
	if runs(&counts, "ask") != 1 {
		t.Fatalf("the interrupt was retried: %d runs", runs(&counts, "ask"))
	}
	_, err = g.Invoke(context.Background(), graph.Updates[St](), graph.WithResume("x"))
	if !errors.Is(err, graph.ErrNoSaver) {
		t.Fatalf("resume without a saver: %v", err)
	}
}

// Two subgraphs in one step stream their updates with WithSubgraphs: their
// events reach the consumer one at a time, from the caller's goroutine
// (the race detector checks), and none is lost.
func TestParallelSubgraphsStreamTheirUpdates(t *testing.T) {
	cb := newG()
	cb.AddNodeFunc("x", func(ctx context.Context, s St) (graph.Update[St], error) {
		time.Sleep(time.Millisecond)
		return graph.Updates(Log.Add("x")), nil
	})
	cb.AddNodeFunc("y", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Updates(Log.Add("y")), nil })
	cb.AddEdge(graph.START, "x").AddEdge("x", "y").AddEdge("y", graph.END)
	child := mustCompile(t, cb)
	b := newG()
	in := func(ctx context.Context, p St) (St, error) { return St{}, nil }
	out := func(ctx context.Context, c St) (graph.Update[St], error) {
		return graph.Updates(Log.Add(c.Log...)), nil
	}
	b.AddNode("s1", graph.Subgraph(child, in, out)).AddNode("s2", graph.Subgraph(child, in, out))
	b.AddEdge(graph.START, "s1").AddEdge(graph.START, "s2").AddEdge("s1", graph.END).AddEdge("s2", graph.END)
	g := mustCompile(t, b)
	got := map[string]int{}
	for ev, err := range g.Stream(context.Background(), graph.Updates[St](), graph.WithSubgraphs(), graph.WithStreamModes(graph.ModeUpdates)) {
		if err != nil {
			t.Fatal(err)
		}
		ns, _, _ := strings.Cut(ev.Namespace, ":")
		got[ns+"/"+ev.Node]++
	}
	want := map[string]int{"s1/x": 1, "s1/y": 1, "s2/x": 1, "s2/y": 1, "/s1": 1, "/s2": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("updates by namespace/node: %v, want %v", got, want)
	}
}
