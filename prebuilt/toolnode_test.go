package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

type noteState struct {
	Messages []model.Message
	Notes    []string
}

var (
	noteMessages = graph.SliceField("messages", func(s *noteState) *[]model.Message { return &s.Messages }, AddMessages)
	notes        = graph.SliceField("notes", func(s *noteState) *[]string { return &s.Notes }, graph.Append[string]())
)

// runTools runs a graph START -> tools -> END on a conversation ending in an
// assistant message asking for calls.
func runTools(t *testing.T, ctx context.Context, tools []*Tool, calls []model.ToolCall, opts ...Option) (noteState, error) {
	t.Helper()
	tn, err := NewToolNode(noteMessages, tools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New[noteState](noteMessages, notes).
		AddNode(ToolsNode, tn).
		AddEdge(graph.START, ToolsNode).AddEdge(ToolsNode, graph.END).
		Compile()
	if err != nil {
		t.Fatal(err)
	}
	in := graph.Updates(noteMessages.Add(model.User("go"), model.Assistant("", calls...)))
	res, err := g.Invoke(ctx, in, graph.WithThread("th-1"))
	return res.State, err
}

func call(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Arguments: model.Arguments(args)}
}

type idArgs struct {
	N int `json:"n"`
}

func TestToolNodeRunsCallsConcurrentlyInCallOrder(t *testing.T) {
	const n = 10
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	tool := MustTool("wait", "waits for every call to start", func(ctx context.Context, a idArgs) (string, error) {
		arrived.Done()
		select { // returns only once all n calls are running at the same time
		case <-all:
		case <-time.After(10 * time.Second):
			return "", errors.New("the calls did not run concurrently")
		}
		cfg, ok := graph.ConfigFrom(ctx)
		if !ok {
			return "", errors.New("no run config in the tool's context")
		}
		return fmt.Sprintf("%d %s %s %s", a.N, cfg.ThreadID, cfg.Node, ToolCallID(ctx)), nil
	})
	var calls []model.ToolCall
	for i := range n {
		calls = append(calls, call(fmt.Sprintf("c%d", i), "wait", fmt.Sprintf(`{"n":%d}`, i)))
	}
	s, err := runTools(t, context.Background(), []*Tool{tool}, calls)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Messages[2:]
	if len(got) != n {
		t.Fatalf("got %d tool messages, want %d", len(got), n)
	}
	for i, m := range got {
		id := fmt.Sprintf("c%d", i)
		want := fmt.Sprintf("%d th-1 tools %s", i, id)
		if m.Role != model.RoleTool || m.ToolCallID != id || m.Name != "wait" || m.Status != model.StatusOK || m.Content != want || m.ID == "" {
			t.Fatalf("message %d = %+v, want content %q for call %s", i, m, want, id)
		}
	}
}

func TestToolNodeErrorMessages(t *testing.T) {
	ok := MustTool("ok", "", func(context.Context, struct{}) (string, error) { return "fine", nil })
	fails := MustTool("fails", "", func(context.Context, struct{}) (string, error) { return "", errDisk })
	panics := MustTool("panics", "", func(context.Context, struct{}) (string, error) { panic("boom") })
	typed := MustTool("typed", "", func(context.Context, idArgs) (string, error) { return "typed", nil })
	tools := []*Tool{ok, fails, panics, typed}

	s, err := runTools(t, context.Background(), tools, []model.ToolCall{
		call("1", "nope", `{}`),
		call("2", "fails", `{}`),
		call("3", "panics", `{}`),
		call("4", "typed", `{"n":"seven"}`),
		call("5", "ok", `{}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status  model.ToolStatus
		content string
	}{
		{model.StatusError, "Error: nope is not a valid tool, try one of [ok, fails, panics, typed].\nPlease fix your mistakes."},
		{model.StatusError, "Error: disk full\nPlease fix your mistakes."},
		{model.StatusError, `Error: prebuilt: tool "panics" (call 3) panicked: boom` + "\nPlease fix your mistakes."},
		{model.StatusError, `Error: invalid arguments for tool "typed": field "n": expected integer, got string "seven"` + "\nPlease fix your mistakes."},
		{model.StatusOK, "fine"},
	}
	msgs := s.Messages[2:]
	for i, w := range want {
		if msgs[i].Status != w.status || msgs[i].Content != w.content || msgs[i].ToolCallID != fmt.Sprint(i+1) {
			t.Fatalf("message %d = %q (%s), want %q (%s)", i, msgs[i].Content, msgs[i].Status, w.content, w.status)
		}
	}

	// A custom format sees the typed errors.
	var seen []string
	var mu sync.Mutex
	s, err = runTools(t, context.Background(), tools, []model.ToolCall{call("1", "nope", `{}`), call("2", "typed", `{}`)},
		ErrorContent(func(c model.ToolCall, err error) string {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrUnknownTool):
				seen = append(seen, "unknown")
			case errors.Is(err, ErrInvalidArguments):
				seen = append(seen, "arguments")
			}
			return "custom " + c.ID
		}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages[2].Content != "custom 1" || s.Messages[3].Content != "custom 2" || len(seen) != 2 {
		t.Fatalf("custom content: %q %q, saw %v", s.Messages[2].Content, s.Messages[3].Content, seen)
	}
}

func TestToolNodeFailOptions(t *testing.T) {
	fails := MustTool("fails", "", func(context.Context, struct{}) (string, error) { return "", errDisk })
	panics := MustTool("panics", "", func(context.Context, struct{}) (string, error) { panic("boom") })
	typed := MustTool("typed", "", func(context.Context, idArgs) (string, error) { return "typed", nil })
	tools := []*Tool{fails, panics, typed}

	_, err := runTools(t, context.Background(), tools, []model.ToolCall{call("1", "fails", `{}`), call("2", "typed", `{"n":1}`)}, FailOnToolError())
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "fails" || te.CallID != "1" || !errors.Is(err, errDisk) {
		t.Fatalf("FailOnToolError: err = %v", err)
	}
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != ToolsNode {
		t.Fatalf("the failure is not the tools node's: %v", err)
	}

	_, err = runTools(t, context.Background(), tools, []model.ToolCall{call("1", "panics", `{}`)}, FailOnPanic())
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "toolnode_test.go") {
		t.Fatalf("FailOnPanic: err = %v", err)
	}

	// Mistakes the model made go back to it even when tool errors fail the run.
	s, err := runTools(t, context.Background(), tools, []model.ToolCall{call("1", "typed", `{}`), call("2", "nope", `{}`)}, FailOnToolError(), FailOnPanic())
	if err != nil || s.Messages[2].Status != model.StatusError || s.Messages[3].Status != model.StatusError {
		t.Fatalf("model mistakes: err %v, messages %+v", err, s.Messages)
	}
}

func TestToolNodeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	block := MustTool("block", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	go func() { <-started; cancel() }()
	_, err := runTools(t, ctx, []*Tool{block}, []model.ToolCall{call("1", "block", `{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestToolNodeOutputWrites(t *testing.T) {
	note := MustTool("note", "", func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (Output[noteState], error) {
		return Output[noteState]{
			Content: map[string]string{"saved": a.Text},
			Writes:  []graph.Write[noteState]{notes.Add(a.Text + "@" + ToolCallID(ctx))},
		}, nil
	})
	s, err := runTools(t, context.Background(), []*Tool{note}, []model.ToolCall{
		call("a", "note", `{"text":"one"}`), call("b", "note", `{"text":"two"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Notes, ",") != "one@a,two@b" {
		t.Fatalf("notes = %v", s.Notes)
	}
	if s.Messages[2].Content != `{"saved":"one"}` || s.Messages[3].Content != `{"saved":"two"}` {
		t.Fatalf("contents %q %q", s.Messages[2].Content, s.Messages[3].Content)
	}

	// Called directly, an Output's content is the result.
	got, err := note.Call(context.Background(), []byte(`{"text":"x"}`))
	if err != nil || got != `{"saved":"x"}` {
		t.Fatalf("direct call: %q, %v", got, err)
	}
}

func TestNewToolNodeRejects(t *testing.T) {
	ok := MustTool("ok", "", func(context.Context, struct{}) (string, error) { return "", nil })
	wrongState := MustTool("w", "", func(context.Context, struct{}) (Output[MessagesState], error) {
		return Output[MessagesState]{}, nil
	})
	for name, tools := range map[string][]*Tool{
		"nil":         {ok, nil},
		"duplicate":   {ok, ok},
		"wrong state": {wrongState},
	} {
		if _, err := NewToolNode(noteMessages, tools); err == nil {
			t.Errorf("%s: NewToolNode accepted %v", name, tools)
		}
	}
	if _, err := NewToolNode(Messages, []*Tool{wrongState}); err != nil {
		t.Fatalf("Output[MessagesState] on MessagesState rejected: %v", err)
	}
}

func TestToolNodeWithoutAssistantMessage(t *testing.T) {
	tn, err := NewToolNode(Messages, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Run(context.Background(), MessagesState{Messages: []model.Message{model.User("hi")}}); !errors.Is(err, ErrNoAssistantMessage) {
		t.Fatalf("err = %v", err)
	}
	u, err := tn.Run(context.Background(), MessagesState{Messages: []model.Message{model.User("hi"), model.Assistant("hello")}})
	if err != nil || len(u.Writes()) != 0 {
		t.Fatalf("no calls: %v writes, err %v", len(u.Writes()), err)
	}
}

func TestToolsCondition(t *testing.T) {
	route := ToolsCondition(Messages)
	cases := []struct {
		msgs []model.Message
		want string
	}{
		{nil, graph.END},
		{[]model.Message{model.User("hi")}, graph.END},
		{[]model.Message{model.User("hi"), model.Assistant("hello")}, graph.END},
		{[]model.Message{model.User("hi"), model.Assistant("", call("1", "t", "{}"))}, ToolsNode},
	}
	for i, tc := range cases {
		r, err := route(context.Background(), MessagesState{Messages: tc.msgs})
		if err != nil || len(r.Nodes) != 1 || r.Nodes[0] != tc.want {
			t.Fatalf("case %d: route %v, %v; want %s", i, r.Nodes, err, tc.want)
		}
	}
	if b := ToolsBranch(); len(b.Paths) != 2 || b.Paths[0] != ToolsNode || b.Paths[1] != graph.END {
		t.Fatalf("ToolsBranch = %+v", b)
	}
}

func TestToolStateInTools(t *testing.T) {
	count := MustTool("count", "", func(ctx context.Context, _ struct{}) (string, error) {
		s, ok := ToolState[noteState](ctx)
		if !ok {
			return "", errors.New("no state")
		}
		if _, wrong := ToolState[MessagesState](ctx); wrong {
			return "", errors.New("state of another type")
		}
		return fmt.Sprint(len(s.Messages), " messages"), nil
	})
	s, err := runTools(t, context.Background(), []*Tool{count}, []model.ToolCall{call("1", "count", `{}`), call("2", "count", `{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages[2].Content != "2 messages" || s.Messages[3].Content != "2 messages" {
		t.Fatalf("contents %q %q", s.Messages[2].Content, s.Messages[3].Content)
	}
	// Called directly, there is no state.
	if _, err := count.Call(WithToolCallID(context.Background(), "x"), nil); err == nil {
		t.Fatal("a direct call found a state")
	}
}

// The run fails with the tool's error, not with the cancellation it caused
// in a sibling that comes first in call order.
func TestToolNodeFailureCause(t *testing.T) {
	started := make(chan struct{})
	slow := MustTool("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	fails := MustTool("fails", "", func(ctx context.Context, _ struct{}) (string, error) {
		<-started
		return "", errDisk
	})
	_, err := runTools(t, context.Background(), []*Tool{slow, fails}, []model.ToolCall{call("1", "slow", `{}`), call("2", "fails", `{}`)}, FailOnToolError())
	var te *ToolError
	if !errors.As(err, &te) || te.CallID != "2" || !errors.Is(err, errDisk) {
		t.Fatalf("err = %v, want the ToolError of call 2", err)
	}
}

func TestToolNodeInterrupt(t *testing.T) {
	ctx := context.Background()
	ran := 0
	var mu sync.Mutex
	approve := MustTool("delete_files", "", func(ctx context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		v, err := Interrupt(ctx, "delete "+a.Path+"?")
		if err != nil {
			return "", err
		}
		mu.Lock()
		ran++
		mu.Unlock()
		return fmt.Sprintf("%s: %v", a.Path, v), nil
	})
	tn, err := NewToolNode(noteMessages, []*Tool{approve}, MaxParallel(1))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.New[noteState](noteMessages, notes).
		AddNode(ToolsNode, tn).
		AddEdge(graph.START, ToolsNode).AddEdge(ToolsNode, graph.END).
		Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	in := graph.Updates(noteMessages.Add(model.User("clean up"), model.Assistant("",
		call("1", "delete_files", `{"path":"/tmp/a"}`), call("2", "delete_files", `{"path":"/tmp/b"}`))))
	res, err := g.Invoke(ctx, in, graph.WithThread("i"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() || res.Interrupts[0].Value != "delete /tmp/a?" {
		t.Fatalf("first pause: %+v", res.Interrupts)
	}
	res, err = g.Invoke(ctx, graph.Update[noteState]{}, graph.WithThread("i"), graph.WithResume("yes"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted() || res.Interrupts[0].Value != "delete /tmp/b?" {
		t.Fatalf("second pause: %+v", res.Interrupts)
	}
	res, err = g.Invoke(ctx, graph.Update[noteState]{}, graph.WithThread("i"), graph.WithResume("no"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if res.Interrupted() || len(msgs) != 4 || msgs[2].Content != "/tmp/a: yes" || msgs[3].Content != "/tmp/b: no" {
		t.Fatalf("after resuming: interrupted %v, messages %+v", res.Interrupted(), msgs)
	}

	// Without a run, Interrupt says why it cannot pause.
	if _, err := approve.Call(context.Background(), []byte(`{"path":"x"}`)); !errors.Is(err, graph.ErrNotInRun) {
		t.Fatalf("direct call: %v", err)
	}
}
