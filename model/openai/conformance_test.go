package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/modeltest"
	"github.com/agentgraph/agentgraph/model/openai"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, answers ...modeltest.Answer) modeltest.Backend {
		s := &standIn{answers: answers}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		m, err := openai.New("gpt-test", openai.WithAPIKey("sk-test"), openai.WithBaseURL(srv.URL+"/v1"),
			openai.WithHTTPClient(srv.Client()), openai.WithMaxRetries(1), openai.WithBackoff(time.Millisecond, 5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return modeltest.Backend{Model: m, Received: s.received}
	})
}

// standIn speaks the Chat Completions wire: it decodes each request back
// into a model.Request and answers with the next scripted answer, as JSON or
// as an event stream.
type standIn struct {
	mu      sync.Mutex
	answers []modeltest.Answer
	reqs    []model.Request
}

func (s *standIn) received() []model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.Request(nil), s.reqs...)
}

type wireIn struct {
	Messages []struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat *struct {
		JSONSchema struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Stream bool `json:"stream"`
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in wireIn
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var req model.Request
	for _, m := range in.Messages {
		msg := model.Message{Role: model.Role(m.Role), ToolCallID: m.ToolCallID}
		if m.Content != nil {
			msg.Content = *m.Content
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, tool := range in.Tools {
		req.Tools = append(req.Tools, model.ToolSpec{Name: tool.Function.Name, Description: tool.Function.Description, Parameters: tool.Function.Parameters})
	}
	if f := in.ResponseFormat; f != nil {
		req.ResponseFormat = &model.ResponseFormat{Name: f.JSONSchema.Name, Description: f.JSONSchema.Description, Schema: f.JSONSchema.Schema, Strict: f.JSONSchema.Strict}
	}
	s.mu.Lock()
	a := s.answers[min(len(s.reqs), len(s.answers)-1)]
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	switch a.Fail {
	case modeltest.Reject:
		jsonReply(400, badRequestBody)(w, r)
		return
	case modeltest.Overload:
		jsonReply(503, serverErrorBody)(w, r)
		return
	case modeltest.Hang:
		<-r.Context().Done()
		return
	}
	resp := a.Response
	var usage any
	if !resp.Usage.IsZero() {
		u := resp.Usage
		usage = map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
			"prompt_tokens_details": map[string]int{"cached_tokens": u.CacheReadTokens}}
	}
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if !in.Stream {
		var content any
		if resp.Message.Content != "" || len(resp.Message.ToolCalls) == 0 {
			content = resp.Message.Content
		}
		msg := map[string]any{"role": "assistant", "content": content, "refusal": nil}
		var cs []call
		for i, c := range resp.Message.ToolCalls {
			x := call{Index: i, ID: c.ID, Type: "function"}
			x.Function.Name, x.Function.Arguments = c.Name, string(c.Arguments)
			cs = append(cs, x)
		}
		if cs != nil {
			msg["tool_calls"] = cs
		}
		body, _ := json.Marshal(map[string]any{"id": "chatcmpl-c", "object": "chat.completion", "created": 1764400000, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": resp.FinishReason}}, "usage": usage})
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(delta any, finish any, usage any) {
		choices := []any{}
		if delta != nil {
			choices = append(choices, map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish})
		}
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-c", "object": "chat.completion.chunk", "created": 1764400000, "model": "gpt-test",
			"choices": choices, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for text := resp.Message.Content; text != ""; {
		n := min(len(text), 7)
		for n < len(text) && text[n]&0xC0 == 0x80 {
			n++ // keep UTF-8 sequences whole
		}
		send(map[string]any{"content": text[:n]}, nil, nil)
		text = text[n:]
	}
	for i, c := range resp.Message.ToolCalls {
		first := call{Index: i, ID: c.ID, Type: "function"}
		first.Function.Name = c.Name
		send(map[string]any{"tool_calls": []call{first}}, nil, nil)
		args := string(c.Arguments)
		for len(args) > 0 {
			n := min(len(args), 5)
			for n < len(args) && args[n]&0xC0 == 0x80 {
				n++
			}
			piece := call{Index: i}
			piece.Function.Arguments = args[:n]
			send(map[string]any{"tool_calls": []call{piece}}, nil, nil)
			args = args[n:]
		}
	}
	send(map[string]any{}, resp.FinishReason, nil)
	if usage != nil {
		send(nil, nil, usage)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}
