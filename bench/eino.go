package main

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	toolutils "github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// einoFramework is github.com/cloudwego/eino: typed graphs whose values flow
// along edges (pregel mode, the default, which allows loops), a local state
// that nodes reach through ProcessState, and the prebuilt ReAct agent.
// It writes checkpoints only when a run is interrupted, so it has no cell
// with a per-run saver and no growth check.
type einoFramework struct{}

func init() { register(einoFramework{}) }

func (einoFramework) Name() string { return "eino" }

func (einoFramework) Prepare(ctx context.Context, c Cell) (Runner, error) {
	w := c.Workload
	if c.Variant != NoSaver {
		return nil, notApplicable("checkpoints are written only at interrupts")
	}
	switch w.Kind {
	case Sequential:
		return einoSequential(ctx, w)
	case Fanout:
		return nil, notApplicable("no Send: cannot start one subgraph run per subject")
	case React:
		return einoReact(ctx, w)
	case WideState:
		return einoWide(ctx, w)
	}
	return nil, notApplicable("unknown workload kind " + string(w.Kind))
}

// sequential_N: a chain of N pass-through lambdas over the message list.
func einoSequential(ctx context.Context, w Workload) (Runner, error) {
	calls := 0
	g := compose.NewGraph[[]*schema.Message, []*schema.Message]()
	prev := compose.START
	for i := range w.N {
		name := fmt.Sprintf("node_%d", i)
		if err := g.AddLambdaNode(name, compose.InvokableLambda(func(_ context.Context, in []*schema.Message) ([]*schema.Message, error) {
			calls++
			return in, nil
		})); err != nil {
			return nil, fmt.Errorf("eino: %w", err)
		}
		if err := g.AddEdge(prev, name); err != nil {
			return nil, fmt.Errorf("eino: %w", err)
		}
		prev = name
	}
	if err := g.AddEdge(prev, compose.END); err != nil {
		return nil, fmt.Errorf("eino: %w", err)
	}
	r, err := g.Compile(ctx, compose.WithMaxRunSteps(w.N+10))
	if err != nil {
		return nil, fmt.Errorf("eino: compile %s: %w", w.Name, err)
	}
	return func(ctx context.Context) (int, error) {
		calls = 0
		if _, err := r.Invoke(ctx, []*schema.Message{}); err != nil {
			return 0, err
		}
		return calls, nil
	}, nil
}

// --- react_agent: eino's prebuilt ReAct agent with a scripted model.

type einoModel struct {
	responses []*schema.Message
	i         int
	lastInput int
	tick      func()
}

func newEinoModel(s *reactScript, tick func()) *einoModel {
	m := &einoModel{tick: tick}
	for i, q := range s.Queries {
		args := fmt.Sprintf(`{"query":%q}`, q)
		m.responses = append(m.responses, &schema.Message{Role: schema.Assistant,
			ToolCalls: []schema.ToolCall{{ID: s.CallIDs[i], Type: "function", Function: schema.FunctionCall{Name: s.ToolName, Arguments: args}}}})
	}
	m.responses = append(m.responses, schema.AssistantMessage(s.Final, nil))
	return m
}

func (m *einoModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if m.tick != nil {
		m.tick()
	}
	m.lastInput = len(in)
	r := *m.responses[m.i] // a copy, as LangGraph's fake model returns
	m.i = (m.i + 1) % len(m.responses)
	return &r, nil
}

func (m *einoModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

type einoQuery struct {
	Query string `json:"query"`
}

func einoReact(ctx context.Context, w Workload) (Runner, error) {
	s := newReactScript(w.N)
	m := newEinoModel(s, nil)
	t, err := toolutils.InferTool(s.ToolName, "", func(_ context.Context, q einoQuery) (string, error) {
		return toolResult(q.Query), nil
	})
	if err != nil {
		return nil, fmt.Errorf("eino: tool: %w", err)
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{t}},
		MaxStep:          2*w.N + 10, // every model and tools node run is a step
	})
	if err != nil {
		return nil, fmt.Errorf("eino: react agent: %w", err)
	}
	return func(ctx context.Context) (int, error) {
		out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("hi?")})
		if err != nil {
			return 0, err
		}
		if out.Content != s.Final {
			return 0, fmt.Errorf("eino: final answer %.20q…, want %.20q…", out.Content, s.Final)
		}
		return m.lastInput + 1, nil
	}, nil
}

// --- wide_state: the 15 keys live in the graph's local state; each node
// reads one key and folds its writes in with the key's reducer under the
// state lock. Pregel mode runs three and four in one step and five once in
// the next, which is the join's behaviour. No node reads a key its sibling
// writes, so folding writes at once equals applying them after the step.

type einoWideState struct{ vals map[string]any }

func einoWide(ctx context.Context, w Workload) (Runner, error) {
	msg := wideMessage(w.Outer, w.Inner)
	g := compose.NewGraph[map[string]any, map[string]any](compose.WithGenLocalState(func(context.Context) *einoWideState {
		s := wideDefaults()
		s["messages"] = []any{msg}
		return &einoWideState{vals: s}
	}))
	for _, step := range wideSteps {
		node := compose.InvokableLambda(func(ctx context.Context, _ map[string]any) (map[string]any, error) {
			err := compose.ProcessState(ctx, func(_ context.Context, s *einoWideState) error {
				for k, v := range wideWrites(s.vals, step, w.N) {
					s.vals[k] = wideReduce(k, s.vals[k], v)
				}
				return nil
			})
			return map[string]any{}, err
		})
		if err := g.AddLambdaNode(step.Name, node); err != nil {
			return nil, fmt.Errorf("eino: %w", err)
		}
	}
	final := 0
	edges := [][2]string{{compose.START, "one"}, {"one", "two"}, {"two", "three"}, {"two", "four"}, {"three", "five"}, {"four", "five"}, {"five", "six"}}
	for _, e := range edges {
		if err := g.AddEdge(e[0], e[1]); err != nil {
			return nil, fmt.Errorf("eino: %w", err)
		}
	}
	loop := compose.NewGraphBranch(func(ctx context.Context, _ map[string]any) (string, error) {
		next := "one"
		err := compose.ProcessState(ctx, func(_ context.Context, s *einoWideState) error {
			if wideDone(s.vals, w.N) {
				m, _ := s.vals["messages"].([]any)
				final, next = len(m), compose.END
			}
			return nil
		})
		return next, err
	}, map[string]bool{"one": true, compose.END: true})
	if err := g.AddBranch("six", loop); err != nil {
		return nil, fmt.Errorf("eino: %w", err)
	}
	r, err := g.Compile(ctx, compose.WithMaxRunSteps(1_000_000))
	if err != nil {
		return nil, fmt.Errorf("eino: compile %s: %w", w.Name, err)
	}
	return func(ctx context.Context) (int, error) {
		final = 0
		if _, err := r.Invoke(ctx, map[string]any{}); err != nil {
			return 0, err
		}
		return final, nil
	}, nil
}
