package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

type St struct {
	Log   []string
	Count int
	Name  string
	Sum   int
}

var (
	Log   = graph.SliceField("log", func(s *St) *[]string { return &s.Log }, graph.Append[string]())
	Count = graph.Field("count", func(s *St) *int { return &s.Count }, graph.LastValue[int]())
	Name  = graph.Field("name", func(s *St) *string { return &s.Name }, graph.LastValue[string]())
	Sum   = graph.Field("sum", func(s *St) *int { return &s.Sum }, graph.Reduce(func(a, b int) int { return a + b }))
)

func newG() *graph.StateGraph[St] { return graph.New[St](Log, Count, Name, Sum) }

func logNode(name string) graph.NodeFunc[St] {
	return func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add(name)), nil
	}
}

func mustCompile(t testing.TB, b *graph.StateGraph[St], opts ...graph.CompileOption) *graph.Graph[St] {
	t.Helper()
	g, err := b.Compile(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestChainAndReducers(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
	b.AddNodeFunc("c", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add("c"), Count.Set(0), Sum.Set(5), Name.Set("x")), nil
	})
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END)
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), graph.Updates(Count.Set(7), Sum.Set(1), Log.Add("in")))
	if err != nil {
		t.Fatal(err)
	}
	want := St{Log: []string{"in", "a", "b", "c"}, Count: 0, Name: "x", Sum: 6}
	if !equal(res.State, want) {
		t.Fatalf("got %+v, want %+v", res.State, want)
	}
}

func equal(a, b St) bool {
	return slices.Equal(a.Log, b.Log) && a.Count == b.Count && a.Name == b.Name && a.Sum == b.Sum
}

func TestOverwriteBypassesReducer(t *testing.T) {
	b := newG()
	b.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Overwrite([]string{"only"}), Sum.Overwrite(0)), nil
	})
	b.AddEdge(graph.START, "a")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates(Log.Add("x", "y"), Sum.Set(3)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.State.Log, []string{"only"}) || res.State.Sum != 0 {
		t.Fatalf("got %+v", res.State)
	}
}

func TestParallelStepReadsOneSnapshot(t *testing.T) {
	b := newG()
	var seen [2]int
	for i, n := range []string{"p", "q"} {
		b.AddNodeFunc(n, func(ctx context.Context, s St) (graph.Update[St], error) {
			seen[i] = len(s.Log)
			return graph.Updates(Log.Add(n), Sum.Set(1)), nil
		})
		b.AddEdge(graph.START, n)
	}
	b.AddNodeFunc("after", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Count.Set(len(s.Log))), nil
	})
	b.AddEdge("p", "after").AddEdge("q", "after")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	if seen != [2]int{0, 0} {
		t.Fatalf("tasks of one step saw %v entries: writes leaked within the step", seen)
	}
	// Writes apply in task order (name order): p before q. after runs once.
	if !slices.Equal(res.State.Log, []string{"p", "q"}) || res.State.Sum != 2 || res.State.Count != 2 {
		t.Fatalf("got %+v", res.State)
	}
}

// Tasks of a step whose nodes ran in a moment may run one after another;
// if one of them then waits for a sibling, the sibling must still start.
// Here two nodes run quickly for a few rounds of a loop and then meet: each
// waits for the other before it returns.
func TestQuickSiblingsThatWaitForEachOtherStillMeet(t *testing.T) {
	const rounds, meetFrom = 6, 3
	var mu sync.Mutex
	meet := map[int][2]chan struct{}{}
	channels := func(round int) [2]chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := meet[round]; !ok {
			meet[round] = [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		}
		return meet[round]
	}
	b := newG()
	b.AddNodeFunc("split", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Count.Set(s.Count + 1)), nil
	})
	for i, n := range []string{"a", "b"} {
		b.AddNodeFunc(n, func(ctx context.Context, s St) (graph.Update[St], error) {
			if s.Count >= meetFrom {
				ch := channels(s.Count)
				close(ch[i])
				select {
				case <-ch[1-i]:
				case <-time.After(10 * time.Second):
					return graph.Update[St]{}, fmt.Errorf("round %d: %s waited 10 s for its sibling, which never started", s.Count, n)
				}
			}
			return graph.Updates(Log.Add(n)), nil
		})
		b.AddEdge("split", n)
	}
	b.AddWaitingEdge([]string{"a", "b"}, "join")
	b.AddNodeFunc("join", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Update[St]{}, nil })
	b.AddEdge(graph.START, "split")
	b.AddConditionalEdges("join", graph.RouteFunc(func(s St) string {
		if s.Count < rounds {
			return "split"
		}
		return graph.END
	}), graph.BranchConfig{Paths: []string{"split", graph.END}})
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.State.Log) != 2*rounds || res.State.Count != rounds {
		t.Fatalf("got %d log entries after %d rounds, want %d after %d", len(res.State.Log), res.State.Count, 2*rounds, rounds)
	}
}

func TestLastValueConflictNamesKeyAndTasks(t *testing.T) {
	b := newG()
	for _, n := range []string{"left", "right"} {
		b.AddNodeFunc(n, func(ctx context.Context, s St) (graph.Update[St], error) {
			return graph.Updates(Name.Set(n)), nil
		})
		b.AddEdge(graph.START, n)
	}
	_, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	var ie *graph.InvalidUpdateError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want InvalidUpdateError", err)
	}
	if ie.Key != "name" || !slices.Equal(ie.Nodes, []string{"left", "right"}) {
		t.Fatalf("error names key %q nodes %v", ie.Key, ie.Nodes)
	}
	if !strings.Contains(err.Error(), `"left" and "right"`) {
		t.Fatalf("message %q does not name both nodes", err)
	}
}

func TestWaitingEdgeAcrossSteps(t *testing.T) {
	b := newG()
	b.AddNode("fast", logNode("fast")).AddNode("slow1", logNode("slow1")).AddNode("slow2", logNode("slow2"))
	b.AddNode("join", logNode("join")).AddNode("each", logNode("each"))
	b.AddEdge(graph.START, "fast").AddEdge(graph.START, "slow1").AddEdge("slow1", "slow2")
	b.AddWaitingEdge([]string{"fast", "slow2"}, "join")
	// A plain edge from each source runs after every step a source finished in.
	b.AddEdge("fast", "each").AddEdge("slow2", "each")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string) int {
		n := 0
		for _, l := range res.State.Log {
			if l == name {
				n++
			}
		}
		return n
	}
	if count("join") != 1 || count("each") != 2 {
		t.Fatalf("join ran %d times (want 1), each %d times (want 2): %v", count("join"), count("each"), res.State.Log)
	}
	if i, j := slices.Index(res.State.Log, "join"), slices.Index(res.State.Log, "slow2"); i < j {
		t.Fatalf("join ran before slow2: %v", res.State.Log)
	}
}

func TestSendMapReduce(t *testing.T) {
	b := newG()
	var calls atomic.Int32
	b.AddNodeFunc("worker", func(ctx context.Context, s St) (graph.Update[St], error) {
		calls.Add(1)
		return graph.Updates(Sum.Set(s.Count), Log.Add(s.Name)), nil
	})
	b.AddNode("collect", logNode("collect"))
	b.AddConditionalEdges(graph.START, func(ctx context.Context, s St) (graph.Route[St], error) {
		var r graph.Route[St]
		for i := 1; i <= 100; i++ {
			r.Sends = append(r.Sends, graph.SendTo("worker", St{Count: i, Name: fmt.Sprint(i)}))
		}
		return r, nil
	}, graph.BranchConfig{Paths: []string{"worker"}})
	b.AddEdge("worker", "collect")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 100 || res.State.Sum != 5050 {
		t.Fatalf("calls=%d sum=%d", calls.Load(), res.State.Sum)
	}
	// Sends apply in send order; collect runs once.
	if res.State.Log[0] != "1" || res.State.Log[99] != "100" || res.State.Log[100] != "collect" || len(res.State.Log) != 101 {
		t.Fatalf("log %v", res.State.Log)
	}
}

func TestCommandGoto(t *testing.T) {
	b := newG()
	b.AddNodeFunc("router", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add("router")).Goto("b", graph.END), nil
	}, graph.WithDestinations("b"))
	b.AddNode("b", logNode("b"))
	b.AddEdge(graph.START, "router")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.State.Log, []string{"router", "b"}) {
		t.Fatalf("log %v", res.State.Log)
	}
}

func TestConditionalPathMapAndLocalRead(t *testing.T) {
	b := newG()
	b.AddNodeFunc("set", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Count.Set(s.Count + 1)), nil
	})
	b.AddNode("done", logNode("done"))
	b.AddEdge(graph.START, "set")
	b.AddConditionalEdges("set", graph.RouteFunc(func(s St) string {
		if s.Count < 3 {
			return "again"
		}
		return "finish"
	}), graph.BranchConfig{PathMap: map[string]string{"again": "set", "finish": "done"}})
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), graph.Updates[St]())
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Count != 3 || !slices.Equal(res.State.Log, []string{"done"}) {
		t.Fatalf("got %+v", res.State)
	}
	m := g.Mermaid()
	for _, want := range []string{"set -. &nbsp;again&nbsp; .-> set;", "set -. &nbsp;finish&nbsp; .-> done;", "__start__ --> set;"} {
		if !strings.Contains(m, want) {
			t.Fatalf("mermaid lacks %q:\n%s", want, m)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	n := logNode("x")
	cases := []struct {
		name  string
		build func(b *graph.StateGraph[St])
		want  string
	}{
		{"no entry", func(b *graph.StateGraph[St]) { b.AddNode("a", n) }, "no entry point"},
		{"unknown target", func(b *graph.StateGraph[St]) { b.AddNode("a", n).AddEdge(graph.START, "a").AddEdge("a", "zz") }, `unknown node "zz"`},
		{"unreached", func(b *graph.StateGraph[St]) { b.AddNode("a", n).AddNode("b", n).AddEdge(graph.START, "a") }, `node "b" is not reached`},
		{"start target", func(b *graph.StateGraph[St]) { b.AddNode("a", n).AddEdge(graph.START, "a").AddEdge("a", graph.START) }, "START cannot be a target"},
		{"end source", func(b *graph.StateGraph[St]) { b.AddNode("a", n).AddEdge(graph.START, "a").AddEdge(graph.END, "a") }, "END cannot be a source"},
		{"reserved", func(b *graph.StateGraph[St]) { b.AddNode(graph.END, n) }, "reserved"},
		{"separator", func(b *graph.StateGraph[St]) { b.AddNode("a:b", n) }, "separator"},
		{"duplicate", func(b *graph.StateGraph[St]) { b.AddNode("a", n).AddNode("a", n).AddEdge(graph.START, "a") }, "added twice"},
		{"duplicate branch", func(b *graph.StateGraph[St]) {
			r := graph.RouteFunc(func(St) string { return graph.END })
			b.AddNode("a", n).AddEdge(graph.START, "a").AddConditionalEdges("a", r).AddConditionalEdges("a", r)
		}, "two conditional edges"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newG()
			c.build(b)
			_, err := b.Compile()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func chain(n int) *graph.StateGraph[St] {
	b := newG()
	prev := graph.START
	for i := range n {
		name := fmt.Sprint("n", i)
		b.AddNode(name, logNode(name))
		b.AddEdge(prev, name)
		prev = name
	}
	return b
}

func TestRecursionLimitBoundary(t *testing.T) {
	g := mustCompile(t, chain(10))
	if _, err := g.Invoke(context.Background(), graph.Updates[St](), graph.WithRecursionLimit(10)); err != nil {
		t.Fatalf("10 nodes at limit 10: %v", err)
	}
	_, err := g.Invoke(context.Background(), graph.Updates[St](), graph.WithRecursionLimit(9))
	var rl *graph.RecursionLimitError
	if !errors.As(err, &rl) || rl.Limit != 9 {
		t.Fatalf("10 nodes at limit 9: err = %v", err)
	}
}

func TestNodeErrorAndPanic(t *testing.T) {
	boom := errors.New("boom")
	b := newG()
	b.AddNodeFunc("ok", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Updates[St](), nil })
	b.AddNodeFunc("bad", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Update[St]{}, boom })
	b.AddNodeFunc("panics", func(ctx context.Context, s St) (graph.Update[St], error) { panic("kaput") })
	b.AddEdge(graph.START, "ok").AddEdge("ok", "bad").AddConditionalEdges(graph.START, graph.RouteFunc(func(s St) string {
		if s.Name == "panic" {
			return "panics"
		}
		return graph.END
	}), graph.BranchConfig{Paths: []string{"panics", graph.END}})
	g := mustCompile(t, b)
	_, err := g.Invoke(context.Background(), graph.Updates[St]())
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "bad" || ne.Step != 1 || !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	_, err = g.Invoke(context.Background(), graph.Updates(Name.Set("panic")))
	if !errors.As(err, &ne) || ne.Node != "panics" || !ne.Panic || !strings.Contains(err.Error(), "kaput") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelStopsPromptlyWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	b := newG()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNodeFunc(n, func(ctx context.Context, s St) (graph.Update[St], error) {
			<-ctx.Done()
			return graph.Update[St]{}, ctx.Err()
		})
		b.AddEdge(graph.START, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := mustCompile(t, b).Invoke(ctx, graph.Updates[St]())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after the run, %d before", n, before)
	}
}

func TestRetryPolicy(t *testing.T) {
	var attempts atomic.Int32
	b := newG()
	b.AddNodeFunc("flaky", func(ctx context.Context, s St) (graph.Update[St], error) {
		if attempts.Add(1) < 3 {
			return graph.Update[St]{}, errors.New("transient")
		}
		return graph.Updates(Count.Set(42)), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
	b.AddEdge(graph.START, "flaky")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if err != nil || res.State.Count != 42 || attempts.Load() != 3 {
		t.Fatalf("res=%+v err=%v attempts=%d", res.State, err, attempts.Load())
	}
	attempts.Store(0)
	b2 := newG()
	b2.AddNodeFunc("perm", func(ctx context.Context, s St) (graph.Update[St], error) {
		attempts.Add(1)
		return graph.Update[St]{}, graph.Permanent(errors.New("bad input"))
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond}))
	b2.AddEdge(graph.START, "perm")
	if _, err := mustCompile(t, b2).Invoke(context.Background(), graph.Updates[St]()); err == nil || attempts.Load() != 1 {
		t.Fatalf("permanent error retried: attempts=%d err=%v", attempts.Load(), err)
	}
}

func TestNodeTimeout(t *testing.T) {
	b := newG()
	b.AddNodeFunc("slow", func(ctx context.Context, s St) (graph.Update[St], error) {
		<-ctx.Done()
		return graph.Update[St]{}, ctx.Err()
	}, graph.WithTimeout(10*time.Millisecond))
	b.AddEdge(graph.START, "slow")
	_, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigReachesDeepCalls(t *testing.T) {
	deep := func(ctx context.Context) string { return graph.ThreadIDFrom(ctx) }
	var got graph.Config
	b := newG()
	b.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		got, _ = graph.ConfigFrom(ctx)
		return graph.Updates(Name.Set(deep(context.WithValue(ctx, deepKey{}, 1)))), nil
	})
	b.AddEdge(graph.START, "a")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St](), graph.WithThread("t-1"), graph.WithValue("user", "u9"))
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Name != "t-1" || got.Node != "a" || got.Values["user"] != "u9" || got.RunID == "" {
		t.Fatalf("name=%q cfg=%+v", res.State.Name, got)
	}
}

func TestStreamModes(t *testing.T) {
	b := newG()
	b.AddNodeFunc("a", func(ctx context.Context, s St) (graph.Update[St], error) {
		graph.Emit(ctx, "progress")
		return graph.Updates(Log.Add("a")), nil
	})
	b.AddNode("b", logNode("b"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b")
	g := mustCompile(t, b)
	var got []string
	for ev, err := range g.Stream(context.Background(), graph.Updates[St](), graph.WithStreamModes(graph.ModeValues|graph.ModeUpdates|graph.ModeCustom|graph.ModeDebug)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Mode {
		case graph.ModeValues:
			got = append(got, fmt.Sprintf("values%v", ev.State.Log))
		case graph.ModeUpdates:
			got = append(got, fmt.Sprintf("update %s %v", ev.Node, ev.Update["log"]))
		case graph.ModeCustom:
			got = append(got, fmt.Sprintf("custom %s %v", ev.Node, ev.Data))
		case graph.ModeDebug:
			got = append(got, "debug "+ev.Debug.Type)
		}
	}
	// An empty input yields no values event.
	want := []string{"debug task_start", "custom a progress", "debug task_end", "update a [a]", "debug step", "values[a]",
		"debug task_start", "debug task_end", "update b [b]", "debug step", "values[a b]"}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n%q\nwant\n%q", got, want)
	}
	// Breaking out of the stream stops the run.
	n := 0
	for range g.Stream(context.Background(), graph.Updates[St](), graph.WithStreamModes(graph.ModeUpdates)) {
		n++
		break
	}
	if n != 1 {
		t.Fatal("break did not stop the stream")
	}
}

func TestSubgraph(t *testing.T) {
	type Child struct{ Text string }
	Text := graph.Field("text", func(c *Child) *string { return &c.Text }, graph.LastValue[string]())
	cb := graph.New[Child](Text)
	cb.AddNodeFunc("upper", func(ctx context.Context, c Child) (graph.Update[Child], error) {
		return graph.Updates(Text.Set(strings.ToUpper(c.Text) + "!" + graph.ThreadIDFrom(ctx))), nil
	})
	cb.AddEdge(graph.START, "upper")
	child, err := cb.Compile()
	if err != nil {
		t.Fatal(err)
	}
	b := newG()
	b.AddNode("sub", graph.Subgraph(child,
		func(ctx context.Context, s St) (Child, error) { return Child{Text: s.Name}, nil },
		func(ctx context.Context, c Child) (graph.Update[St], error) {
			return graph.Updates(Name.Set(c.Text)), nil
		}))
	b.AddEdge(graph.START, "sub")
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates(Name.Set("hi")), graph.WithThread("7"))
	if err != nil || res.State.Name != "HI!7" {
		t.Fatalf("got %q err %v", res.State.Name, err)
	}
}

func TestMaxConcurrency(t *testing.T) {
	var cur, peak atomic.Int32
	full := make(chan struct{}) // closed once three tasks run at once
	var once sync.Once
	b := newG()
	b.AddNodeFunc("w", func(ctx context.Context, s St) (graph.Update[St], error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(full) })
		}
		// The first tasks wait for each other, so the cap is reached
		// whatever the machine's speed; a fourth would exceed it.
		<-full
		cur.Add(-1)
		return graph.Updates(Sum.Set(1)), nil
	})
	b.AddConditionalEdges(graph.START, func(ctx context.Context, s St) (graph.Route[St], error) {
		var r graph.Route[St]
		for range 20 {
			r.Sends = append(r.Sends, graph.SendTo("w", St{}))
		}
		return r, nil
	}, graph.BranchConfig{Paths: []string{"w"}})
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St](), graph.WithMaxConcurrency(3))
	if err != nil || res.State.Sum != 20 || peak.Load() != 3 {
		t.Fatalf("sum=%d peak=%d err=%v", res.State.Sum, peak.Load(), err)
	}
}

func TestCodecCheckAtCompile(t *testing.T) {
	type Bad struct{ F func() }
	F := graph.Field("f", func(s *Bad) *func() { return &s.F }, graph.LastValue[func()]())
	b := graph.New[Bad](F)
	b.AddNodeFunc("a", func(ctx context.Context, s Bad) (graph.Update[Bad], error) { return graph.Update[Bad]{}, nil })
	b.AddEdge(graph.START, "a")
	_, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err == nil || !strings.Contains(err.Error(), `key "f" cannot be saved`) {
		t.Fatalf("err = %v", err)
	}
}

// deepKey is a context key of the tests.
type deepKey struct{}
