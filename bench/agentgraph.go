package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// agentgraph is this project's column: every workload, with no saver, the
// in-memory saver and the bbolt saver. Runs with a saver use durability
// "exit" (one checkpoint per run), as LangGraph's bench does; the growth
// check saves every step ("sync").
type agentgraph struct{}

func init() { register(agentgraph{}) }

func (agentgraph) Name() string { return "agentgraph" }

func (agentgraph) Prepare(ctx context.Context, c Cell) (Runner, error) {
	var opts []graph.CompileOption
	switch c.Variant {
	case MemorySaver:
		opts = append(opts, graph.WithSaver(checkpoint.NewMemory()))
	case BoltSaver:
		s, err := bolt.Open(filepath.Join(c.Dir, "agentgraph.db"), bolt.WithoutSync())
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { s.Close() })
		opts = append(opts, graph.WithSaver(s))
	}
	var thread atomic.Int64
	runOpts := func() []graph.RunOption {
		if c.Variant == NoSaver {
			return nil
		}
		return []graph.RunOption{graph.WithThread(fmt.Sprint(thread.Add(1))), graph.WithDurability(graph.DurabilityExit), graph.WithRecursionLimit(1 << 30)}
	}
	switch c.Kind {
	case Sequential:
		return agSequential(c.N, opts, runOpts)
	case Fanout:
		return agFanout(c.N, opts, runOpts)
	case React:
		g, err := agReact(c.N, opts, nil)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, error) {
			res, err := g.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("hi?"))), runOpts()...)
			return len(res.State.Messages), err
		}, nil
	case WideState:
		return agWide(c.Workload, opts, runOpts)
	}
	return nil, notApplicable("unknown workload kind " + string(c.Kind))
}

// Growth runs the ReAct loop with the in-memory saver, every step saved.
func (agentgraph) Growth(ctx context.Context, turns int, tick func()) error {
	g, err := agReact(turns, []graph.CompileOption{graph.WithSaver(checkpoint.NewMemory())}, tick)
	if err != nil {
		return err
	}
	res, err := g.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("hi?"))), graph.WithThread(uuid4()),
		graph.WithDurability(graph.DurabilitySync), graph.WithRecursionLimit(1<<30))
	if err != nil {
		return err
	}
	if n := len(res.State.Messages); n != 2*turns+2 {
		return fmt.Errorf("agentgraph: thread has %d messages, want %d", n, 2*turns+2)
	}
	return nil
}

func agSequential(n int, opts []graph.CompileOption, runOpts func() []graph.RunOption) (Runner, error) {
	var calls atomic.Int64
	b := graph.New[prebuilt.MessagesState](prebuilt.Messages)
	prev := graph.START
	for i := range n {
		name := fmt.Sprintf("node_%d", i)
		b.AddNodeFunc(name, func(context.Context, prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			calls.Add(1)
			return graph.Update[prebuilt.MessagesState]{}, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g, err := b.Compile(opts...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (int, error) {
		calls.Store(0)
		_, err := g.Invoke(ctx, graph.Updates[prebuilt.MessagesState](), runOpts()...)
		return int(calls.Load()), err
	}, nil
}

// --- fanout_to_subgraph

type jokeParent struct {
	Subjects [][]string `json:"subjects"`
	Subject  []string   `json:"subject"`
	Jokes    []string   `json:"jokes"`
}

type jokeChild struct {
	Subject string   `json:"subject"`
	Jokes   []string `json:"jokes"`
}

var (
	pSubjects = graph.Field("subjects", func(s *jokeParent) *[][]string { return &s.Subjects }, graph.LastValue[[][]string]())
	pSubject  = graph.Field("subject", func(s *jokeParent) *[]string { return &s.Subject }, graph.LastValue[[]string]())
	pJokes    = graph.SliceField("jokes", func(s *jokeParent) *[]string { return &s.Jokes }, graph.Append[string]())
	cSubject  = graph.Field("subject", func(s *jokeChild) *string { return &s.Subject }, graph.LastValue[string]())
	cJokes    = graph.Field("jokes", func(s *jokeChild) *[]string { return &s.Jokes }, graph.LastValue[[]string]())
)

func agFanout(n int, opts []graph.CompileOption, runOpts func() []graph.RunOption) (Runner, error) {
	cb := graph.New[jokeChild](cSubject, cJokes)
	cb.AddNodeFunc("edit", func(_ context.Context, s jokeChild) (graph.Update[jokeChild], error) {
		return graph.Updates(cSubject.Set(jokeEdit(s.Subject))), nil
	})
	cb.AddNodeFunc("generate", func(_ context.Context, s jokeChild) (graph.Update[jokeChild], error) {
		return graph.Updates(cJokes.Set([]string{jokeGenerate(s.Subject)})), nil
	})
	cb.AddNodeFunc("bump", func(_ context.Context, s jokeChild) (graph.Update[jokeChild], error) {
		return graph.Updates(cJokes.Set([]string{jokeBump(s.Jokes[0])})), nil
	})
	cb.AddEdge(graph.START, "edit").AddEdge("edit", "generate").AddEdge("generate", "bump").AddEdge("generate", graph.END)
	cb.AddConditionalEdges("bump", graph.RouteFunc(func(s jokeChild) string {
		if jokeDone(s.Jokes[0]) {
			return graph.END
		}
		return "bump"
	}), graph.BranchConfig{Paths: []string{"bump", graph.END}})
	child, err := cb.Compile()
	if err != nil {
		return nil, err
	}
	pb := graph.New[jokeParent](pSubjects, pSubject, pJokes)
	pb.AddNode("generate_joke", graph.Subgraph(child,
		func(_ context.Context, p jokeParent) (jokeChild, error) {
			return jokeChild{Subject: subjectText(p.Subject)}, nil
		},
		func(_ context.Context, c jokeChild) (graph.Update[jokeParent], error) {
			return graph.Updates(pJokes.Add(c.Jokes...)), nil
		}))
	pb.AddConditionalEdges(graph.START, func(_ context.Context, s jokeParent) (graph.Route[jokeParent], error) {
		r := graph.Route[jokeParent]{Sends: make([]graph.Send[jokeParent], len(s.Subjects))}
		for i, sub := range s.Subjects {
			r.Sends[i] = graph.SendTo("generate_joke", jokeParent{Subject: sub})
		}
		return r, nil
	}, graph.BranchConfig{Paths: []string{"generate_joke"}})
	pb.AddEdge("generate_joke", graph.END)
	g, err := pb.Compile(opts...)
	if err != nil {
		return nil, err
	}
	subs := subjects(n)
	return func(ctx context.Context) (int, error) {
		res, err := g.Invoke(ctx, graph.Updates(pSubjects.Set(subs)), runOpts()...)
		done := 0
		for _, j := range res.State.Jokes {
			if jokeDone(j) {
				done++
			}
		}
		return done, err
	}, nil
}

// --- react_agent: the prebuilt ReAct agent with a scripted model cycling
// the script's tool calls, and one tool.

type reactArgs struct {
	Query string `json:"query"`
}

func agReact(turns int, opts []graph.CompileOption, tick func()) (*graph.Graph[prebuilt.MessagesState], error) {
	s := newReactScript(turns)
	var responses []model.Response
	for i, q := range s.Queries {
		args, _ := json.Marshal(reactArgs{Query: q})
		msg := model.Assistant("", model.ToolCall{ID: s.CallIDs[i], Name: s.ToolName, Arguments: args})
		msg.ID = s.MsgIDs[i]
		responses = append(responses, model.Response{Message: msg})
	}
	final := model.Assistant(s.Final)
	final.ID = s.MsgIDs[len(s.MsgIDs)-1]
	responses = append(responses, model.Response{Message: final})
	var i atomic.Int64
	m := scripted.Func(func(ctx context.Context, _ model.Request) (model.Response, error) {
		if tick != nil {
			tick()
		}
		k := int(i.Add(1)-1) % len(responses)
		return responses[k], nil
	})
	tool, err := prebuilt.NewTool(s.ToolName, "", func(_ context.Context, a reactArgs) (string, error) {
		return toolResult(a.Query), nil
	})
	if err != nil {
		return nil, err
	}
	return prebuilt.NewReactAgent(m, []prebuilt.Tool{tool}, prebuilt.WithCompileOptions(opts...))
}

// --- wide_state: 15 keys, each with its reducer; the join of three and
// four is a waiting edge.

type wideState struct{ V [15]any }

func agWide(w Workload, opts []graph.CompileOption, runOpts func() []graph.RunOption) (Runner, error) {
	keys := make([]graph.AnyKey[wideState], len(wideKeys))
	typed := map[string]*graph.Key[wideState, any]{}
	index := map[string]int{}
	for i, name := range wideKeys {
		k := graph.Field(name, func(s *wideState) *any { return &s.V[i] }, graph.Reduce(func(old, upd any) any { return wideReduce(name, old, upd) }))
		keys[i], typed[name], index[name] = k, k, i
	}
	b := graph.New[wideState](keys...)
	for _, step := range wideSteps {
		read := index[step.Read]
		writes := make([]*graph.Key[wideState, any], len(step.Write))
		for i, k := range step.Write {
			writes[i] = typed[k]
		}
		b.AddNodeFunc(step.Name, func(_ context.Context, s wideState) (graph.Update[wideState], error) {
			out := wideWritesOf(s.V[read], step, w.N)
			ws := make([]graph.Write[wideState], len(writes))
			for i, k := range writes {
				ws[i] = k.Set(out[step.Write[i]])
			}
			return graph.Updates(ws...), nil
		})
	}
	b.AddEdge(graph.START, "one").AddEdge("one", "two").AddEdge("two", "three").AddEdge("two", "four")
	b.AddWaitingEdge([]string{"three", "four"}, "five")
	b.AddEdge("five", "six")
	b.AddConditionalEdges("six", graph.RouteFunc(func(s wideState) string {
		if m, _ := s.V[index["messages"]].([]any); len(m) > w.N {
			return graph.END
		}
		return "one"
	}), graph.BranchConfig{Paths: []string{"one", graph.END}})
	g, err := b.Compile(opts...)
	if err != nil {
		return nil, err
	}
	msg := wideMessage(w.Outer, w.Inner)
	return func(ctx context.Context) (int, error) {
		var ws []graph.Write[wideState]
		d := wideDefaults()
		d["messages"] = []any{msg}
		for _, k := range wideKeys {
			if v, ok := d[k]; ok {
				ws = append(ws, typed[k].Overwrite(v))
			}
		}
		res, err := g.Invoke(ctx, graph.Updates(ws...), runOpts()...)
		m, _ := res.State.V[index["messages"]].([]any)
		return len(m), err
	}, nil
}
