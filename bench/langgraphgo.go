package main

import (
	"context"
	"encoding/json"
	"fmt"

	lgraph "github.com/smallnest/langgraphgo/graph"
	"github.com/smallnest/langgraphgo/prebuilt"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
)

// langgraphgoFramework is github.com/smallnest/langgraphgo: a map state with
// per-key reducers (MapSchema), static and conditional edges, and a
// checkpointing runnable that saves the state after every step.
//
// Its memory variant saves at every step (langgraphgo has no "save on exit"
// mode) into a fresh in-memory store per run: the store's List scans every
// checkpoint it holds, so a store shared across runs would make each run
// slower than the last.
type langgraphgoFramework struct{}

func init() { register(langgraphgoFramework{}) }

func (langgraphgoFramework) Name() string { return "langgraphgo" }

type lgState = map[string]any

func (langgraphgoFramework) Prepare(_ context.Context, c Cell) (Runner, error) {
	w, v := c.Workload, c.Variant
	if v == BoltSaver {
		return nil, notApplicable("no bbolt saver")
	}
	var (
		g     = lgraph.NewCheckpointableStateGraph[lgState]()
		input func() lgState
		check func(lgState) int
	)
	switch w.Kind {
	case Sequential:
		calls := 0
		schema := lgraph.NewMapSchema()
		schema.RegisterReducer("messages", lgraph.AppendReducer)
		g.SetSchema(schema)
		prev := ""
		for i := range w.N {
			name := fmt.Sprintf("node_%d", i)
			g.AddNode(name, "", func(context.Context, lgState) (lgState, error) {
				calls++
				return nil, nil
			})
			if prev == "" {
				g.SetEntryPoint(name)
			} else {
				g.AddEdge(prev, name)
			}
			prev = name
		}
		g.AddEdge(prev, lgraph.END)
		input = func() lgState { calls = 0; return lgState{"messages": []llms.MessageContent{}} }
		check = func(lgState) int { return calls }
	case Fanout:
		return nil, notApplicable("no Send: cannot start one subgraph run per subject")
	case React:
		m := newLGModel(newReactScript(w.N), nil)
		buildLGReact(g.ListenableStateGraph, m)
		input = lgReactInput
		check = func(lgState) int { return m.lastInput + 1 }
	case WideState:
		buildLGWide(g.ListenableStateGraph, w.N)
		msg := wideMessage(w.Outer, w.Inner)
		input = func() lgState { return lgWideInput(msg) }
		check = func(s lgState) int { m, _ := s["messages"].([]any); return len(m) }
	default:
		return nil, notApplicable("unknown workload kind " + string(w.Kind))
	}

	if v == NoSaver {
		r, err := g.StateGraph.Compile()
		if err != nil {
			return nil, fmt.Errorf("langgraphgo: compile %s: %w", w.Name, err)
		}
		return func(ctx context.Context) (int, error) {
			out, err := r.Invoke(ctx, input())
			if err != nil {
				return 0, err
			}
			return check(out), nil
		}, nil
	}
	lr, err := g.CompileListenable()
	if err != nil {
		return nil, fmt.Errorf("langgraphgo: compile %s: %w", w.Name, err)
	}
	return func(ctx context.Context) (int, error) {
		cr := lgraph.NewCheckpointableRunnable(lr, lgraph.CheckpointConfig{Store: lgraph.NewMemoryCheckpointStore(), AutoSave: true})
		out, err := cr.InvokeWithConfig(ctx, input(), lgraph.WithThreadID(uuid4()))
		if err != nil {
			return 0, err
		}
		return check(out), nil
	}, nil
}

// Growth runs the react loop with a checkpoint saved after every step.
func (langgraphgoFramework) Growth(ctx context.Context, turns int, tick func()) error {
	g := lgraph.NewCheckpointableStateGraphWithConfig[lgState](lgraph.CheckpointConfig{Store: lgraph.NewMemoryCheckpointStore(), AutoSave: true})
	m := newLGModel(newReactScript(turns), tick)
	buildLGReact(g.ListenableStateGraph, m)
	cr, err := g.CompileCheckpointable()
	if err != nil {
		return fmt.Errorf("langgraphgo: compile: %w", err)
	}
	if _, err := cr.InvokeWithConfig(ctx, lgReactInput(), lgraph.WithThreadID(uuid4())); err != nil {
		return err
	}
	if m.lastInput+1 != 2*turns+2 {
		return fmt.Errorf("langgraphgo: thread has %d messages, want %d", m.lastInput+1, 2*turns+2)
	}
	return nil
}

// --- react_agent: the graph langgraphgo's prebuilt ReAct agent builds
// (an agent node calling the model with the tools, a tools node running the
// tool calls, a conditional edge on tool calls), without its iteration cap.

// lgModel is a scripted llms.Model.
type lgModel struct {
	script    *reactScript
	responses []*llms.ContentResponse
	i         int
	lastInput int // messages the model saw on its last call
	tick      func()
}

func newLGModel(s *reactScript, tick func()) *lgModel {
	m := &lgModel{script: s, tick: tick}
	for i, q := range s.Queries {
		args, _ := json.Marshal(map[string]string{"query": q})
		m.responses = append(m.responses, &llms.ContentResponse{Choices: []*llms.ContentChoice{{
			ToolCalls: []llms.ToolCall{{ID: s.CallIDs[i], Type: "function", FunctionCall: &llms.FunctionCall{Name: s.ToolName, Arguments: string(args)}}},
		}}})
	}
	m.responses = append(m.responses, &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: s.Final}}})
	return m
}

func (m *lgModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // langgraphgo does not check the context between steps
	}
	if m.tick != nil {
		m.tick()
	}
	m.lastInput = len(msgs)
	r := m.responses[m.i]
	m.i = (m.i + 1) % len(m.responses)
	return r, nil
}

func (m *lgModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", fmt.Errorf("scripted model: Call is not scripted, use GenerateContent")
}

// lgTool is the one tool (a langchaingo tools.Tool).
type lgTool struct{ name string }

func (t lgTool) Name() string        { return t.name }
func (t lgTool) Description() string { return "" }
func (t lgTool) Call(_ context.Context, input string) (string, error) {
	var args struct{ Query string }
	if err := json.Unmarshal([]byte(input), &args); err != nil {
		return "", fmt.Errorf("tool arguments: %w", err)
	}
	return toolResult(args.Query), nil
}

func lgReactInput() lgState {
	return lgState{"messages": []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi?")}}
}

func buildLGReact(g *lgraph.ListenableStateGraph[lgState], m *lgModel) {
	schema := lgraph.NewMapSchema()
	schema.RegisterReducer("messages", lgraph.AppendReducer)
	g.SetSchema(schema)
	tool := lgTool{name: m.script.ToolName}
	exec := prebuilt.NewToolExecutor([]tools.Tool{tool})
	g.AddNode("agent", "", func(ctx context.Context, s lgState) (lgState, error) {
		msgs, _ := s["messages"].([]llms.MessageContent)
		defs := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: tool.Name(), Description: tool.Description(),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}}}}
		resp, err := m.GenerateContent(ctx, msgs, llms.WithTools(defs))
		if err != nil {
			return nil, err
		}
		c := resp.Choices[0]
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if c.Content != "" {
			ai.Parts = append(ai.Parts, llms.TextPart(c.Content))
		}
		for _, tc := range c.ToolCalls {
			ai.Parts = append(ai.Parts, tc)
		}
		return lgState{"messages": []llms.MessageContent{ai}}, nil
	})
	g.AddNode("tools", "", func(ctx context.Context, s lgState) (lgState, error) {
		msgs, _ := s["messages"].([]llms.MessageContent)
		last := msgs[len(msgs)-1]
		var out []llms.MessageContent
		for _, p := range last.Parts {
			tc, ok := p.(llms.ToolCall)
			if !ok {
				continue
			}
			res, err := exec.Execute(ctx, prebuilt.ToolInvocation{Tool: tc.FunctionCall.Name, ToolInput: tc.FunctionCall.Arguments})
			if err != nil {
				res = "Error: " + err.Error()
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: res}}})
		}
		return lgState{"messages": out}, nil
	})
	g.SetEntryPoint("agent")
	g.AddConditionalEdge("agent", func(_ context.Context, s lgState) string {
		msgs, _ := s["messages"].([]llms.MessageContent)
		for _, p := range msgs[len(msgs)-1].Parts {
			if _, ok := p.(llms.ToolCall); ok {
				return "tools"
			}
		}
		return lgraph.END
	})
	g.AddEdge("tools", "agent")
}

// --- wide_state: every key has a MapSchema reducer. langgraphgo has no
// waiting edge; three and four run in the same step, and the step after
// runs five once, which is the join's behaviour here.

func buildLGWide(g *lgraph.ListenableStateGraph[lgState], n int) {
	schema := lgraph.NewMapSchema()
	for _, k := range wideKeys {
		schema.RegisterReducer(k, func(old, upd any) (any, error) { return wideReduce(k, old, upd), nil })
	}
	g.SetSchema(schema)
	for _, step := range wideSteps {
		g.AddNode(step.Name, "", func(_ context.Context, s lgState) (lgState, error) {
			return wideWrites(s, step, n), nil
		})
	}
	g.SetEntryPoint("one")
	g.AddEdge("one", "two")
	g.AddEdge("two", "three")
	g.AddEdge("two", "four")
	g.AddEdge("three", "five")
	g.AddEdge("four", "five")
	g.AddEdge("five", "six")
	g.AddConditionalEdge("six", func(_ context.Context, s lgState) string {
		if wideDone(s, n) {
			return lgraph.END
		}
		return "one"
	})
}

func lgWideInput(msg map[string]any) lgState {
	s := wideDefaults()
	s["messages"] = []any{msg}
	return s
}
