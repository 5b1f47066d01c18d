package anthropic_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/anthropic"
	"github.com/agentgraph/agentgraph/model/modeltest"
)

// standIn speaks the Messages API wire: it keeps each request's raw body and
// its decoding back into a model.Request, and answers with the next
// scripted answer as a message object or as an event stream.
type standIn struct {
	t       *testing.T
	mu      sync.Mutex
	answers []modeltest.Answer
	reqs    []model.Request
	raws    [][]byte
	headers []http.Header
}

func newStandIn(t *testing.T, answers ...modeltest.Answer) (*standIn, *anthropic.Model) {
	t.Helper()
	s := &standIn{t: t, answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	m, err := anthropic.New("claude-test", anthropic.WithAPIKey("sk-ant-test"), anthropic.WithBaseURL(srv.URL),
		anthropic.WithHTTPClient(srv.Client()), anthropic.WithMaxRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func (s *standIn) received() []model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.Request(nil), s.reqs...)
}

func (s *standIn) raw(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.raws[i])
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   []block         `json:"content"`
	IsError   bool            `json:"is_error"`
}

type wireIn struct {
	System   []block `json:"system"`
	Messages []struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	OutputConfig *struct {
		Format struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Stream bool `json:"stream"`
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var in wireIn
	if r.URL.Path != "/v1/messages" || json.Unmarshal(raw, &in) != nil {
		w.WriteHeader(404)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"unknown path `+r.URL.Path+`"}}`)
		return
	}
	var req model.Request
	for _, b := range in.System {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: b.Text})
	}
	for _, m := range in.Messages {
		if m.Role == "assistant" {
			msg := model.Message{Role: model.RoleAssistant}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
				}
			}
			req.Messages = append(req.Messages, msg)
			continue
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: b.Text})
			case "tool_result":
				msg := model.Message{Role: model.RoleTool, ToolCallID: b.ToolUseID, Status: model.StatusOK}
				if b.IsError {
					msg.Status = model.StatusError
				}
				for _, c := range b.Content {
					msg.Content += c.Text
				}
				req.Messages = append(req.Messages, msg)
			}
		}
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, model.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if in.OutputConfig != nil {
		req.ResponseFormat = &model.ResponseFormat{Schema: in.OutputConfig.Format.Schema}
	}
	s.mu.Lock()
	a := s.answers[min(len(s.reqs), len(s.answers)-1)]
	s.reqs = append(s.reqs, req)
	s.raws = append(s.raws, raw)
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()

	switch a.Fail {
	case modeltest.Reject:
		reply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1: roles must alternate"}}`)(w, r)
		return
	case modeltest.Overload:
		w.Header().Set("Retry-After-Ms", "1")
		reply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)(w, r)
		return
	case modeltest.Hang:
		<-r.Context().Done()
		return
	}
	if in.Stream {
		writeStream(w, a.Response)
		return
	}
	reply(200, string(messageJSON(a.Response)))(w, r)
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_test")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func stopReason(finish string) string {
	switch finish {
	case model.FinishStop:
		return "end_turn"
	case model.FinishToolCalls:
		return "tool_use"
	case model.FinishLength:
		return "max_tokens"
	}
	return finish
}

func wireUsage(u model.Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"output_tokens":               u.OutputTokens,
	}
}

func contentBlocks(msg model.Message) []any {
	var out []any
	if msg.Content != "" {
		out = append(out, map[string]any{"type": "text", "text": msg.Content})
	}
	for _, c := range msg.ToolCalls {
		out = append(out, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	return out
}

func messageJSON(resp model.Response) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_01test", "type": "message", "role": "assistant", "model": "claude-test",
		"content": contentBlocks(resp.Message), "stop_reason": stopReason(resp.FinishReason), "stop_sequence": nil,
		"usage": wireUsage(resp.Usage),
	})
	return b
}

// writeStream sends resp as the Messages API streams it: message_start,
// a start, deltas and a stop per content block, message_delta with the stop
// reason and output tokens, message_stop.
func writeStream(w http.ResponseWriter, resp model.Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	startUsage := wireUsage(resp.Usage)
	startUsage["output_tokens"] = min(1, resp.Usage.OutputTokens)
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_01test", "type": "message", "role": "assistant", "model": "claude-test", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	event("ping", map[string]any{"type": "ping"})
	index := 0
	pieces := func(s string, n int) []string {
		var out []string
		for len(s) > 0 {
			k := min(len(s), n)
			for k < len(s) && s[k]&0xC0 == 0x80 {
				k++ // keep UTF-8 sequences whole
			}
			out = append(out, s[:k])
			s = s[k:]
		}
		return out
	}
	if text := resp.Message.Content; text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(text, 9) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range resp.Message.ToolCalls {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
		for _, p := range pieces(string(c.Arguments), 6) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(resp.FinishReason), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": resp.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, answers ...modeltest.Answer) modeltest.Backend {
		s, m := newStandIn(t, answers...)
		return modeltest.Backend{Model: m, Received: s.received}
	})
}
