package prebuilt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

func TestRawToolChecksArguments(t *testing.T) {
	var got json.RawMessage
	tool, err := NewRawTool(model.ToolSpec{
		Name:        "search",
		Description: "Search the web.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":1},` +
			`"n":{"type":"integer","maximum":10}},"required":["q"],"additionalProperties":false}`),
	}, func(_ context.Context, args json.RawMessage) (any, error) {
		got = args
		return map[string]int{"hits": 3}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tool.Call(context.Background(), json.RawMessage(` {"q":"go"} `))
	if err != nil || string(got) != `{"q":"go"}` {
		t.Fatalf("call: %v, args %s", err, got)
	}
	if text, _ := Content(v); text != `{"hits":3}` {
		t.Fatalf("content %s", text)
	}
	for args, want := range map[string]string{
		`{"n":"ten"}`:         `invalid arguments for tool "search": field "q" is required (string); field "n": expected integer, got string "ten"`,
		`{"q":"","n":11}`:     `field "n": must be at most 10, got 11; field "q": needs at least 1 characters, got 0`,
		`{"q":"x","page":2}`:  `field "page" is not a known field; the fields are: q, n`,
		`[1]`:                 `arguments: expected object, got array [1]`,
		`"find me something"`: `arguments are not a JSON object but the text "find me something"`,
	} {
		got = nil
		_, err := tool.Call(context.Background(), json.RawMessage(args))
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), want) || got != nil {
			t.Errorf("%s: err = %v, want one containing %q and no call", args, err, want)
		}
	}
	// Empty arguments are {}; a schema with no parameters takes them.
	noArgs := MustRawTool(model.ToolSpec{Name: "now"}, func(_ context.Context, args json.RawMessage) (any, error) { return string(args), nil })
	if v, err := noArgs.Call(context.Background(), nil); err != nil || v != "{}" {
		t.Fatalf("no arguments: %v, %v", v, err)
	}
	if s := noArgs.Spec(); string(s.Parameters) != `{"type":"object","properties":{}}` {
		t.Fatalf("default schema %s", s.Parameters)
	}
}

func TestRawToolSchemas(t *testing.T) {
	fn := func(context.Context, json.RawMessage) (any, error) { return "ok", nil }
	for _, bad := range []string{`[`, `[]`, `{"type":"string"}`} {
		if _, err := NewRawTool(model.ToolSpec{Name: "x", Parameters: json.RawMessage(bad)}, fn); err == nil {
			t.Errorf("schema %s accepted", bad)
		}
	}
	if _, err := NewRawTool(model.ToolSpec{Name: "not a name"}, fn); err == nil {
		t.Error("bad name accepted")
	}
	// A list of types is beyond the checker: the schema reaches the model
	// as it is, and only an object is required.
	loose := MustRawTool(model.ToolSpec{Name: "loose", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":["string","null"]}}}`)}, fn)
	if _, err := loose.Call(context.Background(), json.RawMessage(`{"a":null}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := loose.Call(context.Background(), json.RawMessage(`3`)); !errors.Is(err, ErrInvalidArguments) {
		t.Fatalf("a number passed as arguments: %v", err)
	}
	if !strings.Contains(string(loose.Spec().Parameters), `["string","null"]`) {
		t.Fatal("schema changed")
	}
}

func TestWrapOrderAndOutputCheck(t *testing.T) {
	var trail []string
	mark := func(name string) Middleware {
		return func(spec model.ToolSpec, next CallFunc) CallFunc {
			return func(ctx context.Context, args json.RawMessage) (any, error) {
				trail = append(trail, name+">"+spec.Name)
				v, err := next(ctx, args)
				trail = append(trail, "<"+name)
				return v, err
			}
		}
	}
	base := MustTool("echo", "Echo.", func(_ context.Context, a struct {
		S string `json:"s"`
	}) (string, error) {
		trail = append(trail, "tool")
		return a.S, nil
	})
	tool := Wrap(base, mark("a"), mark("b"))
	v, err := tool.Call(context.Background(), json.RawMessage(`{"s":"hi"}`))
	if err != nil || v != "hi" || strings.Join(trail, " ") != "a>echo b>echo tool <b <a" {
		t.Fatalf("%v %v %v", v, err, trail)
	}
	if string(tool.Spec().Parameters) != string(base.Spec().Parameters) {
		t.Fatal("spec changed")
	}
	wrongState := Wrap(MustTool("w", "", func(context.Context, struct{}) (Output[MessagesState], error) {
		return Output[MessagesState]{}, nil
	}), Timeout(time.Second))
	if _, err := NewToolNode(noteMessages, []Tool{wrongState}); err == nil {
		t.Fatal("a wrapped tool returning another state's Output was accepted")
	}
}

func TestLoggingMiddleware(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	boom := errors.New("boom")
	tool := Wrap(MustTool("fail", "", func(context.Context, struct{}) (string, error) { return "", boom }), Logging(l))
	ctx := WithToolCallID(graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "t1", RunID: "r1"}), "c1")
	if _, err := tool.Call(ctx, nil); err != boom {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log:\n%s", buf.String())
	}
	var end map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &end); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"msg": "tool call failed", "level": "WARN", "tool": "fail", "call_id": "c1", "thread_id": "t1", "run_id": "r1", "error": "boom"} {
		if end[k] != want {
			t.Errorf("%s = %v, want %v (%s)", k, end[k], want, lines[1])
		}
	}
	if _, ok := end["duration"]; !ok {
		t.Error("no duration")
	}
}

func TestTimeoutMiddleware(t *testing.T) {
	slow := Wrap(MustTool("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}), Timeout(20*time.Millisecond))
	_, err := slow.Call(context.Background(), nil)
	if !errors.Is(err, ErrToolTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"slow"`) {
		t.Fatalf("err = %v", err)
	}
	// The run's own cancellation is not a timeout of the tool.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Call(ctx, nil); errors.Is(err, ErrToolTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRequireApprovalInAgent(t *testing.T) {
	var ran []string
	del := Wrap(MustTool("delete_file", "Delete a file.", func(_ context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		ran = append(ran, a.Path)
		return "deleted " + a.Path, nil
	}), RequireApproval())
	for _, tc := range []struct {
		name   string
		answer any
		ran    string
		result string
	}{
		{"approve", Approval{Approve: true}, "a.txt", "deleted a.txt"},
		{"edit", map[string]any{"approve": true, "arguments": map[string]any{"path": "b.txt"}}, "b.txt", "deleted b.txt"},
		{"refuse", false, "", DeclinedContent},
		{"refuse with a message", Approval{Message: "not that one"}, "", "not that one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			m := scripted.New(scripted.Calls(call("c1", "delete_file", `{"path":"a.txt"}`)), scripted.Text("ok"))
			agent, err := NewReactAgent(m, []Tool{del}, WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			res, err := agent.Invoke(ctx, graph.Updates(Messages.Add(model.User("clean up"))), graph.WithThread("1"))
			if err != nil || len(res.Interrupts) != 1 || ran != nil {
				t.Fatalf("first run: %v %+v %v", err, res.Interrupts, ran)
			}
			req, ok := res.Interrupts[0].Value.(ApprovalRequest)
			if !ok || req.Tool != "delete_file" || req.CallID != "c1" || string(req.Arguments) != `{"path":"a.txt"}` {
				t.Fatalf("interrupt value %#v", res.Interrupts[0].Value)
			}
			res, err = agent.Invoke(ctx, graph.Updates[MessagesState](), graph.WithThread("1"), graph.WithResume(tc.answer))
			if err != nil {
				t.Fatal(err)
			}
			msgs := res.State.Messages
			if tool := msgs[2]; tool.Role != model.RoleTool || tool.Content != tc.result {
				t.Fatalf("tool message %+v", tool)
			}
			if strings.Join(ran, ",") != tc.ran {
				t.Fatalf("ran %v, want %q", ran, tc.ran)
			}
		})
	}
	if _, err := del.Call(context.Background(), json.RawMessage(`{"path":"x"}`)); !errors.Is(err, graph.ErrNotInRun) {
		t.Fatalf("outside a run: %v", err)
	}
}
