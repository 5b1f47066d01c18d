package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

func roles(msgs []model.Message) []model.Role {
	out := make([]model.Role, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role
	}
	return out
}

var (
	user      = model.RoleUser
	assistant = model.RoleAssistant
	toolRole  = model.RoleTool
)

// LangGraph: test_react_agent_parallel_tool_calls (v2). One call pauses for
// a human, the other finishes; resuming runs only the paused call.
func TestReactAgentParallelToolCalls(t *testing.T) {
	ctx := context.Background()
	var helpRuns, weatherRuns atomic.Int32
	humanAssistance := MustTool("human_assistance", "Request assistance from a human.", func(ctx context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"query": a.Query})
		if err != nil {
			return "", err
		}
		helpRuns.Add(1)
		return fmt.Sprint(answer.(map[string]any)["data"]), nil
	})
	getWeather := MustTool("get_weather", "Use this tool to get the weather.", func(context.Context, struct {
		Location string `json:"location"`
	}) (string, error) {
		weatherRuns.Add(1)
		return "It's sunny!", nil
	})
	m := scripted.New(
		scripted.Calls(call("1", "get_weather", `{"location":"sf"}`), call("2", "human_assistance", `{"query":"request help"}`)),
		scripted.Text("done"),
	)
	agent, err := NewReactAgent(m, []Tool{humanAssistance, getWeather}, WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	var paused []graph.Interruption
	for ev, err := range agent.Stream(ctx, graph.Updates(Messages.Add(model.User("Get user assistance and also check the weather"))),
		graph.WithThread("1"), graph.WithStreamModes(graph.ModeValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Mode == graph.ModeInterrupt {
			paused = ev.Interrupts
		}
	}
	if len(paused) != 1 || paused[0].Node != ToolsNode || paused[0].Value.(map[string]any)["query"] != "request help" {
		t.Fatalf("interrupts %+v, want the human_assistance pause", paused)
	}
	if weatherRuns.Load() != 1 || helpRuns.Load() != 0 {
		t.Fatalf("before resuming: get_weather ran %d times, human_assistance finished %d", weatherRuns.Load(), helpRuns.Load())
	}

	var states [][]model.Role
	for ev, err := range agent.Stream(ctx, graph.Update[MessagesState]{}, graph.WithThread("1"),
		graph.WithResume(map[string]any{"data": "Hello"}), graph.WithStreamModes(graph.ModeValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Mode == graph.ModeValues {
			states = append(states, roles(ev.State.Messages))
		}
	}
	last := states[len(states)-1]
	if want := []model.Role{user, assistant, toolRole, toolRole, assistant}; !slices.Equal(last, want) {
		t.Fatalf("final conversation %v, want %v", last, want)
	}
	if weatherRuns.Load() != 1 || helpRuns.Load() != 1 {
		t.Fatalf("after resuming: get_weather ran %d times, human_assistance finished %d; want 1 and 1", weatherRuns.Load(), helpRuns.Load())
	}
	snap, err := agent.GetState(ctx, graph.WithThread("1"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := snap.Values.Messages
	wantToolMessage(t, msgs[2], "1", "get_weather", model.StatusOK, "It's sunny!")
	wantToolMessage(t, msgs[3], "2", "human_assistance", model.StatusOK, "Hello")
}

// LangGraph: test_tool_node_node_interrupt, inside the agent (v2). The
// paused thread's next task is the tools node, holding the interrupt.
func TestReactAgentToolInterrupt(t *testing.T) {
	ctx := context.Background()
	var normalRuns atomic.Int32
	toolNormal := MustTool("tool_normal", "", func(context.Context, struct {
		SomeVal int `json:"some_val"`
	}) (string, error) {
		normalRuns.Add(1)
		return "normal", nil
	})
	toolInterrupt := MustTool("tool_interrupt", "", func(ctx context.Context, _ struct {
		SomeVal int `json:"some_val"`
	}) (string, error) {
		foo, err := graph.Interrupt(ctx, "provide value for foo")
		if err != nil {
			return "", err
		}
		return fmt.Sprint(foo), nil
	})
	m := scripted.New(
		scripted.Calls(call("1", "tool_interrupt", `{"some_val":0}`), call("2", "tool_normal", `{"some_val":1}`)),
		scripted.Text("done"),
	)
	agent, err := NewReactAgent(m, []Tool{toolInterrupt, toolNormal}, WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(ctx, graph.Updates(Messages.Add(model.User("hi?"))), graph.WithThread("1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interrupts) != 1 || res.Interrupts[0].Value != "provide value for foo" || res.Interrupts[0].Node != ToolsNode {
		t.Fatalf("interrupts %+v", res.Interrupts)
	}
	snap, err := agent.GetState(ctx, graph.WithThread("1"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(snap.Next, ToolsNode) || slices.ContainsFunc(snap.Next, func(n string) bool { return n != ToolsNode }) {
		t.Fatalf("next %v, want only %q", snap.Next, ToolsNode)
	}
	var pending []graph.Interruption
	for _, task := range snap.Tasks {
		pending = append(pending, task.Interrupts...)
	}
	if len(pending) != 1 || pending[0].Value != "provide value for foo" || pending[0].ID != res.Interrupts[0].ID {
		t.Fatalf("the thread's pending interrupts %+v", pending)
	}

	res, err = agent.Invoke(ctx, graph.Update[MessagesState]{}, graph.WithThread("1"), graph.WithResume("bar"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if want := []model.Role{user, assistant, toolRole, toolRole, assistant}; !slices.Equal(roles(msgs), want) {
		t.Fatalf("conversation %v, want %v", roles(msgs), want)
	}
	wantToolMessage(t, msgs[2], "1", "tool_interrupt", model.StatusOK, "bar")
	wantToolMessage(t, msgs[3], "2", "tool_normal", model.StatusOK, "normal")
	if n := normalRuns.Load(); n != 1 {
		t.Fatalf("tool_normal ran %d times, want 1", n)
	}
}

// A call whose tool fails fails the run; running the thread again retries
// that call only, keeping the results of the calls that finished.
func TestReactAgentResumeAfterToolFailure(t *testing.T) {
	ctx := context.Background()
	var runs sync.Map // call id -> *atomic.Int32
	count := func(id string) int32 {
		v, _ := runs.LoadOrStore(id, new(atomic.Int32))
		return v.(*atomic.Int32).Load()
	}
	var broken atomic.Bool
	broken.Store(true)
	errFlaky := errors.New("service unavailable")
	fetch := MustTool("fetch", "", func(ctx context.Context, a struct {
		URL string `json:"url"`
	}) (string, error) {
		v, _ := runs.LoadOrStore(ToolCallID(ctx), new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
		if a.URL == "flaky" && broken.Load() {
			return "", errFlaky
		}
		return "page " + a.URL, nil
	})
	m := scripted.New(
		scripted.Calls(call("a", "fetch", `{"url":"one"}`), call("b", "fetch", `{"url":"flaky"}`), call("c", "fetch", `{"url":"three"}`)),
		scripted.Text("done"),
	)
	agent, err := NewReactAgent(m, []Tool{fetch}, WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Invoke(ctx, graph.Updates(Messages.Add(model.User("fetch them"))), graph.WithThread("f"))
	var te *ToolError
	if !errors.As(err, &te) || te.CallID != "b" || !errors.Is(err, errFlaky) {
		t.Fatalf("err = %v, want the ToolError of call b", err)
	}
	broken.Store(false)
	res, err := agent.Invoke(ctx, graph.Update[MessagesState]{}, graph.WithThread("f"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if want := []model.Role{user, assistant, toolRole, toolRole, toolRole, assistant}; !slices.Equal(roles(msgs), want) {
		t.Fatalf("conversation %v, want %v", roles(msgs), want)
	}
	wantToolMessage(t, msgs[2], "a", "fetch", model.StatusOK, "page one")
	wantToolMessage(t, msgs[3], "b", "fetch", model.StatusOK, "page flaky")
	wantToolMessage(t, msgs[4], "c", "fetch", model.StatusOK, "page three")
	if a, b, c := count("a"), count("b"), count("c"); a != 1 || b != 2 || c != 1 {
		t.Fatalf("runs per call: a %d, b %d, c %d; want 1, 2, 1", a, b, c)
	}
}

// The calls of one message run as concurrent tasks, and their messages land
// in call order whatever order they finish in.
func TestReactAgentCallsRunConcurrentlyInCallOrder(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	wait := MustTool("wait", "", func(ctx context.Context, a idArgs) (string, error) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			return "", errors.New("the calls did not run concurrently")
		}
		// Later calls finish first.
		time.Sleep(time.Duration(n-a.N) * time.Millisecond)
		s, ok := ToolState[MessagesState](ctx)
		if !ok || len(s.Messages) != 1 || len(s.Messages[0].ToolCalls) != 1 || s.Messages[0].ToolCalls[0].ID != ToolCallID(ctx) {
			return "", fmt.Errorf("the tool's state is %+v", s)
		}
		return fmt.Sprint(a.N), nil
	})
	var calls []model.ToolCall
	for i := range n {
		calls = append(calls, call(fmt.Sprint("c", i), "wait", fmt.Sprintf(`{"n":%d}`, i)))
	}
	m := scripted.New(scripted.Calls(calls...), scripted.Text("done"))
	agent, err := NewReactAgent(m, []Tool{wait})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), graph.Updates(Messages.Add(model.User("go"))))
	if err != nil {
		t.Fatal(err)
	}
	for i, msg := range res.State.Messages[2 : 2+n] {
		wantToolMessage(t, msg, fmt.Sprint("c", i), "wait", model.StatusOK, fmt.Sprint(i))
	}
	// The model's second turn saw every answer.
	if got := len(m.Requests()[1].Messages); got != 2+n {
		t.Fatalf("second model call saw %d messages, want %d", got, 2+n)
	}
}

// The agent's router sends each call to the tools node with the assistant
// message cut down to that call, and ends the run after an answer.
func TestSendToolCalls(t *testing.T) {
	ask := model.Assistant("thinking", call("1", "a", `{}`), call("2", "b", `{"x":1}`))
	ask.ID = "m1"
	r, err := sendToolCalls(Messages, graph.END)(context.Background(), MessagesState{Messages: []model.Message{model.User("hi"), ask}})
	if err != nil || len(r.Nodes) != 0 || len(r.Sends) != 2 {
		t.Fatalf("route %+v, %v", r, err)
	}
	for i, s := range r.Sends {
		msgs := s.State.Messages
		if s.Node != ToolsNode || len(msgs) != 1 || msgs[0].ID != "m1" || msgs[0].Content != "thinking" ||
			len(msgs[0].ToolCalls) != 1 || msgs[0].ToolCalls[0].ID != ask.ToolCalls[i].ID {
			t.Fatalf("send %d = %+v", i, s)
		}
	}
	if len(ask.ToolCalls) != 2 {
		t.Fatal("the router changed the state's message")
	}
	for _, msgs := range [][]model.Message{nil, {model.User("hi")}, {model.User("hi"), model.Assistant("hello")}} {
		r, err := sendToolCalls(Messages, graph.END)(context.Background(), MessagesState{Messages: msgs})
		if err != nil || len(r.Sends) != 0 || !slices.Equal(r.Nodes, []string{graph.END}) {
			t.Fatalf("%v: route %+v, %v; want END", roles(msgs), r, err)
		}
	}
}

// LangGraph's tools_condition: a custom state whose conversation lives under
// another key, routed by ToolsCondition to a ToolNode (test_tool_node_messages_key).
func TestToolsConditionCustomKey(t *testing.T) {
	add := MustTool("add", "Adds a and b.", func(_ context.Context, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return a.A + a.B, nil
	})
	m := scripted.New(scripted.Calls(call("test_id", "add", `{"a":1,"b":2}`)), scripted.Text("hi-hi-3"))
	agent, err := NewModelNode(m, noteMessages, []Tool{add})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := NewToolNode(noteMessages, []Tool{add})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New(noteMessages, notes).
		AddNode(AgentNode, agent).
		AddNode(ToolsNode, tn).
		AddEdge(graph.START, AgentNode).
		AddConditionalEdges(AgentNode, ToolsCondition(noteMessages), ToolsBranch()).
		AddEdge(ToolsNode, AgentNode).
		Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), graph.Updates(noteMessages.Add(model.User("hi"))))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if want := []model.Role{user, assistant, toolRole, assistant}; !slices.Equal(roles(msgs), want) {
		t.Fatalf("conversation %v, want %v", roles(msgs), want)
	}
	wantToolMessage(t, msgs[2], "test_id", "add", model.StatusOK, "3")
	if msgs[3].Content != "hi-hi-3" {
		t.Fatalf("answer %q", msgs[3].Content)
	}
}
