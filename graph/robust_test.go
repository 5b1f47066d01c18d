package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

func TestDeferredNodeWaitsForOtherBranches(t *testing.T) {
	// LangGraph's test_in_one_fan_out_state_graph_defer_node: qa, deferred,
	// runs once after the longer branch ends.
	for _, persist := range []bool{false, true} {
		b := newG()
		var qa int
		b.AddNode("rewrite_query", logNode("rewrite_query"))
		b.AddNode("retriever_one", logNode("retriever_one"))
		b.AddNode("retriever_two", logNode("retriever_two"))
		b.AddNode("analyzer_one", logNode("analyzer_one"))
		b.AddNodeFunc("qa", func(ctx context.Context, s St) (graph.Update[St], error) {
			qa++
			return graph.Updates(Log.Add("qa after " + strings.Join(s.Log, ","))), nil
		}, graph.WithDefer())
		b.AddEdge(graph.START, "rewrite_query").AddEdge("rewrite_query", "retriever_one").AddEdge("retriever_one", "analyzer_one")
		b.AddEdge("rewrite_query", "retriever_two").AddEdge("retriever_one", "qa").AddEdge("retriever_two", "qa")
		var opts []graph.CompileOption
		var run []graph.RunOption
		if persist {
			opts = append(opts, graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptAfter("analyzer_one"))
			run = append(run, graph.WithThread("d"))
		}
		g := mustCompile(t, b, opts...)
		res, err := g.Invoke(context.Background(), graph.Updates[St](), run...)
		if err != nil {
			t.Fatal(err)
		}
		if persist {
			// Paused after analyzer_one: qa still waits, and survives the pause.
			if !res.Interrupted() || qa != 0 {
				t.Fatalf("pause: %+v, qa ran %d", res, qa)
			}
			snap, err := g.GetState(context.Background(), graph.WithThread("d"))
			if err != nil || !slices.Equal(snap.Next, []string{"qa"}) {
				t.Fatalf("next %v %v", snap.Next, err)
			}
			if res, err = g.Invoke(context.Background(), graph.Updates[St](), run...); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"rewrite_query", "retriever_one", "retriever_two", "analyzer_one", "qa after rewrite_query,retriever_one,retriever_two,analyzer_one"}
		if !slices.Equal(res.State.Log, want) || qa != 1 {
			t.Fatalf("persist=%v: log %q, qa ran %d times", persist, res.State.Log, qa)
		}
	}
}

func TestCallerPanicsBecomeErrors(t *testing.T) {
	boom := graph.Reduce(func(a, b int) int { panic("reducer boom") })
	Bad := graph.Field("bad", func(s *St) *int { return &s.Count }, boom)
	cases := []struct {
		name  string
		build func(b *graph.StateGraph[St])
		want  string
	}{
		{"router", func(b *graph.StateGraph[St]) {
			b.AddConditionalEdges("a", func(ctx context.Context, s St) (graph.Route[St], error) { panic("router boom") })
		}, "router panicked: router boom"},
		{"send", func(b *graph.StateGraph[St]) {
			b.AddConditionalEdges("a", func(ctx context.Context, s St) (graph.Route[St], error) {
				var sends []graph.Send[St]
				return graph.Route[St]{Sends: sends[:1]}, nil
			})
		}, "router panicked"},
		{"reducer", func(b *graph.StateGraph[St]) {
			b.AddNodeFunc("w", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Updates(Bad.Set(1)), nil })
			b.AddEdge("a", "w")
		}, "reducer panicked: reducer boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := graph.New[St](Log, Count, Name, Sum)
			if c.name == "reducer" {
				b = graph.New[St](Log, Bad, Name, Sum)
			}
			b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
			c.build(b)
			_, err := mustCompile(t, b).Invoke(context.Background(), graph.Updates[St]())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to say %q", err, c.want)
			}
		})
	}
}

func TestCompiledGraphIndependentOfBuilder(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
	first := mustCompile(t, b)
	b.AddNode("b", logNode("b")).AddEdge("a", "b")
	second := mustCompile(t, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			res, err := first.Invoke(context.Background(), graph.Updates[St]())
			if err != nil || !slices.Equal(res.State.Log, []string{"a"}) {
				t.Errorf("first graph: %v %v", res.State.Log, err)
			}
		}()
		go func() {
			defer wg.Done()
			// Compiling again while the others run touches none of them.
			if _, err := b.Compile(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	res, err := second.Invoke(context.Background(), graph.Updates[St]())
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b"}) {
		t.Fatalf("second graph: %v %v", res.State.Log, err)
	}
	res, err = first.Invoke(context.Background(), graph.Updates[St]())
	if err != nil || !slices.Equal(res.State.Log, []string{"a"}) {
		t.Fatalf("first graph after the builder changed: %v %v", res.State.Log, err)
	}
}

// ctxSaver records whether each call's context carries the run's values.
type ctxSaver struct {
	*checkpoint.Memory
	mu   sync.Mutex
	seen []any
}

type tenantKey struct{}

func (s *ctxSaver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Config, error) {
	s.mu.Lock()
	s.seen = append(s.seen, ctx.Value(tenantKey{}))
	s.mu.Unlock()
	return s.Memory.Put(ctx, cfg, cp, md)
}

func TestSaverGetsRunContext(t *testing.T) {
	for _, d := range durabilities {
		saver := &ctxSaver{Memory: checkpoint.NewMemory()}
		b := newG()
		b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
		g := mustCompile(t, b, graph.WithSaver(saver))
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), tenantKey{}, "acme"))
		if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("c"), graph.WithDurability(d)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if len(saver.seen) == 0 || slices.ContainsFunc(saver.seen, func(v any) bool { return v != "acme" }) {
			t.Fatalf("%v: saver saw context values %v", d, saver.seen)
		}
	}
}

// failSaver fails every Put.
type failSaver struct{ *checkpoint.Memory }

func (failSaver) Put(context.Context, checkpoint.Config, *checkpoint.Checkpoint, checkpoint.Metadata) (checkpoint.Config, error) {
	return checkpoint.Config{}, errors.New("disk full")
}

func TestErrorNamesThreadOnce(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
	g := mustCompile(t, b, graph.WithSaver(failSaver{checkpoint.NewMemory()}))
	// A save failing in the background (async, exit) fails the run too.
	for _, d := range durabilities {
		_, err := g.Invoke(context.Background(), graph.Updates[St](), graph.WithThread("only-once"), graph.WithDurability(d))
		if err == nil || strings.Count(err.Error(), "only-once") != 1 || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("%v: err %v: want the thread named once and the cause", d, err)
		}
	}
}

// AnyState has an interface-typed key.
type AnyState struct{ Payload any }

type point struct{ X, Y int }

var Payload = graph.Field("payload", func(s *AnyState) *any { return &s.Payload }, graph.LastValue[any]())

func TestAnyKeyComesBackAsJSON(t *testing.T) {
	// The rule for a key of interface type: the codec stores the value as
	// JSON, so after a reload it holds JSON's types, not the Go type that
	// was written. Declare the key with the concrete type to keep it.
	saver := checkpoint.NewMemory()
	build := func() *graph.Graph[AnyState] {
		b := graph.New[AnyState](Payload)
		b.AddNodeFunc("a", func(ctx context.Context, s AnyState) (graph.Update[AnyState], error) {
			return graph.Updates(Payload.Set(point{1, 2})), nil
		})
		b.AddEdge(graph.START, "a")
		g, err := b.Compile(graph.WithSaver(saver))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	res, err := build().Invoke(context.Background(), graph.Updates[AnyState](), graph.WithThread("p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.State.Payload.(point); !ok {
		t.Fatalf("in the run the payload is %T", res.State.Payload)
	}
	snap, err := build().GetState(context.Background(), graph.WithThread("p"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := snap.Values.Payload.(map[string]any)
	if !ok || m["X"] != float64(1) || m["Y"] != float64(2) {
		t.Fatalf("after a reload the payload is %T %v, want map[string]any{X:1 Y:2}", snap.Values.Payload, snap.Values.Payload)
	}
}

func TestMessagesModeYieldsStateMessages(t *testing.T) {
	type Chat struct{ Msgs []string }
	Msgs := graph.SliceField("msgs", func(s *Chat) *[]string { return &s.Msgs }, graph.Append[string]()).AsMessages()
	b := graph.New[Chat](Msgs)
	b.AddNodeFunc("model", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		graph.EmitMessage(ctx, "tok")
		return graph.Updates(Msgs.Add("streamed answer")), nil
	})
	b.AddNodeFunc("tool", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Msgs.Add("tool result 1", "tool result 2")), nil
	})
	b.AddEdge(graph.START, "model").AddEdge("model", "tool")
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range g.Stream(context.Background(), graph.Updates(Msgs.Add("user says hi")), graph.WithStreamModes(graph.ModeMessages)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Node+":"+ev.Data.(string))
	}
	// The model's chunks stand for its message; the tool's messages come
	// from the state; the input is not a node's message.
	want := []string{"model:tok", "tool:tool result 1", "tool:tool result 2"}
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
}

func TestDecodeUpdateAndEncodeState(t *testing.T) {
	b := newG()
	b.AddNode("a", logNode("a")).AddEdge(graph.START, "a")
	g := mustCompile(t, b)
	u, err := g.DecodeUpdate(map[string]json.RawMessage{"log": json.RawMessage(`["x","y"]`), "count": json.RawMessage(`3`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := g.EncodeState(res.State)
	if err != nil {
		t.Fatal(err)
	}
	if string(enc["log"]) != `["x","y","a"]` || string(enc["count"]) != `3` || string(enc["name"]) != `""` {
		t.Fatalf("encoded %s", enc)
	}
	if _, err := g.DecodeUpdate(map[string]json.RawMessage{"nope": json.RawMessage(`1`)}); err == nil || !strings.Contains(err.Error(), `no key "nope"`) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := g.DecodeUpdate(map[string]json.RawMessage{"count": json.RawMessage(`"three"`)}); err == nil || !strings.Contains(err.Error(), `key "count"`) {
		t.Fatalf("bad value: %v", err)
	}
	keys := g.Keys()
	if len(keys) != 4 || keys[0].Name != "log" || keys[0].LastValue || !keys[1].LastValue || keys[1].Type.Kind() != reflect.Int {
		t.Fatalf("keys %+v", keys)
	}
	d := g.Drawing()
	if !slices.Equal(d.Nodes, []string{graph.START, "a", graph.END}) || len(d.Edges) != 1 || d.Edges[0] != (graph.Edge{From: graph.START, To: "a"}) {
		t.Fatalf("drawing %+v", d)
	}
}
