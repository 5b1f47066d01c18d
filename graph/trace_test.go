package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// recorder is a Tracer that keeps the path of spans in the context, as a
// span-based tracer does, and records each span with its parent's path.
type recorder struct {
	mu    sync.Mutex
	spans []string // "parent > name: outcome", in end order
}

type pathKey struct{}

func (r *recorder) span(ctx context.Context, name string) (context.Context, func(graph.Outcome)) {
	parent, _ := ctx.Value(pathKey{}).(string)
	path := name
	if parent != "" {
		path = parent + " > " + name
	}
	return context.WithValue(ctx, pathKey{}, path), func(o graph.Outcome) {
		out := "ok"
		switch {
		case o.Err != nil:
			out = "error"
		case len(o.Interrupts) > 0:
			out = fmt.Sprintf("interrupted(%v)", o.Interrupts[0].Value)
		}
		r.mu.Lock()
		r.spans = append(r.spans, path+": "+out)
		r.mu.Unlock()
	}
}

func (r *recorder) TraceRun(ctx context.Context, run graph.TracedRun) (context.Context, func(graph.Outcome)) {
	name := "run"
	if run.Namespace != "" {
		name = "subrun"
	}
	return r.span(ctx, name)
}

func (r *recorder) TraceStep(ctx context.Context, s graph.TracedStep) (context.Context, func(graph.Outcome)) {
	return r.span(ctx, fmt.Sprintf("step%d", s.Step))
}

func (r *recorder) TraceTask(ctx context.Context, t graph.TracedTask) (context.Context, func(graph.Outcome)) {
	return r.span(ctx, t.Node)
}

func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.spans)
	slices.Sort(out)
	return out
}

func TestTracerNestsRunStepsAndTasks(t *testing.T) {
	var seen sync.Map // node -> the span path its context carried
	node := func(name string) graph.NodeFunc[St] {
		return func(ctx context.Context, s St) (graph.Update[St], error) {
			seen.Store(name, ctx.Value(pathKey{}))
			return graph.Updates(Log.Add(name)), nil
		}
	}
	sb := newG().
		AddNodeFunc("a", node("a")).
		AddNodeFunc("b", node("b")).
		AddNodeFunc("c", node("c")).
		AddEdge(graph.START, "a").AddEdge(graph.START, "b").
		AddEdge("a", "c").AddEdge("b", "c")
	g := mustCompile(t, sb)
	rec := &recorder{}
	if _, err := g.Invoke(graph.ContextWithTracer(context.Background(), rec), graph.Updates[St]()); err != nil {
		t.Fatal(err)
	}
	want := []string{"run > step0 > a: ok", "run > step0 > b: ok", "run > step0: ok", "run > step1 > c: ok", "run > step1: ok", "run: ok"}
	if got := rec.sorted(); !slices.Equal(got, want) {
		t.Fatalf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p, _ := seen.Load("b"); p != "run > step0 > b" {
		t.Errorf("node b ran under %v, want its task's span", p)
	}
	// Without a tracer nothing is recorded and the context carries nothing.
	rec.spans = nil
	if _, err := g.Invoke(context.Background(), graph.Updates[St]()); err != nil || len(rec.spans) != 0 {
		t.Fatal(err, rec.spans)
	}
	if p, _ := seen.Load("c"); p != nil {
		t.Errorf("untraced node saw %v", p)
	}
}

func TestTracerRecordsErrorsInterruptsAndSubgraphs(t *testing.T) {
	boom := errors.New("boom")
	failing := mustCompile(t, newG().
		AddNodeFunc("bad", func(ctx context.Context, s St) (graph.Update[St], error) { return graph.Update[St]{}, boom }).
		AddEdge(graph.START, "bad"))
	rec := &recorder{}
	ctx := graph.ContextWithTracer(context.Background(), rec)
	if _, err := failing.Invoke(ctx, graph.Updates[St]()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if got, want := rec.sorted(), []string{"run > step0 > bad: error", "run > step0: error", "run: error"}; !slices.Equal(got, want) {
		t.Errorf("failed run: %q, want %q", got, want)
	}

	sub := mustCompile(t, newG().
		AddNodeFunc("ask", func(ctx context.Context, s St) (graph.Update[St], error) {
			v, err := graph.Interrupt(ctx, "ok?")
			if err != nil {
				return graph.Update[St]{}, err
			}
			return graph.Updates(Log.Add(fmt.Sprint(v))), nil
		}).
		AddEdge(graph.START, "ask"))
	parent := mustCompile(t, newG().
		AddNode("inner", graph.Subgraph(sub, func(_ context.Context, s St) (St, error) { return s, nil },
			func(_ context.Context, s St) (graph.Update[St], error) { return graph.Updates(Log.Add(s.Log...)), nil })).
		AddEdge(graph.START, "inner"), graph.WithSaver(checkpoint.NewMemory()))
	rec.spans = nil
	res, err := parent.Invoke(ctx, graph.Updates[St](), graph.WithThread("t"))
	if err != nil || !res.Interrupted() {
		t.Fatal(err, res.Interrupts)
	}
	want := []string{
		"run > step0 > inner > subrun > step0 > ask: interrupted(ok?)",
		"run > step0 > inner > subrun > step0: interrupted(ok?)",
		"run > step0 > inner > subrun: interrupted(ok?)",
		"run > step0 > inner: interrupted(ok?)",
		"run > step0: interrupted(ok?)",
		"run: interrupted(ok?)",
	}
	if got := rec.sorted(); !slices.Equal(got, want) {
		t.Errorf("paused run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rec.spans = nil
	if _, err := parent.Invoke(ctx, graph.Updates[St](), graph.WithThread("t"), graph.WithResume("yes")); err != nil {
		t.Fatal(err)
	}
	if got := rec.sorted(); len(got) != 6 || !strings.HasSuffix(got[0], " > inner > subrun > step0 > ask: ok") {
		t.Errorf("resumed run: %q", got)
	}
}
