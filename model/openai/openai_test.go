package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/openai"
)

// server is an httptest server speaking the Chat Completions wire format.
// Each request is answered by the next handler; the decoded bodies are kept.
type server struct {
	*httptest.Server
	hits     atomic.Int32
	bodies   chan map[string]any
	raws     chan []byte
	headers  chan http.Header
	handlers []http.HandlerFunc
}

func newServer(t *testing.T, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{bodies: make(chan map[string]any, 64), raws: make(chan []byte, 64), headers: make(chan http.Header, 64), handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.hits.Add(1))
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"unknown path `+r.URL.Path+`","type":"invalid_request_error","code":null}}`, 404)
			return
		}
		raw, err := io.ReadAll(r.Body)
		var body map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &body)
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		s.bodies <- body
		s.raws <- raw
		s.headers <- r.Header.Clone()
		if n > len(s.handlers) {
			t.Errorf("unexpected request %d", n)
			http.Error(w, "unexpected", 500)
			return
		}
		s.handlers[n-1](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) model(t *testing.T, opts ...openai.Option) *openai.Model {
	t.Helper()
	opts = append([]openai.Option{
		openai.WithAPIKey("sk-test"), openai.WithBaseURL(s.URL + "/v1"), openai.WithHTTPClient(s.Client()),
		openai.WithBackoff(time.Millisecond, 50*time.Millisecond),
	}, opts...)
	m, err := openai.New("gpt-test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonReply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const completionWithCalls = `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1764400000,
  "model": "gpt-test",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "run_python", "arguments": "{\"code\":\"print(42)\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}
      ],
      "refusal": null
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
  "system_fingerprint": "fp_test"
}`

const completionText = `{"id":"chatcmpl-1","object":"chat.completion","created":1764400000,"model":"gpt-test",
"choices":[{"index":0,"message":{"role":"assistant","content":"Tool said:\n42"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`

const rateLimitBody = `{"error":{"message":"Rate limit reached for gpt-test in organization org-1 on requests per min (RPM): Limit 3, Used 3.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`

const serverErrorBody = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`

const badRequestBody = `{"error":{"message":"Invalid 'messages[1].tool_calls[0].function.arguments': expected a JSON string.","type":"invalid_request_error","param":"messages[1].tool_calls[0].function.arguments","code":"invalid_value"}}`

func conversation() []model.Message {
	return []model.Message{
		model.System("You run Python."),
		model.User("count the primes"),
		model.Assistant("", model.ToolCall{ID: "call_1", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(1)"}`)}),
		model.ToolResult("call_1", "run_python", "1\n"),
		model.User("again"),
	}
}

var runPython = model.ToolSpec{
	Name:        "run_python",
	Description: "Run a Python 3 program and return its output.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"the program"}},"required":["code"]}`),
}

func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v is not an array with index %d", path, v, k)
			}
			v = a[k]
		}
	}
	return v
}

func TestGenerateRequestAndResponse(t *testing.T) {
	s := newServer(t, jsonReply(200, completionWithCalls))
	m := s.model(t, openai.WithOrganization("org-1"))
	parallel := false
	temp := 0.25
	resp, err := m.Generate(context.Background(), model.Request{
		Messages:          conversation(),
		Tools:             []model.ToolSpec{runPython},
		ToolChoice:        model.ForceTool("run_python"),
		ParallelToolCalls: &parallel,
		Temperature:       &temp,
		MaxTokens:         256,
	})
	if err != nil {
		t.Fatal(err)
	}
	body, hdr := <-s.bodies, <-s.headers

	if got := hdr.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if got := hdr.Get("OpenAI-Organization"); got != "org-1" {
		t.Errorf("OpenAI-Organization %q", got)
	}
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"model"}, "gpt-test"},
		{[]any{"stream"}, nil},
		{[]any{"messages", 0, "role"}, "system"},
		{[]any{"messages", 0, "content"}, "You run Python."},
		{[]any{"messages", 1, "role"}, "user"},
		{[]any{"messages", 1, "content"}, "count the primes"},
		{[]any{"messages", 2, "role"}, "assistant"},
		{[]any{"messages", 2, "tool_calls", 0, "id"}, "call_1"},
		{[]any{"messages", 2, "tool_calls", 0, "type"}, "function"},
		{[]any{"messages", 2, "tool_calls", 0, "function", "name"}, "run_python"},
		// The wire format carries arguments as a JSON string, not an object.
		{[]any{"messages", 2, "tool_calls", 0, "function", "arguments"}, `{"code":"print(1)"}`},
		{[]any{"messages", 3, "role"}, "tool"},
		{[]any{"messages", 3, "tool_call_id"}, "call_1"},
		{[]any{"messages", 3, "content"}, "1\n"},
		{[]any{"messages", 3, "name"}, nil},
		{[]any{"messages", 3, "status"}, nil},
		{[]any{"messages", 3, "id"}, nil},
		{[]any{"messages", 4, "content"}, "again"},
		{[]any{"tools", 0, "type"}, "function"},
		{[]any{"tools", 0, "function", "name"}, "run_python"},
		{[]any{"tools", 0, "function", "description"}, "Run a Python 3 program and return its output."},
		{[]any{"tools", 0, "function", "parameters", "type"}, "object"},
		{[]any{"tools", 0, "function", "parameters", "properties", "code", "type"}, "string"},
		{[]any{"tools", 0, "function", "parameters", "required", 0}, "code"},
		{[]any{"tool_choice", "type"}, "function"},
		{[]any{"tool_choice", "function", "name"}, "run_python"},
		{[]any{"parallel_tool_calls"}, false},
		{[]any{"temperature"}, 0.25},
		{[]any{"max_completion_tokens"}, float64(256)},
		{[]any{"max_tokens"}, nil},
		{[]any{"stream_options"}, nil},
	}
	for _, c := range checks {
		if got := get(t, body, c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("body%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	if n := len(get(t, body, "messages").([]any)); n != 5 {
		t.Errorf("%d messages sent, want 5", n)
	}

	want := []model.ToolCall{
		{ID: "call_a", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(42)"}`)},
		{ID: "call_b", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Errorf("tool calls %+v", resp.Message.ToolCalls)
	}
	if resp.Message.Role != model.RoleAssistant || resp.Message.Content != "" || !strings.HasPrefix(resp.Message.ID, "msg_") {
		t.Errorf("message %+v", resp.Message)
	}
	if resp.Usage != (model.Usage{InputTokens: 82, OutputTokens: 17, TotalTokens: 99}) || resp.FinishReason != "tool_calls" {
		t.Errorf("usage %+v finish %q", resp.Usage, resp.FinishReason)
	}
}

func TestToolChoiceAndOptionalFields(t *testing.T) {
	yes := true
	zero := 0.0
	tests := []struct {
		name   string
		req    model.Request
		opts   []openai.Option
		checks map[string]any
	}{
		{"auto omits", model.Request{Tools: []model.ToolSpec{runPython}},
			nil, map[string]any{"tool_choice": nil, "parallel_tool_calls": nil, "temperature": nil, "max_completion_tokens": nil}},
		{"none", model.Request{Tools: []model.ToolSpec{runPython}, ToolChoice: model.ToolChoiceNone},
			nil, map[string]any{"tool_choice": "none"}},
		{"required", model.Request{Tools: []model.ToolSpec{runPython}, ToolChoice: model.ToolChoiceRequired, ParallelToolCalls: &yes},
			nil, map[string]any{"tool_choice": "required", "parallel_tool_calls": true}},
		{"parallel without tools is dropped", model.Request{ParallelToolCalls: &yes},
			nil, map[string]any{"parallel_tool_calls": nil, "tools": nil}},
		{"tool without parameters", model.Request{Tools: []model.ToolSpec{{Name: "now"}}},
			nil, map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{
				"name": "now", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}}}},
		{"legacy max tokens", model.Request{MaxTokens: 9},
			[]openai.Option{openai.WithLegacyMaxTokens()}, map[string]any{"max_tokens": float64(9), "max_completion_tokens": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonReply(200, completionText))
			tt.req.Messages = []model.Message{model.User("hi")}
			if _, err := s.model(t, tt.opts...).Generate(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			body := <-s.bodies
			for k, want := range tt.checks {
				if got := body[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
		})
	}

	t.Run("zero temperature is sent", func(t *testing.T) {
		s := newServer(t, jsonReply(200, completionText))
		if _, err := s.model(t).Generate(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}, Temperature: &zero}); err != nil {
			t.Fatal(err)
		}
		if got, ok := (<-s.bodies)["temperature"]; !ok || got != 0.0 {
			t.Fatalf("temperature %v (present %v), want 0", got, ok)
		}
	})
}

func TestGenerateText(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText))
	resp, err := s.model(t).Generate(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Tool said:\n42" || resp.Message.HasToolCalls() || resp.FinishReason != "stop" || resp.Usage.TotalTokens != 9 {
		t.Fatalf("got %+v", resp)
	}
}

func sse(frames ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fl := w.(http.Flusher)
		for _, f := range frames {
			fmt.Fprintf(w, "data: %s\n\n", f)
			fl.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

func frame(delta string, finish string) string {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1764400000,"model":"gpt-test","system_fingerprint":"fp_test",` +
		`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fin + `}],"usage":null}`
}

var streamFrames = []string{
	frame(`{"role":"assistant","content":"","refusal":null}`, ""),
	frame(`{"content":"Let me "}`, ""),
	frame(`{"content":"check."}`, ""),
	frame(`{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"run_python","arguments":""}}]}`, ""),
	frame(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"co"}}]}`, ""),
	frame(`{"tool_calls":[{"index":0,"function":{"arguments":"de\": \"print"}}]}`, ""),
	frame(`{"tool_calls":[{"index":1,"id":"call_y","type":"function","function":{"name":"lookup","arguments":"{\"q\""}}]}`, ""),
	frame(`{"tool_calls":[{"index":0,"function":{"arguments":"(7)\"}"}}]}`, ""),
	frame(`{"tool_calls":[{"index":1,"function":{"arguments":":\"z\"}"}}]}`, ""),
	frame(`{}`, "tool_calls"),
	`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1764400000,"model":"gpt-test","system_fingerprint":"fp_test","choices":[],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":30,"total_tokens":50}}`,
}

func TestStreamAssemblesToolCalls(t *testing.T) {
	s := newServer(t, sse(streamFrames...))
	m := s.model(t)
	var (
		text   strings.Builder
		pieces int
		usage  *model.Usage
		done   *model.Response
	)
	for c, err := range m.Stream(context.Background(), model.Request{Messages: conversation(), Tools: []model.ToolSpec{runPython}}) {
		if err != nil {
			t.Fatal(err)
		}
		if done != nil {
			t.Fatal("chunk after Done")
		}
		text.WriteString(c.Delta)
		pieces += len(c.ToolCalls)
		if c.Usage != nil {
			usage = c.Usage
		}
		done = c.Done
	}
	body := <-s.bodies
	if body["stream"] != true || !reflect.DeepEqual(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("stream %v stream_options %v", body["stream"], body["stream_options"])
	}
	if text.String() != "Let me check." || pieces != 6 {
		t.Errorf("text %q, %d tool-call pieces", text.String(), pieces)
	}
	if usage == nil || *usage != (model.Usage{InputTokens: 20, OutputTokens: 30, TotalTokens: 50}) {
		t.Errorf("usage chunk %+v", usage)
	}
	if done == nil {
		t.Fatal("no Done chunk")
	}
	want := []model.ToolCall{
		{ID: "call_x", Name: "run_python", Arguments: json.RawMessage(`{"code": "print(7)"}`)},
		{ID: "call_y", Name: "lookup", Arguments: json.RawMessage(`{"q":"z"}`)},
	}
	if !reflect.DeepEqual(done.Message.ToolCalls, want) || done.Message.Content != "Let me check." ||
		done.FinishReason != "tool_calls" || done.Usage.TotalTokens != 50 || done.Message.Role != model.RoleAssistant {
		t.Errorf("done %+v", *done)
	}

	// Collect over the same wire gives the same answer.
	s2 := newServer(t, sse(streamFrames...))
	got, err := model.Collect(s2.model(t).Stream(context.Background(), model.Request{Messages: conversation()}))
	if err != nil || !reflect.DeepEqual(got.Message.ToolCalls, want) {
		t.Fatalf("Collect: %+v, %v", got, err)
	}
}

func TestStreamErrorFrame(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", frame(`{"content":"par"}`, ""))
		fmt.Fprintf(w, "data: %s\n\n", serverErrorBody)
	})
	_, err := model.Collect(s.model(t).Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "The server had an error") {
		t.Fatalf("got %v, want the stream's error message", err)
	}
}

func TestStreamCutShort(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range streamFrames[:5] {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		// The handler returns without finish_reason or [DONE].
	})
	_, err := model.Collect(s.model(t).Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
	if !errors.Is(err, openai.ErrCutShort) {
		t.Fatalf("got %v, want ErrCutShort", err)
	}
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	req := model.Request{Messages: []model.Message{model.User("hi")}}

	t.Run("429 with Retry-After then success", func(t *testing.T) {
		s := newServer(t, jsonReply(429, rateLimitBody, "Retry-After", "1"), jsonReply(200, completionText))
		resp, err := s.model(t, openai.WithBackoff(time.Millisecond, 5*time.Second)).Generate(ctx, req)
		if err != nil || resp.Message.Content != "Tool said:\n42" || s.hits.Load() != 2 {
			t.Fatalf("%+v, %v after %d requests", resp, err, s.hits.Load())
		}
		// Both attempts carried the whole body.
		for range 2 {
			if b := <-s.bodies; get(t, b, "messages", 0, "content") != "hi" {
				t.Fatalf("retried body %v", b)
			}
		}
	})

	t.Run("500 then success", func(t *testing.T) {
		s := newServer(t, jsonReply(500, serverErrorBody), jsonReply(503, "upstream connect error"), jsonReply(200, completionText))
		resp, err := s.model(t).Generate(ctx, req)
		if err != nil || resp.Usage.TotalTokens != 9 || s.hits.Load() != 3 {
			t.Fatalf("%+v, %v after %d requests", resp, err, s.hits.Load())
		}
	})

	t.Run("stream 502 then success", func(t *testing.T) {
		s := newServer(t, jsonReply(502, "bad gateway"), sse(streamFrames...))
		resp, err := model.Collect(s.model(t).Stream(ctx, req))
		if err != nil || len(resp.Message.ToolCalls) != 2 || s.hits.Load() != 2 {
			t.Fatalf("%+v, %v after %d requests", resp, err, s.hits.Load())
		}
	})

	t.Run("400 is not retried", func(t *testing.T) {
		s := newServer(t, jsonReply(400, badRequestBody))
		_, err := s.model(t).Generate(ctx, req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("got %T %v, want *openai.APIError", err, err)
		}
		if apiErr.StatusCode != 400 || apiErr.Code != "invalid_value" || apiErr.Type != "invalid_request_error" ||
			!strings.HasPrefix(apiErr.Message, "Invalid 'messages[1]") || apiErr.Attempts != 1 || apiErr.Temporary() || s.hits.Load() != 1 {
			t.Fatalf("got %+v after %d requests", apiErr, s.hits.Load())
		}
		if !strings.Contains(err.Error(), "HTTP 400 (invalid_value): Invalid") {
			t.Fatalf("message %q", err)
		}
	})

	t.Run("gives up after max retries", func(t *testing.T) {
		s := newServer(t, jsonReply(500, serverErrorBody), jsonReply(500, serverErrorBody), jsonReply(500, serverErrorBody))
		_, err := s.model(t, openai.WithMaxRetries(2)).Generate(ctx, req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Attempts != 3 || !apiErr.Temporary() || s.hits.Load() != 3 {
			t.Fatalf("got %v after %d requests", err, s.hits.Load())
		}
	})

	t.Run("Retry-After beyond the longest wait is not waited for", func(t *testing.T) {
		s := newServer(t, jsonReply(429, rateLimitBody, "Retry-After", "3600"))
		_, err := s.model(t).Generate(ctx, req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.RetryAfter != time.Hour || apiErr.Code != "rate_limit_exceeded" || s.hits.Load() != 1 {
			t.Fatalf("got %v after %d requests", err, s.hits.Load())
		}
	})

	t.Run("non-JSON error body", func(t *testing.T) {
		s := newServer(t, jsonReply(401, "Unauthorized"))
		_, err := s.model(t).Generate(ctx, req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Message != "Unauthorized" || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCancelDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		jsonReply(429, rateLimitBody, "Retry-After", "30")(w, r)
		cancel() // the client is about to sleep 30s
	})
	m := s.model(t, openai.WithBackoff(time.Millisecond, time.Minute))
	_, err := m.Generate(ctx, model.Request{Messages: []model.Message{model.User("hi")}})
	if !errors.Is(err, context.Canceled) || s.hits.Load() != 1 {
		t.Fatalf("got %v after %d requests, want context.Canceled", err, s.hits.Load())
	}
}

func TestStreamCancelAndEarlyStop(t *testing.T) {
	released := make(chan struct{}, 2)
	blocking := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", frame(`{"content":"first"}`, ""))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // hold the stream open until the client lets go
		released <- struct{}{}
	}
	s := newServer(t, blocking, blocking)
	m := s.model(t)
	req := model.Request{Messages: []model.Message{model.User("hi")}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	for c, e := range m.Stream(ctx, req) {
		if e != nil {
			err = e
			break
		}
		if c.Delta == "first" {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}

	for c, e := range m.Stream(context.Background(), req) {
		if e != nil || c.Delta != "first" {
			t.Fatalf("%+v %v", c, e)
		}
		break
	}
	for range 2 {
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatal("the server still holds a stream the client gave up")
		}
	}
}

func TestNewConfig(t *testing.T) {
	t.Run("missing key names the variable", func(t *testing.T) {
		t.Setenv(openai.EnvAPIKey, "")
		_, err := openai.New("gpt-test")
		if !errors.Is(err, openai.ErrNoAPIKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("key and base URL from the environment", func(t *testing.T) {
		s := newServer(t, jsonReply(200, completionText))
		t.Setenv(openai.EnvAPIKey, "sk-env")
		t.Setenv(openai.EnvBaseURL, s.URL+"/v1/")
		m, err := openai.New("gpt-test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		<-s.bodies
		if got := (<-s.headers).Get("Authorization"); got != "Bearer sk-env" {
			t.Fatalf("Authorization %q", got)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		for _, opts := range [][]openai.Option{
			{openai.WithAPIKey("k"), openai.WithMaxRetries(-1)},
			{openai.WithAPIKey("k"), openai.WithBackoff(time.Second, time.Millisecond)},
		} {
			if _, err := openai.New("m", opts...); err == nil {
				t.Fatal("want an error")
			}
		}
		if _, err := openai.New("", openai.WithAPIKey("k")); err == nil {
			t.Fatal("empty model name accepted")
		}
	})
}

func TestRejectsUnsendableMessages(t *testing.T) {
	s := newServer(t)
	m := s.model(t)
	for _, msgs := range [][]model.Message{nil, {model.User("a"), model.Remove("x")}} {
		_, err := m.Generate(context.Background(), model.Request{Messages: msgs})
		if !errors.Is(err, model.ErrInvalidMessage) {
			t.Fatalf("Generate: got %v", err)
		}
		_, err = model.Collect(m.Stream(context.Background(), model.Request{Messages: msgs}))
		if !errors.Is(err, model.ErrInvalidMessage) {
			t.Fatalf("Stream: got %v", err)
		}
	}
	if s.hits.Load() != 0 {
		t.Fatal("an invalid request reached the server")
	}
}

func TestConcurrentGenerate(t *testing.T) {
	const n = 16
	handlers := make([]http.HandlerFunc, n)
	for i := range handlers {
		if i%4 == 0 {
			handlers[i] = jsonReply(503, serverErrorBody) // some calls retry
		} else {
			handlers[i] = jsonReply(200, completionText)
		}
	}
	s := newServer(t, append(handlers, jsonReply(200, completionText), jsonReply(200, completionText),
		jsonReply(200, completionText), jsonReply(200, completionText))...)
	m := s.model(t)
	errs := make(chan error, n)
	for range n {
		go func() {
			resp, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}})
			if err == nil && resp.Message.Content != "Tool said:\n42" {
				err = fmt.Errorf("content %q", resp.Message.Content)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
