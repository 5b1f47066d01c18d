package prebuilt

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

// echoPython stands where the sandbox tool goes: it reports the thread it
// was called for and the code it got.
func echoPython(t testing.TB) Tool {
	t.Helper()
	tool, err := NewTool("run_python", "Run a Python 3 program in this conversation's sandbox.",
		func(ctx context.Context, a struct {
			Code string `json:"code" jsonschema:"description=The whole program"`
		}) (string, error) {
			return "[" + graph.ThreadIDFrom(ctx) + "] " + a.Code, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestReactAgentCodeActTurns(t *testing.T) {
	ctx := context.Background()
	codeAct := scripted.CodeAct()
	var first model.Request
	var once sync.Once
	m := scripted.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		once.Do(func() { first = req })
		return codeAct.Generate(ctx, req)
	})
	agent, err := NewReactAgent(m, []Tool{echoPython(t)}, WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(thread, text string) []model.Message {
		res, err := agent.Invoke(ctx, graph.Updates(Messages.Add(model.User(text))), graph.WithThread(thread))
		if err != nil {
			t.Fatal(err)
		}
		return res.State.Messages
	}
	msgs := ask("1", "print(1)")
	if len(msgs) != 4 {
		t.Fatalf("turn 1: %d messages, want 4", len(msgs))
	}
	if got := msgs[3].Content; got != "Tool said:\n[1] print(1)" {
		t.Fatalf("turn 1 answer %q", got)
	}
	if msgs[2].Role != model.RoleTool || msgs[2].ToolCallID != msgs[1].ToolCalls[0].ID {
		t.Fatalf("tool message %+v does not answer call %+v", msgs[2], msgs[1].ToolCalls)
	}
	msgs = ask("1", "print(2)")
	if len(msgs) != 8 || msgs[7].Content != "Tool said:\n[1] print(2)" {
		t.Fatalf("turn 2 on the same thread: %d messages, last %q", len(msgs), msgs[len(msgs)-1].Content)
	}
	msgs = ask("2", "print(3)")
	if len(msgs) != 4 || msgs[3].Content != "Tool said:\n[2] print(3)" {
		t.Fatalf("thread 2: %d messages, last %q", len(msgs), msgs[len(msgs)-1].Content)
	}
	// The model saw the tool's schema, without any run config in it.
	req := first
	if len(req.Tools) != 1 || req.Tools[0].Name != "run_python" ||
		string(req.Tools[0].Parameters) != `{"properties":{"code":{"type":"string","description":"The whole program"}},"additionalProperties":false,"type":"object","required":["code"]}` {
		t.Fatalf("tools bound: %+v", req.Tools)
	}
}

func TestReactAgentSystemPromptAndToolChoice(t *testing.T) {
	m := scripted.New(scripted.Text("hello"))
	agent, err := NewReactAgent(m, []Tool{echoPython(t)}, WithSystemPrompt("Be brief."), WithToolChoice(model.ToolChoiceNone))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), graph.Updates(Messages.Add(model.User("hi"))))
	if err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	if len(req.Messages) != 2 || req.Messages[0].Role != model.RoleSystem || req.Messages[0].Content != "Be brief." || req.Messages[1].Content != "hi" {
		t.Fatalf("request messages %+v", req.Messages)
	}
	if req.ToolChoice != model.ToolChoiceNone {
		t.Fatalf("tool choice %q", req.ToolChoice)
	}
	got := res.State.Messages
	if len(got) != 2 || got[0].Role != model.RoleUser || got[1].Content != "hello" || got[1].ID == "" {
		t.Fatalf("state %+v: the system prompt must not be stored", got)
	}
}

func TestReactAgentStreamsMessages(t *testing.T) {
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "run_python", Arguments: []byte(`{"code":"print(42)"}`)}),
		scripted.Text("The answer is 42."),
	)
	agent, err := NewReactAgent(m, []Tool{echoPython(t)})
	if err != nil {
		t.Fatal(err)
	}
	var (
		text   = map[int]string{}
		calls  = map[int]*model.ToolCallAssembler{}
		nodes  = map[string]bool{}
		done   int
		update []string
		// tool messages streamed from the state
		toolMsgs int
		chunkIDs = map[string]bool{}
		written  []model.Message
	)
	for ev, err := range agent.Stream(context.Background(), graph.Updates(Messages.Add(model.User("what is 6*7?"))),
		graph.WithStreamModes(graph.ModeMessages|graph.ModeUpdates), graph.WithThread("s")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Mode {
		case graph.ModeUpdates:
			update = append(update, ev.Node)
			if ms, ok := ev.Update["messages"].([]model.Message); ok && ev.Node == AgentNode {
				written = append(written, ms...)
			}
		case graph.ModeMessages:
			if m, ok := ev.Data.(model.Message); ok {
				// Messages nodes write to the state without streaming them.
				if ev.Node != ToolsNode || m.Role != model.RoleTool {
					t.Fatalf("message %+v from %q", m, ev.Node)
				}
				toolMsgs++
				continue
			}
			nodes[ev.Node] = true
			c, ok := ev.Data.(model.Chunk)
			if !ok {
				t.Fatalf("messages event data is %T, want model.Chunk", ev.Data)
			}
			if c.MessageID == "" {
				t.Fatalf("chunk without a message id: %+v", c)
			}
			chunkIDs[c.MessageID] = true
			text[ev.Step] += c.Delta
			if calls[ev.Step] == nil {
				calls[ev.Step] = &model.ToolCallAssembler{}
			}
			for _, d := range c.ToolCalls {
				calls[ev.Step].Add(d)
			}
			if c.Done != nil {
				done++
			}
		}
	}
	if len(nodes) != 1 || !nodes[AgentNode] {
		t.Fatalf("message chunks came from %v, want only %q", nodes, AgentNode)
	}
	if toolMsgs != 1 {
		t.Fatalf("%d tool messages streamed, want 1", toolMsgs)
	}
	// The chunks name the messages the model node wrote.
	stored := 0
	for _, m := range written {
		if chunkIDs[m.ID] {
			stored++
		}
	}
	if len(chunkIDs) != 2 || stored != 2 {
		t.Fatalf("chunk message ids %v, %d of them in the state", chunkIDs, stored)
	}
	if done != 2 || len(text) != 2 {
		t.Fatalf("%d done chunks over steps %v, want 2 model calls", done, text)
	}
	var steps []int
	for s := range text {
		steps = append(steps, s)
	}
	first, second := min(steps[0], steps[1]), max(steps[0], steps[1])
	if got := calls[first].Calls(); len(got) != 1 || got[0].ID != "c1" || string(got[0].Arguments) != `{"code":"print(42)"}` {
		t.Fatalf("streamed tool call at step %d: %+v", first, got)
	}
	if text[second] != "The answer is 42." || second != first+2 {
		t.Fatalf("streamed text at step %d: %q (first call at step %d)", second, text[second], first)
	}
	if strings.Join(update, ",") != "agent,tools,agent" {
		t.Fatalf("updates from %v", update)
	}
}

func TestReactAgentModelFailure(t *testing.T) {
	boom := errors.New("rate limited")
	agent, err := NewReactAgent(scripted.New(scripted.Fail(boom)), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Invoke(context.Background(), graph.Updates(Messages.Add(model.User("hi"))))
	var ne *graph.NodeError
	if !errors.Is(err, boom) || !errors.As(err, &ne) || ne.Node != AgentNode {
		t.Fatalf("err = %v", err)
	}
	if _, err := NewReactAgent(nil, nil); err == nil {
		t.Fatal("NewReactAgent accepted a nil model")
	}
}

func TestModelNodeFillsToolCallIDs(t *testing.T) {
	step := scripted.Calls(model.ToolCall{Name: "run_python", Arguments: []byte(`{"code":"1"}`)})
	agent, err := NewReactAgent(scripted.New(step, scripted.Text("done")), []Tool{echoPython(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), graph.Updates(Messages.Add(model.User("go"))))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	id := msgs[1].ToolCalls[0].ID
	if !strings.HasPrefix(id, "call_") || msgs[2].ToolCallID != id || msgs[3].Content != "done" {
		t.Fatalf("call id %q, tool message answers %q", id, msgs[2].ToolCallID)
	}
	if step.Response.Message.ToolCalls[0].ID != "" {
		t.Fatal("the model's own tool call was changed")
	}
}

// A thread of the agent survives closing and reopening a bbolt file, with the
// ids AddMessages gave to messages written without one.
func TestReactAgentDurableInBolt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "threads.db")
	open := func() (*bolt.Saver, *graph.Graph[MessagesState]) {
		s, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := NewReactAgent(scripted.CodeAct(), []Tool{echoPython(t)}, WithCompileOptions(graph.WithSaver(s)))
		if err != nil {
			t.Fatal(err)
		}
		return s, agent
	}
	userText := func(text string) graph.Update[MessagesState] {
		return graph.Updates(Messages.Add(model.Message{Role: model.RoleUser, Content: text}))
	}
	saver, agent := open()
	res, err := agent.Invoke(ctx, userText("print(1)"), graph.WithThread("7"))
	if err != nil {
		t.Fatal(err)
	}
	before := res.State.Messages
	if err := saver.Close(); err != nil {
		t.Fatal(err)
	}

	saver, agent = open()
	defer saver.Close()
	snap, err := agent.GetState(ctx, graph.WithThread("7"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Values.Messages, before) {
		t.Fatalf("reopened thread differs:\n got %+v\nwant %+v", snap.Values.Messages, before)
	}
	res, err = agent.Invoke(ctx, userText("print(2)"), graph.WithThread("7"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if len(msgs) != 8 || msgs[0].ID != before[0].ID || msgs[7].Content != "Tool said:\n[7] print(2)" {
		t.Fatalf("continued thread: %d messages, last %q", len(msgs), msgs[len(msgs)-1].Content)
	}
}

func TestReactAgentDrawing(t *testing.T) {
	agent, err := NewReactAgent(scripted.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := agent.Mermaid()
	for _, edge := range []string{"__start__ --> agent;", "agent -.-> tools;", "agent -.-> __end__;", "tools --> agent;"} {
		if !strings.Contains(m, edge) {
			t.Fatalf("drawing lacks %q:\n%s", edge, m)
		}
	}
}

// A ModelNode runs on its own, outside a graph, with its options: the system
// prompt goes before the conversation and is not written back.
func TestModelNodeRun(t *testing.T) {
	m := scripted.New(scripted.Text("hello"))
	n, err := NewModelNode(m, noteMessages, []Tool{tool1}, WithSystemPrompt("Be brief."), WithToolChoice(model.ToolChoiceRequired))
	if err != nil {
		t.Fatal(err)
	}
	u, err := n.Run(context.Background(), noteState{Messages: []model.Message{model.User("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	if len(req.Messages) != 2 || req.Messages[0].Content != "Be brief." || req.ToolChoice != model.ToolChoiceRequired ||
		len(req.Tools) != 1 || req.Tools[0].Name != tool1.Spec().Name || tool1.Spec().Name != "tool1" {
		t.Fatalf("request %+v", req)
	}
	g, err := graph.New(noteMessages, notes).AddNodeFunc("model", func(context.Context, noteState) (graph.Update[noteState], error) {
		return u, nil
	}).AddEdge(graph.START, "model").Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), graph.Updates(noteMessages.Add(model.User("hi"))))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if len(msgs) != 2 || msgs[1].Role != model.RoleAssistant || msgs[1].Content != "hello" || msgs[1].ID == "" {
		t.Fatalf("the node's update gives %+v, want the answer after the question", msgs)
	}
	if _, err := NewModelNode[noteState](nil, noteMessages, nil); err == nil {
		t.Fatal("NewModelNode accepted a nil model")
	}
	if _, err := NewModelNode(m, noteMessages, []Tool{nil}); err == nil {
		t.Fatal("NewModelNode accepted a nil tool")
	}
}
