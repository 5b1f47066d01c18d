package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/openai"
)

// An empty answer and an empty tool result are sent with "content":"", as the
// Chat Completions reference requires; an assistant message that only asks
// for tool calls is sent without content.
func TestEmptyContentOnTheWire(t *testing.T) {
	s := newServer(t, jsonReply(200, completionText), sse(streamFrames...))
	m := s.model(t)
	msgs := []model.Message{
		model.User("say nothing"),
		model.Assistant(""),
		model.User("call it"),
		model.Assistant("", model.ToolCall{ID: "c1", Name: "noop", Arguments: json.RawMessage(`{}`)}),
		model.ToolResult("c1", "noop", ""),
		model.ToolError("c1", "noop", ""),
	}
	const want = `{"model":"gpt-test","messages":[` +
		`{"role":"user","content":"say nothing"},` +
		`{"role":"assistant","content":""},` +
		`{"role":"user","content":"call it"},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"noop","arguments":"{}"}}]},` +
		`{"role":"tool","content":"","tool_call_id":"c1"},` +
		`{"role":"tool","content":"","tool_call_id":"c1"}]}`
	if _, err := m.Generate(context.Background(), model.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	<-s.bodies
	if got := string(<-s.raws); got != want {
		t.Fatalf("sent\n%s\nwant\n%s", got, want)
	}
	if _, err := model.Collect(m.Stream(context.Background(), model.Request{Messages: msgs})); err != nil {
		t.Fatal(err)
	}
	<-s.bodies
	wantStream := want[:len(want)-1] + `,"stream":true,"stream_options":{"include_usage":true}}`
	if got := string(<-s.raws); got != wantStream {
		t.Fatalf("sent\n%s\nwant\n%s", got, wantStream)
	}
}

func TestResponseFormatOnTheWire(t *testing.T) {
	type verdict struct {
		Answer int `json:"answer"`
	}
	out, err := model.NewOutput[verdict]("verdict", "The answer.")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, jsonReply(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"answer\":42}"},"finish_reason":"stop"}]}`))
	zero := 0.0
	resp, err := s.model(t).Generate(context.Background(), model.Request{
		Messages: []model.Message{model.User("six times seven?")}, ResponseFormat: out.Format(), Temperature: &zero,
	})
	if err != nil {
		t.Fatal(err)
	}
	<-s.bodies
	const want = `{"model":"gpt-test","messages":[{"role":"user","content":"six times seven?"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"verdict","description":"The answer.",` +
		`"schema":{"properties":{"answer":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["answer"]},"strict":true}},` +
		`"temperature":0}`
	if got := string(<-s.raws); got != want {
		t.Fatalf("sent\n%s\nwant\n%s", got, want)
	}
	v, err := out.Decode(resp.Message)
	if err != nil || v.Answer != 42 {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	if resp.Message.Usage != nil || !resp.Usage.IsZero() {
		t.Fatalf("usage %+v %v from an answer without usage", resp.Usage, resp.Message.Usage)
	}
}

// A refusal reaches the caller the same way through Generate and Stream.
func TestRefusal(t *testing.T) {
	const refusal = "I can't help with that."
	s := newServer(t,
		jsonReply(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`),
		sse(frame(`{"role":"assistant","content":null,"refusal":""}`, ""),
			frame(`{"refusal":"I can't "}`, ""),
			frame(`{"refusal":"help with that."}`, ""),
			frame(`{}`, "stop")))
	m := s.model(t)
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	gen, err := m.Generate(context.Background(), req)
	if err != nil || gen.Message.Content != refusal {
		t.Fatalf("Generate: %q, %v", gen.Message.Content, err)
	}
	var deltas string
	var done *model.Response
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		deltas += c.Delta
		done = c.Done
	}
	if deltas != refusal || done == nil || done.Message.Content != refusal || done.FinishReason != "stop" {
		t.Fatalf("Stream: deltas %q, done %+v", deltas, done)
	}
}

func TestErrorClasses(t *testing.T) {
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	const quotaBody = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	tests := []struct {
		name      string
		handlers  []http.HandlerFunc
		hits      int32
		want      string
		temporary bool
		code, typ string
	}{
		{"code null shows the type", []http.HandlerFunc{jsonReply(500, serverErrorBody), jsonReply(500, serverErrorBody)}, 2,
			"openai: HTTP 500 (server_error): The server had an error while processing your request. Sorry about that! [gave up after 2 attempts]; the error is temporary: try again later or raise openai.WithMaxRetries",
			true, "", "server_error"},
		{"insufficient quota is not retried", []http.HandlerFunc{jsonReply(429, quotaBody)}, 1,
			"openai: HTTP 429 (insufficient_quota): You exceeded your current quota, please check your plan and billing details.; the account has no quota left: retrying will not help until it is topped up",
			false, "insufficient_quota", "insufficient_quota"},
		{"numeric code", []http.HandlerFunc{jsonReply(400, `{"error":{"message":"bad","type":"invalid_request_error","code":400}}`)}, 1,
			"openai: HTTP 400 (400): bad", false, "400", "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.handlers...)
			_, err := s.model(t, openai.WithMaxRetries(1)).Generate(context.Background(), req)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || err.Error() != tt.want {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
			if apiErr.Code != tt.code || apiErr.Type != tt.typ || apiErr.Temporary() != tt.temporary || s.hits.Load() != tt.hits {
				t.Fatalf("got %+v after %d requests", apiErr, s.hits.Load())
			}
			if errors.Is(err, model.ErrTemporary) != tt.temporary || errors.Is(err, model.ErrRejected) == tt.temporary {
				t.Fatalf("classes: temporary %v rejected %v", errors.Is(err, model.ErrTemporary), errors.Is(err, model.ErrRejected))
			}
		})
	}
}

// A server that answers a stream request with a whole JSON completion is
// told apart from a dropped connection.
func TestStreamAnsweredWithoutEvents(t *testing.T) {
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	s := newServer(t, jsonReply(200, completionText), jsonReply(200, `{"error":{"message":"streaming is not supported","type":"invalid_request_error","code":null}}`))
	_, err := model.Collect(s.model(t).Stream(context.Background(), req))
	want := `openai: the server did not answer the stream request with an event stream: it sent Content-Type "application/json" and "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1764400000,\"model\":\"gpt-"; the server may not support streaming: call Generate instead`
	if !errors.Is(err, openai.ErrNotStream) || !errors.Is(err, model.ErrRejected) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	_, err = model.Collect(s.model(t).Stream(context.Background(), req))
	if want := "openai: HTTP 200 (invalid_request_error): streaming is not supported"; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// Servers that leave out the index of streamed tool calls still get one call
// per id.
func TestStreamToolCallsWithoutIndex(t *testing.T) {
	s := newServer(t, sse(
		frame(`{"tool_calls":[{"id":"call_a","type":"function","function":{"name":"run_python","arguments":"{\"code\":"}}]}`, ""),
		frame(`{"tool_calls":[{"function":{"arguments":"\"print(1)\"}"}}]}`, ""),
		frame(`{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"lookup","arguments":{"q":"x"}}}]}`, ""),
		frame(`{}`, "tool_calls"),
	))
	got, err := model.Collect(s.model(t).Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_a", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(1)"}`)},
		{ID: "call_b", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)},
	}
	if !reflect.DeepEqual(got.Message.ToolCalls, want) {
		t.Fatalf("calls %+v", got.Message.ToolCalls)
	}
}

func TestUsageDetails(t *testing.T) {
	const usage = `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,` +
		`"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0}}`
	s := newServer(t,
		jsonReply(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":`+usage+`}`),
		sse(frame(`{"role":"assistant","content":"hi"}`, ""), frame(`{}`, "stop"),
			`{"id":"chatcmpl-s1","object":"chat.completion.chunk","choices":[],"usage":`+usage+`}`))
	want := model.Usage{InputTokens: 2006, OutputTokens: 300, TotalTokens: 2306, CacheReadTokens: 1920, ReasoningTokens: 256}
	m := s.model(t)
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	gen, err := m.Generate(context.Background(), req)
	if err != nil || gen.Usage != want || gen.Message.Usage == nil || *gen.Message.Usage != want {
		t.Fatalf("Generate usage %+v message %+v, %v", gen.Usage, gen.Message.Usage, err)
	}
	var last *model.Usage
	var done *model.Response
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Usage != nil {
			last = c.Usage
		}
		done = c.Done
	}
	if last == nil || *last != want || done.Usage != want || *done.Message.Usage != want {
		t.Fatalf("Stream usage chunk %+v done %+v", last, done)
	}
	if got := model.TotalUsage([]model.Message{gen.Message, done.Message}); got != want.Add(want) {
		t.Fatalf("TotalUsage %+v", got)
	}
}

// A stream that ends with [DONE] but no finish_reason is complete; one that
// ends with neither was cut short, which is temporary.
func TestStreamEndings(t *testing.T) {
	s := newServer(t,
		sse(frame(`{"content":"ok"}`, "")),
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", frame(`{"content":"o"}`, ""))
		})
	m := s.model(t)
	req := model.Request{Messages: []model.Message{model.User("hi")}}
	got, err := model.Collect(m.Stream(context.Background(), req))
	if err != nil || got.Message.Content != "ok" || got.FinishReason != "" {
		t.Fatalf("[DONE] without finish_reason: %+v, %v", got, err)
	}
	_, err = model.Collect(m.Stream(context.Background(), req))
	if !errors.Is(err, openai.ErrCutShort) || !errors.Is(err, model.ErrTemporary) || err.Error() != "openai: the stream ended before the model finished (connection lost?): call again" {
		t.Fatalf("cut short: %v", err)
	}
}

// Events may span several data lines, carry comments and CRLF line endings.
func TestStreamEventSyntax(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		io.WriteString(w, ": keep-alive\r\n\r\nevent: message\r\ndata: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"a\\nb\"}}]}\r\n\r\n")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	got, err := model.Collect(s.model(t).Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
	if err != nil || got.Message.Content != "a\nb" || got.FinishReason != "stop" {
		t.Fatalf("%+v, %v", got, err)
	}
}

// An event longer than the reader's buffer arrives whole.
func TestStreamLongEvent(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	s := newServer(t, sse(frame(`{"content":"`+long+`"}`, "stop")))
	got, err := model.Collect(s.model(t).Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}))
	if err != nil || got.Message.Content != long {
		t.Fatalf("content of %d bytes, %v", len(got.Message.Content), err)
	}
}
