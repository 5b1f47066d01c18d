package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/anthropic"
	"github.com/agentgraph/agentgraph/model/modeltest"
)

func answer(resp model.Response) modeltest.Answer { return modeltest.Answer{Response: resp} }

var runPython = model.ToolSpec{
	Name:        "run_python",
	Description: "Run a Python 3 program and return its output.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"],"additionalProperties":false}`),
}

func TestRequestOnTheWire(t *testing.T) {
	s, m := newStandIn(t, answer(model.Response{Message: model.Assistant("ok"), FinishReason: model.FinishStop}))
	parallel := false
	temp := 0.0
	msgs := []model.Message{
		model.System("You run Python."),
		model.User("count"),
		model.Assistant(""), // nothing said: left out
		model.User("count the primes"),
		model.Assistant("Running both.",
			model.ToolCall{ID: "toolu_1", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(1)"}`)},
			model.ToolCall{ID: "toolu_2", Name: "run_python", Arguments: json.RawMessage(`"not json"`)}),
		model.ToolResult("toolu_1", "run_python", ""),
		model.ToolError("toolu_2", "run_python", "arguments are not a JSON object"),
		model.User("again"),
		model.System("Be brief."),
	}
	_, err := m.Generate(context.Background(), model.Request{
		Messages: msgs, Tools: []model.ToolSpec{runPython, {Name: "now"}},
		ToolChoice: model.ToolChoiceRequired, ParallelToolCalls: &parallel, Temperature: &temp, MaxTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"max_tokens":100,"messages":[` +
		`{"content":[{"text":"count","type":"text"},{"text":"count the primes","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"Running both.","type":"text"},` +
		`{"id":"toolu_1","input":{"code":"print(1)"},"name":"run_python","type":"tool_use"},` +
		`{"id":"toolu_2","input":{},"name":"run_python","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"tool_use_id":"toolu_1","type":"tool_result"},` +
		`{"tool_use_id":"toolu_2","is_error":true,"content":[{"text":"arguments are not a JSON object","type":"text"}],"type":"tool_result"},` +
		`{"text":"again","type":"text"}],"role":"user"}],` +
		`"model":"claude-test",` +
		`"system":[{"text":"You run Python.","type":"text"},{"text":"Be brief.","type":"text"}],` +
		`"tool_choice":{"disable_parallel_tool_use":true,"type":"any"},` +
		`"tools":[{"input_schema":{"properties":{"code":{"type":"string"}},"required":["code"],"type":"object","additionalProperties":false},"name":"run_python","description":"Run a Python 3 program and return its output."},` +
		`{"input_schema":{"properties":{},"type":"object"},"name":"now"}],` +
		`"temperature":0}`
	if got := s.raw(0); got != want {
		t.Fatalf("sent\n%s\nwant\n%s", got, want)
	}
	h := s.headers[0]
	if h.Get("Authorization") != "Bearer sk-ant-test" || h.Get("Anthropic-Version") == "" {
		t.Fatalf("headers: version %q authorization %q", h.Get("Anthropic-Version"), h.Get("Authorization"))
	}
}

func TestToolChoiceAndFormatOnTheWire(t *testing.T) {
	type verdict struct {
		Answer int `json:"answer"`
	}
	out, err := model.NewOutput[verdict]("verdict", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  model.Request
		want string // the request's end after "model"
	}{
		{"forced tool", model.Request{Tools: []model.ToolSpec{{Name: "now"}}, ToolChoice: model.ForceTool("now")},
			`"tool_choice":{"name":"now","type":"tool"},"tools":[{"input_schema":{"properties":{},"type":"object"},"name":"now"}]}`},
		{"none", model.Request{Tools: []model.ToolSpec{{Name: "now"}}, ToolChoice: model.ToolChoiceNone},
			`"tool_choice":{"type":"none"},"tools":[{"input_schema":{"properties":{},"type":"object"},"name":"now"}]}`},
		{"response format", model.Request{ResponseFormat: out.Format()},
			`"output_config":{"format":{"schema":{"additionalProperties":false,"properties":{"answer":{"type":"integer"}},"required":["answer"],"type":"object"},"type":"json_schema"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newStandIn(t, answer(model.Response{Message: model.Assistant(`{"answer":1}`), FinishReason: model.FinishStop}))
			tt.req.Messages = []model.Message{model.User("hi")}
			if _, err := m.Generate(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			want := `{"max_tokens":4096,"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"claude-test",` + tt.want
			if got := s.raw(0); got != want {
				t.Fatalf("sent\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	calls := []model.ToolCall{
		{ID: "toolu_a", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(6*7)"}`)},
		{ID: "toolu_b", Name: "now", Arguments: json.RawMessage(`{}`)},
	}
	resp := model.Response{
		Message:      model.Message{Role: model.RoleAssistant, Content: "Running.", ToolCalls: calls},
		Usage:        model.Usage{InputTokens: 2100, OutputTokens: 40, TotalTokens: 2140, CacheReadTokens: 2000, CacheWriteTokens: 64},
		FinishReason: model.FinishToolCalls,
	}
	_, m := newStandIn(t, answer(resp))
	req := model.Request{Messages: []model.Message{model.User("hi")}, Tools: []model.ToolSpec{runPython, {Name: "now"}}}
	gen, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gen.Message.ToolCalls, calls) || gen.Message.Content != "Running." || gen.FinishReason != "tool_calls" ||
		gen.Usage != resp.Usage || *gen.Message.Usage != resp.Usage {
		t.Fatalf("Generate %+v", gen)
	}
	var pieces []model.ToolCallDelta
	var done *model.Response
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, c.ToolCalls...)
		done = c.Done
	}
	// A start piece with id and name, then input_json_delta pieces of six
	// bytes at most; the empty delta the API sends first is dropped.
	want := []model.ToolCallDelta{
		{Index: 0, ID: "toolu_a", Name: "run_python"}, {Index: 0, Arguments: `{"code`}, {Index: 0, Arguments: `":"pri`},
		{Index: 0, Arguments: `nt(6*7`}, {Index: 0, Arguments: `)"}`},
		{Index: 1, ID: "toolu_b", Name: "now"}, {Index: 1, Arguments: `{}`},
	}
	if !reflect.DeepEqual(pieces, want) {
		t.Fatalf("pieces\n%+v\nwant\n%+v", pieces, want)
	}
	if !reflect.DeepEqual(done.Message.ToolCalls, calls) || done.Usage != resp.Usage || done.FinishReason != "tool_calls" {
		t.Fatalf("Done %+v", done)
	}
}

func TestStopReasons(t *testing.T) {
	for wire, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "refusal": "content_filter", "pause_turn": "pause_turn",
	} {
		t.Run(wire, func(t *testing.T) {
			_, m := newStandIn(t, answer(model.Response{Message: model.Assistant("x"), FinishReason: wire}))
			for how, got := range map[string]func() (model.Response, error){
				"Generate": func() (model.Response, error) {
					return m.Generate(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}})
				},
				"Stream": func() (model.Response, error) {
					return model.Collect(m.Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
				},
			} {
				resp, err := got()
				if err != nil || resp.FinishReason != want {
					t.Fatalf("%s: %q, %v; want %q", how, resp.FinishReason, err, want)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	t.Run("rejected", func(t *testing.T) {
		s, m := newStandIn(t, modeltest.Answer{Fail: modeltest.Reject})
		_, err := m.Generate(context.Background(), req)
		var apiErr *anthropic.APIError
		want := "anthropic: HTTP 400 (invalid_request_error): messages.1: roles must alternate [request req_test]"
		if !errors.As(err, &apiErr) || err.Error() != want || apiErr.Temporary() || !errors.Is(err, model.ErrRejected) || len(s.received()) != 1 {
			t.Fatalf("got  %v\nwant %s", err, want)
		}
		var sdkErr *sdk.Error
		if !errors.As(err, &sdkErr) || sdkErr.StatusCode != 400 || m.Name() != "claude-test" {
			t.Fatalf("the SDK's error under it: %v; name %q", sdkErr, m.Name())
		}
	})
	t.Run("overloaded after retries", func(t *testing.T) {
		s, m := newStandIn(t, modeltest.Answer{Fail: modeltest.Overload})
		_, err := m.Generate(context.Background(), req)
		want := "anthropic: HTTP 529 (overloaded_error): Overloaded [request req_test]; the error is temporary: try again later or raise anthropic.WithMaxRetries"
		if err == nil || err.Error() != want || !errors.Is(err, model.ErrTemporary) || len(s.received()) != 2 {
			t.Fatalf("got  %v after %d requests\nwant %s", err, len(s.received()), want)
		}
	})
	t.Run("error event in a stream", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
			io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
		}))
		defer srv.Close()
		m, err := anthropic.New("claude-test", anthropic.WithAPIKey("k"), anthropic.WithBaseURL(srv.URL), anthropic.WithHTTPClient(srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = model.Collect(m.Stream(context.Background(), req))
		want := "anthropic: stream error (overloaded_error): Overloaded; the error is temporary: try again later or raise anthropic.WithMaxRetries"
		if err == nil || err.Error() != want || !errors.Is(err, model.ErrTemporary) {
			t.Fatalf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("cut short", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		}))
		defer srv.Close()
		m, err := anthropic.New("claude-test", anthropic.WithAPIKey("k"), anthropic.WithBaseURL(srv.URL), anthropic.WithHTTPClient(srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = model.Collect(m.Stream(context.Background(), req))
		if !errors.Is(err, anthropic.ErrCutShort) || !errors.Is(err, model.ErrTemporary) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
		if _, err := anthropic.New("claude-test"); !errors.Is(err, anthropic.ErrNoAPIKey) || err.Error() != "anthropic: no API key: pass anthropic.WithAPIKey" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts []anthropic.Option
			want string
		}{
			{"", []anthropic.Option{anthropic.WithAPIKey("k")}, `anthropic: empty model name: pass the model to call, such as "claude-sonnet-4-5"`},
			{"m", []anthropic.Option{anthropic.WithAPIKey("k"), anthropic.WithMaxRetries(-1)}, "anthropic: max retries is -1: pass 0 or more"},
			{"m", []anthropic.Option{anthropic.WithAPIKey("k"), anthropic.WithMaxTokens(0)}, "anthropic: max tokens is 0: pass a positive bound"},
		} {
			if _, err := anthropic.New(tc.name, tc.opts...); err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		}
	})
	t.Run("nothing to send", func(t *testing.T) {
		_, m := newStandIn(t, modeltest.Answer{})
		_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{model.System("only a system prompt")}})
		if !errors.Is(err, model.ErrInvalidMessage) || !strings.Contains(err.Error(), "no user or assistant message with content") {
			t.Fatalf("got %v", err)
		}
	})
}
