package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/model"
)

// Failure is how a stand-in backend fails instead of answering.
type Failure int

const (
	// Succeed answers with the Answer's Response.
	Succeed Failure = iota
	// Reject refuses the request as the API refuses a malformed one (for
	// HTTP APIs, status 400 with the API's error object).
	Reject
	// Overload fails as an overloaded API does (for HTTP APIs, status 503
	// or the API's overload status), on every attempt.
	Overload
	// Hang accepts the request and says nothing until the caller gives up.
	Hang
)

// Answer is one scripted answer of a stand-in backend.
type Answer struct {
	Response model.Response
	Fail     Failure
}

// Backend is a chat model under test, wired to a stand-in that gives the
// scripted answers, one per request in order; once they run out it repeats
// the last, so an Overload answer fails every retry.
type Backend struct {
	Model model.ChatModel
	// Received returns the requests the stand-in has received, decoded from
	// its wire format back into model requests, in order. Message ids and
	// names, tool-message statuses, usage, and the response format's name,
	// description and strictness need not survive: not every wire has a
	// place for them.
	Received func() []model.Request
}

// Run checks the chat models newBackend makes, in subtests. newBackend is
// called once per subtest with that subtest's script and releases what it
// starts with t.Cleanup. Stand-ins of retrying adapters should let them
// retry quickly (a few milliseconds of backoff, at most two retries).
//
// The answers Run scripts use only what every backend can carry: content
// text, tool calls with ids and JSON-object arguments, the finish reasons
// stop and tool_calls, and usage with input, output, total and cache-read
// counts where total is input plus output.
func Run(t *testing.T, newBackend func(t *testing.T, answers ...Answer) Backend) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBackend) })
	}
}

type newBackendFunc = func(t *testing.T, answers ...Answer) Backend

var tests = []struct {
	name string
	run  func(t *testing.T, newBackend newBackendFunc)
}{
	{"RoundTrip", roundTrip},
	{"ToolCalls", toolCalls},
	{"StreamEqualsGenerate", streamEqualsGenerate},
	{"Usage", usage},
	{"ResponseFormat", responseFormat},
	{"Cancel", cancel},
	{"EarlyStop", earlyStop},
	{"Errors", errorClasses},
	{"InvalidMessage", invalidMessage},
	{"Concurrent", concurrent},
}

var (
	searchTool = model.ToolSpec{
		Name:        "search",
		Description: "Search the web.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
	}
	pythonTool = model.ToolSpec{
		Name:        "run_python",
		Description: "Run a Python 3 program and return its output.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"the program"}},"required":["code"]}`),
	}
	callA = model.ToolCall{ID: "call_a1", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(6*7)"}`)}
	callB = model.ToolCall{ID: "call_b2", Name: "search", Arguments: json.RawMessage(`{"q":"größte Primzahl \"unter\" 10⁶\n"}`)}
)

func text(content string) Answer {
	return Answer{Response: model.Response{Message: model.Message{Role: model.RoleAssistant, Content: content}, FinishReason: model.FinishStop}}
}

func calls(content string, cs ...model.ToolCall) Answer {
	return Answer{Response: model.Response{Message: model.Message{Role: model.RoleAssistant, Content: content, ToolCalls: cs}, FinishReason: model.FinishToolCalls}}
}

func ask(content string) model.Request {
	return model.Request{Messages: []model.Message{model.User(content)}}
}

// conversation holds every role and both kinds of tool message.
func conversation() []model.Message {
	return []model.Message{
		model.System("You answer with Python.\nBe brief."),
		model.User("what is six times seven, and the largest prime below 10⁶?"),
		model.Assistant("Let me run both.", callA, callB),
		model.ToolResult(callA.ID, callA.Name, "42\n"),
		model.ToolError(callB.ID, callB.Name, "search is offline: answer without it"),
		model.User(`thanks — now say "done"`),
	}
}

// sent is what of a message every wire carries.
type sent struct {
	Role       model.Role
	Content    string
	ToolCalls  []sentCall
	ToolCallID string
}

type sentCall struct{ ID, Name, Arguments string }

func project(msgs []model.Message) []sent {
	out := make([]sent, len(msgs))
	for i, m := range msgs {
		out[i] = sent{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, sentCall{c.ID, c.Name, canonical(c.Arguments)})
		}
	}
	return out
}

// canonical re-encodes JSON so that equal values compare equal as text.
func canonical(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON: " + string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func show(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func received(t *testing.T, b Backend, want int) []model.Request {
	t.Helper()
	got := b.Received()
	if len(got) != want {
		t.Fatalf("the backend received %d requests, want %d", len(got), want)
	}
	return got
}

// checkAnswer compares a model's answer with the scripted one, ignoring the
// message id, which must be set.
func checkAnswer(t *testing.T, how string, got model.Response, want model.Response) {
	t.Helper()
	if got.Message.ID == "" {
		t.Errorf("%s: the answer's message has no id", how)
	}
	if got.Message.Role != model.RoleAssistant {
		t.Errorf("%s: role %q, want assistant", how, got.Message.Role)
	}
	if g, w := project([]model.Message{got.Message}), project([]model.Message{want.Message}); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: answer\n%s\nwant\n%s", how, show(g), show(w))
	}
	if got.FinishReason != want.FinishReason {
		t.Errorf("%s: finish reason %q, want %q", how, got.FinishReason, want.FinishReason)
	}
	if got.Usage != want.Usage {
		t.Errorf("%s: usage %+v, want %+v", how, got.Usage, want.Usage)
	}
	switch {
	case want.Usage.IsZero() && got.Message.Usage != nil:
		t.Errorf("%s: message usage %+v from an answer without usage", how, *got.Message.Usage)
	case !want.Usage.IsZero() && (got.Message.Usage == nil || *got.Message.Usage != want.Usage):
		t.Errorf("%s: message usage %v, want %+v", how, got.Message.Usage, want.Usage)
	}
}

func roundTrip(t *testing.T, newBackend newBackendFunc) {
	want := text("done")
	b := newBackend(t, want)
	parallel := true
	req := model.Request{Messages: conversation(), Tools: []model.ToolSpec{pythonTool, searchTool}, ParallelToolCalls: &parallel}
	got, err := b.Model.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, "Generate", got, want.Response)
	r := received(t, b, 1)[0]
	if g, w := project(r.Messages), project(req.Messages); !reflect.DeepEqual(g, w) {
		t.Errorf("the backend received\n%s\nwant\n%s", show(g), show(w))
	}
	if len(r.Tools) != 2 {
		t.Fatalf("the backend received %d tools, want 2", len(r.Tools))
	}
	for i, tool := range req.Tools {
		g := r.Tools[i]
		if g.Name != tool.Name || g.Description != tool.Description || canonical(g.Parameters) != canonical(tool.Parameters) {
			t.Errorf("tool %d arrived as %+v, want %+v", i, g, tool)
		}
	}
}

func toolCalls(t *testing.T, newBackend newBackendFunc) {
	for _, tc := range []struct {
		name   string
		answer Answer
	}{
		{"One", calls("", callA)},
		{"Parallel", calls("", callA, callB)},
		{"WithText", calls("Running it.", callB, callA)},
		{"NoArguments", calls("", model.ToolCall{ID: "call_now", Name: "now", Arguments: json.RawMessage(`{}`)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, tc.answer)
			got, err := b.Model.Generate(context.Background(), model.Request{Messages: conversation()[:2], Tools: []model.ToolSpec{pythonTool, searchTool}})
			if err != nil {
				t.Fatal(err)
			}
			checkAnswer(t, "Generate", got, tc.answer.Response)
			for _, c := range got.Message.ToolCalls {
				if !json.Valid(c.Arguments) {
					t.Errorf("call %s: arguments %q are not JSON", c.ID, c.Arguments)
				}
			}
		})
	}
}

// collect consumes a stream, checking the chunk rules, and returns the Done
// response together with what the deltas add up to.
func collect(t *testing.T, s func(yield func(model.Chunk, error) bool)) (done model.Response, deltas model.Response) {
	t.Helper()
	var (
		text  strings.Builder
		calls model.ToolCallAssembler
		seen  bool
	)
	for c, err := range s {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if seen {
			t.Fatal("stream: a chunk after the Done chunk")
		}
		if c.Done != nil {
			done, seen = *c.Done, true
			if c.Delta != "" || len(c.ToolCalls) > 0 {
				t.Error("stream: the Done chunk carries deltas too")
			}
			continue
		}
		text.WriteString(c.Delta)
		for _, d := range c.ToolCalls {
			calls.Add(d)
		}
		if c.Usage != nil {
			deltas.Usage = *c.Usage
		}
	}
	if !seen {
		t.Fatal("stream: no Done chunk")
	}
	deltas.Message = model.Message{Role: model.RoleAssistant, Content: text.String(), ToolCalls: calls.Calls()}
	return done, deltas
}

func streamEqualsGenerate(t *testing.T, newBackend newBackendFunc) {
	long := strings.Repeat("Streaming splits this text into pieces; ", 40) + "done."
	withUsage := calls("Checking.", callA, callB)
	withUsage.Response.Usage = model.Usage{InputTokens: 321, OutputTokens: 54, TotalTokens: 375}
	for _, tc := range []struct {
		name   string
		answer Answer
	}{
		{"Text", text(long)},
		{"ToolCalls", calls("", callA, callB)},
		{"TextToolCallsUsage", withUsage},
		{"Unicode", text("ünïcødé ✓ — \"quoted\"\n\ttabbed 🎉")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, tc.answer, tc.answer)
			req := model.Request{Messages: conversation()[:2], Tools: []model.ToolSpec{pythonTool, searchTool}}
			gen, err := b.Model.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			done, deltas := collect(t, b.Model.Stream(context.Background(), req))
			checkAnswer(t, "Generate", gen, tc.answer.Response)
			checkAnswer(t, "Stream's Done chunk", done, tc.answer.Response)
			if g, w := project([]model.Message{deltas.Message}), project([]model.Message{done.Message}); !reflect.DeepEqual(g, w) {
				t.Errorf("the deltas add up to\n%s\nbut Done holds\n%s", show(g), show(w))
			}
			if deltas.Usage != done.Usage {
				t.Errorf("usage chunk %+v, Done usage %+v", deltas.Usage, done.Usage)
			}
		})
	}
}

func usage(t *testing.T, newBackend newBackendFunc) {
	a := text("42")
	a.Response.Usage = model.Usage{InputTokens: 1200, OutputTokens: 30, TotalTokens: 1230, CacheReadTokens: 1024}
	b := newBackend(t, a, a)
	gen, err := b.Model.Generate(context.Background(), ask("six times seven?"))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, "Generate", gen, a.Response)
	done, _ := collect(t, b.Model.Stream(context.Background(), ask("six times seven?")))
	checkAnswer(t, "Stream", done, a.Response)
	if got, want := model.TotalUsage([]model.Message{gen.Message, done.Message}), a.Response.Usage.Add(a.Response.Usage); got != want {
		t.Errorf("TotalUsage %+v, want %+v", got, want)
	}
}

func responseFormat(t *testing.T, newBackend newBackendFunc) {
	type verdict struct {
		Answer     int    `json:"answer"`
		Confidence string `json:"confidence" jsonschema:"enum=low,enum=high"`
	}
	out, err := model.NewOutput[verdict]("verdict", "The answer and how sure it is.")
	if err != nil {
		t.Fatal(err)
	}
	a := text(`{"answer":42,"confidence":"high"}`)
	b := newBackend(t, a)
	req := ask("six times seven?")
	req.ResponseFormat = out.Format()
	got, err := b.Model.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	v, err := out.Decode(got.Message)
	if err != nil || v != (verdict{42, "high"}) {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	f := received(t, b, 1)[0].ResponseFormat
	if f == nil || canonical(f.Schema) != canonical(out.Format().Schema) {
		t.Fatalf("the backend received response format %+v, want %+v", f, out.Format())
	}
}

// within fails the test if f does not return within d.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

func streamErr(s func(yield func(model.Chunk, error) bool)) error {
	_, err := model.Collect(s)
	return err
}

func cancel(t *testing.T, newBackend newBackendFunc) {
	hang := Answer{Fail: Hang}
	t.Run("AlreadyCancelled", func(t *testing.T) {
		b := newBackend(t, text("never"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.Model.Generate(ctx, ask("hi")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate: %v, want context.Canceled", err)
		}
		if err := streamErr(b.Model.Stream(ctx, ask("hi"))); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stream: %v, want context.Canceled", err)
		}
	})
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, m model.ChatModel) error
	}{
		{"Generate", func(ctx context.Context, m model.ChatModel) error { _, err := m.Generate(ctx, ask("hi")); return err }},
		{"Stream", func(ctx context.Context, m model.ChatModel) error { return streamErr(m.Stream(ctx, ask("hi"))) }},
	} {
		t.Run(tc.name+"WhileWaiting", func(t *testing.T) {
			b := newBackend(t, hang)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(20*time.Millisecond, cancel)
			err := within(t, 5*time.Second, tc.name, func() error { return tc.call(ctx, b.Model) })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%v, want context.Canceled", err)
			}
		})
		t.Run(tc.name+"Deadline", func(t *testing.T) {
			b := newBackend(t, hang)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := within(t, 5*time.Second, tc.name, func() error { return tc.call(ctx, b.Model) })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%v, want context.DeadlineExceeded", err)
			}
		})
	}
}

func earlyStop(t *testing.T, newBackend newBackendFunc) {
	long := text(strings.Repeat("many words here ", 200))
	b := newBackend(t, long, text("next"))
	n := 0
	for c, err := range b.Model.Stream(context.Background(), ask("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Done != nil {
			t.Fatal("the first chunk is already Done: the answer should arrive in pieces")
		}
		n++
		break
	}
	if n != 1 {
		t.Fatal("the stream yielded nothing")
	}
	got, err := within2(t, func() (model.Response, error) { return b.Model.Generate(context.Background(), ask("again")) })
	if err != nil || got.Message.Content != "next" {
		t.Fatalf("the call after an abandoned stream: %+v, %v", got, err)
	}
}

func within2(t *testing.T, f func() (model.Response, error)) (model.Response, error) {
	t.Helper()
	var resp model.Response
	err := within(t, 5*time.Second, "Generate", func() error {
		var err error
		resp, err = f()
		return err
	})
	return resp, err
}

func errorClasses(t *testing.T, newBackend newBackendFunc) {
	for _, tc := range []struct {
		name      string
		fail      Failure
		temporary bool
	}{
		{"Rejected", Reject, false},
		{"Temporary", Overload, true},
	} {
		for _, how := range []string{"Generate", "Stream"} {
			t.Run(tc.name+how, func(t *testing.T) {
				b := newBackend(t, Answer{Fail: tc.fail})
				var err error
				if how == "Generate" {
					_, err = b.Model.Generate(context.Background(), ask("hi"))
				} else {
					err = streamErr(b.Model.Stream(context.Background(), ask("hi")))
				}
				if err == nil {
					t.Fatal("no error")
				}
				if errors.Is(err, model.ErrTemporary) != tc.temporary || errors.Is(err, model.ErrRejected) == tc.temporary {
					t.Fatalf("%v: matches ErrTemporary %v, ErrRejected %v", err,
						errors.Is(err, model.ErrTemporary), errors.Is(err, model.ErrRejected))
				}
			})
		}
	}
}

func invalidMessage(t *testing.T, newBackend newBackendFunc) {
	b := newBackend(t, text("never"))
	for _, msgs := range [][]model.Message{
		{model.User("a"), model.Remove("x")},
		{model.User("a"), {Role: model.RoleTool, Content: "orphan"}},
		{model.User("a"), {Role: "robot", Content: "beep"}},
	} {
		req := model.Request{Messages: msgs}
		if _, err := b.Model.Generate(context.Background(), req); !errors.Is(err, model.ErrInvalidMessage) {
			t.Errorf("Generate %s: %v, want ErrInvalidMessage", msgs[1].Role, err)
		}
		if err := streamErr(b.Model.Stream(context.Background(), req)); !errors.Is(err, model.ErrInvalidMessage) {
			t.Errorf("Stream %s: %v, want ErrInvalidMessage", msgs[1].Role, err)
		}
	}
	received(t, b, 0)
}

func concurrent(t *testing.T, newBackend newBackendFunc) {
	const n = 8
	answers := make([]Answer, n)
	for i := range answers {
		answers[i] = text("same answer")
	}
	b := newBackend(t, answers...)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var (
				resp model.Response
				err  error
			)
			if i%2 == 0 {
				resp, err = b.Model.Generate(context.Background(), ask(fmt.Sprint("question ", i)))
			} else {
				resp, err = model.Collect(b.Model.Stream(context.Background(), ask(fmt.Sprint("question ", i))))
			}
			if err == nil && resp.Message.Content != "same answer" {
				err = fmt.Errorf("call %d: content %q", i, resp.Message.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	received(t, b, n)
}
