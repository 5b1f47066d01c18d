package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
func runTools(t *testing.T, ctx context.Context, tools []Tool, calls []model.ToolCall, opts ...ToolNodeOption) (noteState, error) {
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
	s, err := runTools(t, context.Background(), []Tool{tool}, calls)
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

// tool1 and tool2 are the tools of LangGraph's ToolNode tests: both fail
// when someVal is 0.
type someArgs struct {
	SomeVal      int    `json:"some_val"`
	SomeOtherVal string `json:"some_other_val"`
}

var (
	errTest = errors.New("test error")
	tool1   = MustTool("tool1", "Tool 1.", func(_ context.Context, a someArgs) (string, error) {
		if a.SomeVal == 0 {
			return "", errTest
		}
		return fmt.Sprintf("%d - %s", a.SomeVal, a.SomeOtherVal), nil
	})
	tool2 = MustTool("tool2", "Tool 2.", func(_ context.Context, a someArgs) (string, error) {
		if a.SomeVal == 0 {
			return "", errTest
		}
		return fmt.Sprintf("tool2: %d - %s", a.SomeVal, a.SomeOtherVal), nil
	})
	tool3 = MustTool("tool3", "Tool 3.", func(_ context.Context, a someArgs) ([]map[string]any, error) {
		return []map[string]any{{"key_1": a.SomeVal, "key_2": "foo"}, {"key_1": a.SomeOtherVal, "key_2": "baz"}}, nil
	})
)

// toolMessages runs a ToolNode over tools on one assistant message asking
// for calls, and returns the tool messages it wrote.
func toolMessages(t *testing.T, tools []Tool, calls []model.ToolCall, opts ...ToolNodeOption) ([]model.Message, error) {
	t.Helper()
	s, err := runTools(t, context.Background(), tools, calls, opts...)
	if err != nil {
		return nil, err
	}
	return s.Messages[2:], nil
}

func wantToolMessage(t *testing.T, m model.Message, callID, name string, status model.ToolStatus, content string) {
	t.Helper()
	if m.Role != model.RoleTool || m.ToolCallID != callID || m.Name != name || m.Status != status || m.Content != content {
		t.Fatalf("tool message = {role %s, call %s, name %s, status %s, content %q}\nwant {tool, %s, %s, %s, %q}",
			m.Role, m.ToolCallID, m.Name, m.Status, m.Content, callID, name, status, content)
	}
}

// LangGraph: test_tool_node, test_tool_node_tool_call_input.
func TestToolNodeResults(t *testing.T) {
	msgs, err := toolMessages(t, []Tool{tool1, tool3}, []model.ToolCall{
		call("some 0", "tool1", `{"some_val":1,"some_other_val":"foo"}`),
		call("some 1", "tool1", `{"some_val":2,"some_other_val":"bar"}`),
		call("some 2", "tool3", `{"some_val":2,"some_other_val":"bar"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantToolMessage(t, msgs[0], "some 0", "tool1", model.StatusOK, "1 - foo")
	wantToolMessage(t, msgs[1], "some 1", "tool1", model.StatusOK, "2 - bar")
	wantToolMessage(t, msgs[2], "some 2", "tool3", model.StatusOK, `[{"key_1":2,"key_2":"foo"},{"key_1":"bar","key_2":"baz"}]`)
}

// LangGraph: test_tool_node_incorrect_tool_name, and the unknown tool of
// test_tool_node_tool_call_input. The message names the tool asked for.
func TestToolNodeUnknownTool(t *testing.T) {
	msgs, err := toolMessages(t, []Tool{tool1, tool2}, []model.ToolCall{
		call("some 0", "tool1", `{"some_val":1,"some_other_val":"foo"}`),
		call("some 1", "tool3", `{"some_val":1,"some_other_val":"foo"}`),
	}, WithFailOnInvalidArguments())
	if err != nil {
		t.Fatal(err)
	}
	wantToolMessage(t, msgs[0], "some 0", "tool1", model.StatusOK, "1 - foo")
	wantToolMessage(t, msgs[1], "some 1", "tool3", model.StatusError, "Error: tool3 is not a valid tool, try one of [tool1, tool2].")
}

// LangGraph: test_tool_node_error_handling_default_invocation. Invalid
// arguments go back to the model by default; the tool does not run.
func TestToolNodeInvalidArgumentsToModel(t *testing.T) {
	msgs, err := toolMessages(t, []Tool{tool1}, []model.ToolCall{
		call("some id", "tool1", `{"invalid": 0, "args": "foo"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantToolMessage(t, msgs[0], "some id", "tool1", model.StatusError,
		`Error invoking tool 'tool1' with kwargs {"invalid": 0, "args": "foo"} with error:`+"\n "+
			`field "some_val" is required (integer)`+"\n"+
			`field "some_other_val" is required (string)`+"\n"+
			`field "args" is not a known field; the fields are: some_val, some_other_val`+"\n"+
			`field "invalid" is not a known field; the fields are: some_val, some_other_val`+"\n Please fix the error and try again.")

	// Arguments that are not JSON, or missing, are shown as they came.
	msgs, err = toolMessages(t, []Tool{tool1}, []model.ToolCall{{ID: "a", Name: "tool1", Arguments: model.Arguments(`{"some_val": 1,`)}, call("b", "tool1", ``)})
	if err != nil {
		t.Fatal(err)
	}
	for i, prefix := range []string{"Error invoking tool 'tool1' with kwargs {\"some_val\": 1, with error:\n arguments are not a JSON object but the text",
		"Error invoking tool 'tool1' with kwargs {} with error:\n field \"some_val\" is required"} {
		if !strings.HasPrefix(msgs[i].Content, prefix) || msgs[i].Status != model.StatusError {
			t.Fatalf("message %d = %q, want it to start with %q", i, msgs[i].Content, prefix)
		}
	}
}

// LangGraph: test_tool_node_handle_tool_errors_false, for validation errors.
func TestToolNodeFailOnInvalidArguments(t *testing.T) {
	_, err := toolMessages(t, []Tool{tool1}, []model.ToolCall{call("some id", "tool1", `{"some_val":0}`)}, WithFailOnInvalidArguments())
	var ae *ArgumentError
	if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArguments) || ae.Tool != "tool1" {
		t.Fatalf("err = %v, want the *ArgumentError", err)
	}
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != ToolsNode {
		t.Fatalf("the failure is not the tools node's: %v", err)
	}
}

// LangGraph: test_tool_node_error_handling_default_exception. A tool's own
// error or panic fails the run by default.
func TestToolNodeToolErrorFailsRun(t *testing.T) {
	_, err := toolMessages(t, []Tool{tool1}, []model.ToolCall{call("some id", "tool1", `{"some_val":0,"some_other_val":"foo"}`)})
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "tool1" || te.CallID != "some id" || !errors.Is(err, errTest) {
		t.Fatalf("err = %v, want the *ToolError of call %q", err, "some id")
	}
	if want := `prebuilt: tool "tool1" (call some id) failed: test error`; te.Error() != want {
		t.Fatalf("ToolError says %q, want %q", te.Error(), want)
	}
	panics := MustTool("panics", "", func(context.Context, struct{}) (string, error) { panic("boom") })
	_, err = toolMessages(t, []Tool{panics}, []model.ToolCall{call("1", "panics", `{}`)})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || pe.CallID != "1" || !strings.Contains(string(pe.Stack), "toolnode_test.go") {
		t.Fatalf("err = %v, want the *PanicError", err)
	}
}

// LangGraph: test_tool_node_error_handling with handle_tool_errors=True.
func TestToolNodeToolErrorsToModel(t *testing.T) {
	panics := MustTool("panics", "", func(context.Context, struct{}) (string, error) { panic("boom") })
	msgs, err := toolMessages(t, []Tool{tool1, tool2, tool3, panics}, []model.ToolCall{
		call("some id", "tool1", `{"some_val":0,"some_other_val":"foo"}`),
		call("some other id", "tool2", `{"some_val":0,"some_other_val":"bar"}`),
		call("another id", "tool3", `{"some_val":0}`),
		call("last id", "panics", `{}`),
	}, WithToolErrorsToModel())
	if err != nil {
		t.Fatal(err)
	}
	wantToolMessage(t, msgs[0], "some id", "tool1", model.StatusError, "Error: test error\n Please fix your mistakes.")
	wantToolMessage(t, msgs[1], "some other id", "tool2", model.StatusError, "Error: test error\n Please fix your mistakes.")
	if msgs[2].Status != model.StatusError || msgs[2].ToolCallID != "another id" || !strings.Contains(msgs[2].Content, "some_other_val") {
		t.Fatalf("invalid arguments: %+v", msgs[2])
	}
	wantToolMessage(t, msgs[3], "last id", "panics", model.StatusError, `Error: prebuilt: tool "panics" (call last id) panicked: boom`+"\n Please fix your mistakes.")
}

// LangGraph: test_tool_node_error_handling_callable, with a string and a
// function. The function sees the typed errors; an unknown tool keeps its
// text.
func TestToolNodeErrorContent(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	content := func(c model.ToolCall, err error) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, ErrInvalidArguments):
			seen = append(seen, c.ID+" arguments")
		case errors.Is(err, errTest):
			seen = append(seen, c.ID+" tool")
		}
		return "Value error"
	}
	calls := []model.ToolCall{
		call("1", "tool1", `{"some_val":0,"some_other_val":"foo"}`),
		call("2", "tool1", `{"some_val":"zero"}`),
		call("3", "tool9", `{}`),
	}
	msgs, err := toolMessages(t, []Tool{tool1}, calls, WithToolErrorsToModel(), WithErrorContent(content), WithMaxParallel(1))
	if err != nil {
		t.Fatal(err)
	}
	wantToolMessage(t, msgs[0], "1", "tool1", model.StatusError, "Value error")
	wantToolMessage(t, msgs[1], "2", "tool1", model.StatusError, "Value error")
	wantToolMessage(t, msgs[2], "3", "tool9", model.StatusError, "Error: tool9 is not a valid tool, try one of [tool1].")
	if strings.Join(seen, ",") != "1 tool,2 arguments" {
		t.Fatalf("the content function saw %v", seen)
	}

	// Without WithToolErrorsToModel the content applies to arguments only;
	// the tool's error still fails the run.
	_, err = toolMessages(t, []Tool{tool1}, calls[:1], WithErrorContent(content))
	if !errors.Is(err, errTest) {
		t.Fatalf("err = %v, want the tool's error", err)
	}
}

// LangGraph: test_tool_node_node_interrupt. A pause passes through every
// error setting.
func TestToolNodeInterruptPassesThrough(t *testing.T) {
	pauses := MustTool("tool_interrupt", "", func(ctx context.Context, _ struct {
		SomeVal int `json:"some_val"`
	}) (string, error) {
		v, err := graph.Interrupt(ctx, "provide value for foo")
		if err != nil {
			return "", fmt.Errorf("wrapped: %w", err)
		}
		return fmt.Sprint(v), nil
	})
	settings := map[string][]ToolNodeOption{
		"default":        nil,
		"to the model":   {WithToolErrorsToModel()},
		"custom content": {WithToolErrorsToModel(), WithErrorContent(func(model.ToolCall, error) string { return "handled" })},
		"fail on args":   {WithFailOnInvalidArguments()},
	}
	for name, opts := range settings {
		t.Run(name, func(t *testing.T) {
			tn, err := NewToolNode(noteMessages, []Tool{pauses}, opts...)
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
			in := graph.Updates(noteMessages.Add(model.User("hi?"), model.Assistant("", call("some 0", "tool_interrupt", `{"some_val":0}`))))
			res, err := g.Invoke(context.Background(), in, graph.WithThread("t"))
			if err != nil || !res.Interrupted() || res.Interrupts[0].Value != "provide value for foo" || res.Interrupts[0].Node != ToolsNode {
				t.Fatalf("first run: interrupts %+v, err %v", res.Interrupts, err)
			}
			res, err = g.Invoke(context.Background(), graph.Update[noteState]{}, graph.WithThread("t"), graph.WithResume("bar"))
			if err != nil || res.Interrupted() {
				t.Fatalf("resume: interrupts %+v, err %v", res.Interrupts, err)
			}
			wantToolMessage(t, res.State.Messages[2], "some 0", "tool_interrupt", model.StatusOK, "bar")
		})
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
	_, err := runTools(t, ctx, []Tool{block}, []model.ToolCall{call("1", "block", `{}`)})
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
	s, err := runTools(t, context.Background(), []Tool{note}, []model.ToolCall{
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
	v, err := note.Call(context.Background(), []byte(`{"text":"x"}`))
	got, _ := Content(v)
	if err != nil || got != `{"saved":"x"}` {
		t.Fatalf("direct call: %q, %v", got, err)
	}
}

func TestNewToolNodeRejects(t *testing.T) {
	ok := MustTool("ok", "", func(context.Context, struct{}) (string, error) { return "", nil })
	wrongState := MustTool("w", "", func(context.Context, struct{}) (Output[MessagesState], error) {
		return Output[MessagesState]{}, nil
	})
	for name, tools := range map[string][]Tool{
		"nil":         {ok, nil},
		"duplicate":   {ok, ok},
		"wrong state": {wrongState},
	} {
		if _, err := NewToolNode(noteMessages, tools); err == nil {
			t.Errorf("%s: NewToolNode accepted %v", name, tools)
		}
	}
	if _, err := NewToolNode(Messages, []Tool{wrongState}); err != nil {
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
		if a, ok := ToolState[any](ctx); !ok || !reflect.DeepEqual(a, s) {
			return "", errors.New("no state as an interface it implements")
		}
		return fmt.Sprint(len(s.Messages), " messages"), nil
	})
	s, err := runTools(t, context.Background(), []Tool{count}, []model.ToolCall{call("1", "count", `{}`), call("2", "count", `{}`)})
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
	_, err := runTools(t, context.Background(), []Tool{slow, fails}, []model.ToolCall{call("1", "slow", `{}`), call("2", "fails", `{}`)})
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
		v, err := graph.Interrupt(ctx, "delete "+a.Path+"?")
		if err != nil {
			return "", err
		}
		mu.Lock()
		ran++
		mu.Unlock()
		return fmt.Sprintf("%s: %v", a.Path, v), nil
	})
	tn, err := NewToolNode(noteMessages, []Tool{approve}, WithMaxParallel(1))
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
