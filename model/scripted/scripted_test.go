package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

func TestNewReplaysInOrder(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("rate limited")
	call := model.ToolCall{ID: "c1", Name: "t", Arguments: json.RawMessage(`{"x":1}`)}
	m := scripted.New(scripted.Calls(call), scripted.Fail(boom), scripted.Text("done"))
	req := model.Request{Messages: []model.Message{model.User("hi")}}

	r1, err := m.Generate(ctx, req)
	if err != nil || !reflect.DeepEqual(r1.Message.ToolCalls, []model.ToolCall{call}) || r1.FinishReason != "tool_calls" {
		t.Fatalf("step 1: %+v, %v", r1, err)
	}
	if r1.Message.Role != model.RoleAssistant || !strings.HasPrefix(r1.Message.ID, "msg_") {
		t.Fatalf("step 1 message %+v", r1.Message)
	}
	if _, err := m.Generate(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("step 2: %v, want %v", err, boom)
	}
	r3, err := m.Generate(ctx, req)
	if err != nil || r3.Message.Content != "done" {
		t.Fatalf("step 3: %+v, %v", r3, err)
	}
	_, err = m.Generate(ctx, req)
	if !errors.Is(err, scripted.ErrExhausted) || !strings.Contains(err.Error(), "all 3 steps") {
		t.Fatalf("past the end: %v", err)
	}
	if got := len(m.Requests()); got != 4 || m.Remaining() != 0 {
		t.Fatalf("recorded %d requests, %d remaining", got, m.Remaining())
	}
}

func TestFreshIDPerAnswer(t *testing.T) {
	step := scripted.Text("same")
	m := scripted.New(step, step)
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	a, _ := m.Generate(context.Background(), req)
	b, _ := m.Generate(context.Background(), req)
	if a.Message.ID == b.Message.ID {
		t.Fatalf("two answers share id %q", a.Message.ID)
	}
}

func TestRejectsUnsendableMessages(t *testing.T) {
	m := scripted.New(scripted.Text("x"))
	_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{model.User("a"), model.RemoveAll()}})
	if !errors.Is(err, model.ErrInvalidMessage) {
		t.Fatalf("got %v, want ErrInvalidMessage", err)
	}
	if m.Remaining() != 1 {
		t.Fatal("a rejected request used a step")
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := scripted.New(scripted.Text("x"))
	req := model.Request{Messages: []model.Message{model.User("a")}}
	if _, err := m.Generate(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate: %v", err)
	}
	if _, err := model.Collect(m.Stream(ctx, req)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream: %v", err)
	}
}

func TestConcurrentUseTakesEachStepOnce(t *testing.T) {
	const n = 64
	steps := make([]scripted.Step, n)
	for i := range steps {
		steps[i] = scripted.Text(string(rune('A' + i%26)))
	}
	m := scripted.New(steps...)
	req := model.Request{Messages: []model.Message{model.User("go")}}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := m.Generate(context.Background(), req); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m.Remaining() != 0 || len(m.Requests()) != n {
		t.Fatalf("remaining %d, requests %d", m.Remaining(), len(m.Requests()))
	}
}

func TestStreamMatchesGenerate(t *testing.T) {
	call := model.ToolCall{ID: "call_9", Name: "run_python", Arguments: json.RawMessage(`{"code":"print('hi there')"}`)}
	resp := model.Response{
		Message:      model.Message{ID: "msg_fixed", Role: model.RoleAssistant, Content: "Let me run\nthat for you.", ToolCalls: []model.ToolCall{call}},
		Usage:        model.Usage{InputTokens: 5, OutputTokens: 7, TotalTokens: 12},
		FinishReason: "tool_calls",
	}
	m := scripted.New(scripted.Respond(resp))
	var (
		text  strings.Builder
		calls model.ToolCallAssembler
		usage *model.Usage
		done  *model.Response
		n     int
	)
	for c, err := range m.Stream(context.Background(), model.Request{Messages: []model.Message{model.User("x")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if done != nil {
			t.Fatal("chunk after Done")
		}
		n++
		text.WriteString(c.Delta)
		for _, d := range c.ToolCalls {
			calls.Add(d)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		done = c.Done
	}
	if n < 5 {
		t.Fatalf("only %d chunks; content should arrive in pieces", n)
	}
	// The message carries the response's usage.
	want := resp
	want.Message.Usage = &model.Usage{InputTokens: 5, OutputTokens: 7, TotalTokens: 12}
	if done == nil || !reflect.DeepEqual(*done, want) {
		t.Fatalf("Done = %+v, want %+v", done, want)
	}
	if text.String() != resp.Message.Content || !reflect.DeepEqual(calls.Calls(), resp.Message.ToolCalls) || *usage != resp.Usage {
		t.Fatalf("deltas do not add up: %q %+v %+v", text.String(), calls.Calls(), usage)
	}
}

func TestStreamStopsEarly(t *testing.T) {
	m := scripted.New(scripted.Text("one two three"))
	for c, err := range m.Stream(context.Background(), model.Request{Messages: []model.Message{model.User("x")}}) {
		if err != nil || c.Delta != "one " {
			t.Fatalf("first chunk %+v, %v", c, err)
		}
		break
	}
}

func TestCodeAct(t *testing.T) {
	m := scripted.CodeAct(scripted.WithProgram(scripted.PrimesPrompt, scripted.PrimesProgram))
	ctx := context.Background()
	code := func(t *testing.T, msgs ...model.Message) (model.ToolCall, string) {
		t.Helper()
		r, err := m.Generate(ctx, model.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Message.ToolCalls) != 1 || r.Message.Content != "" || r.FinishReason != "tool_calls" {
			t.Fatalf("want one tool call, got %+v", r)
		}
		var args struct{ Code string }
		if err := json.Unmarshal(r.Message.ToolCalls[0].Arguments, &args); err != nil {
			t.Fatal(err)
		}
		return r.Message.ToolCalls[0], args.Code
	}

	call, got := code(t, model.User("print(6*7)"))
	if call.Name != "run_python" || call.ID != "call_1" || got != "print(6*7)" {
		t.Fatalf("call %+v code %q", call, got)
	}
	call, got = code(t, model.System("s"), model.User("hi"), model.Assistant("hello"), model.User("count the primes below 1,000,000"))
	if call.ID != "call_4" || got != scripted.PrimesProgram {
		t.Fatalf("call %+v code %q", call, got)
	}

	r, err := m.Generate(ctx, model.Request{Messages: []model.Message{
		model.User("x"), model.Assistant("", call), model.ToolResult(call.ID, call.Name, "[sb_1] exit code 0\n42"),
	}})
	if err != nil || r.Message.Content != "Tool said:\n[sb_1] exit code 0\n42" || r.Message.HasToolCalls() {
		t.Fatalf("after tool: %+v, %v", r, err)
	}

	for _, msgs := range [][]model.Message{nil, {model.User("x"), model.Assistant("y")}} {
		if _, err := m.Generate(ctx, model.Request{Messages: msgs}); !errors.Is(err, scripted.ErrNoTurn) {
			t.Fatalf("%v: got %v, want ErrNoTurn", msgs, err)
		}
	}

	named := scripted.CodeAct(scripted.WithToolName("exec"))
	r, _ = named.Generate(ctx, model.Request{Messages: []model.Message{model.User("x")}})
	if r.Message.ToolCalls[0].Name != "exec" {
		t.Fatalf("tool name %q", r.Message.ToolCalls[0].Name)
	}
}

func TestPrimesProgramRuns(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), py, "-c", scripted.PrimesProgram)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "primes below 1,000,000: 78498\nlargest gap: 114 after 492113\n"
	if string(out) != want {
		t.Fatalf("output %q, want %q", out, want)
	}
	if _, err := exec.CommandContext(t.Context(), "test", "-s", filepath.Join(dir, "primes.json")).Output(); err != nil {
		t.Fatal("primes.json not written")
	}
}

func BenchmarkCodeAct(b *testing.B) {
	m := scripted.CodeAct()
	ctx := context.Background()
	user := []model.Message{model.User("print(1)")}
	b.ReportAllocs()
	for b.Loop() {
		r, err := m.Generate(ctx, model.Request{Messages: user})
		if err != nil {
			b.Fatal(err)
		}
		call := r.Message.ToolCalls[0]
		msgs := append(user[:1:1], r.Message, model.ToolResult(call.ID, call.Name, "1"))
		if _, err := model.Collect(m.Stream(ctx, model.Request{Messages: msgs})); err != nil {
			b.Fatal(err)
		}
	}
}
