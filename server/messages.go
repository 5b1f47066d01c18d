package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentgraph/agentgraph/model"
)

var messagesType = reflect.TypeFor[[]model.Message]()

// lcMessage is a message in LangChain's serialized form, as the Agent
// Server writes the messages of a state.
type lcMessage struct {
	Content          any            `json:"content"`
	AdditionalKwargs map[string]any `json:"additional_kwargs"`
	ResponseMetadata map[string]any `json:"response_metadata"`
	Type             string         `json:"type"`
	Name             string         `json:"name,omitempty"`
	ID               string         `json:"id,omitempty"`
	ToolCalls        *[]lcToolCall  `json:"tool_calls,omitempty"`
	InvalidToolCalls *[]any         `json:"invalid_tool_calls,omitempty"`
	UsageMetadata    *lcUsage       `json:"usage_metadata,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	Status           string         `json:"status,omitempty"`
}

type lcToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	Type string          `json:"type,omitempty"`
}

type lcUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// toLC turns a model.Message into LangChain's form.
func toLC(m model.Message) lcMessage {
	out := lcMessage{Content: m.Content, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}, ID: m.ID, Name: m.Name}
	switch m.Role {
	case model.RoleUser:
		out.Type = "human"
	case model.RoleSystem:
		out.Type = "system"
	case model.RoleAssistant:
		out.Type = "ai"
		calls, invalid := []lcToolCall{}, []any{}
		out.ToolCalls, out.InvalidToolCalls = &calls, &invalid
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if len(args) == 0 || args[0] != '{' {
				// LangChain's args are an object; text that is not one
				// travels as an invalid call instead.
				invalid = append(invalid, map[string]any{"id": c.ID, "name": c.Name, "args": string(args), "error": "arguments are not a JSON object"})
				continue
			}
			calls = append(calls, lcToolCall{ID: c.ID, Name: c.Name, Args: args})
		}
		if u := m.Usage; u != nil {
			out.UsageMetadata = &lcUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
		}
	case model.RoleTool:
		out.Type = "tool"
		out.ToolCallID = m.ToolCallID
		if m.Status == model.StatusError {
			out.Status = "error"
		}
	case model.RoleRemove:
		out.Type = "remove"
	default:
		out.Type = string(m.Role)
	}
	return out
}

// messagesToWire re-encodes a key's stored JSON ([]model.Message) in
// LangChain's form.
func messagesToWire(raw json.RawMessage) (json.RawMessage, error) {
	var msgs []model.Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, err
	}
	out := make([]lcMessage, len(msgs))
	for i, m := range msgs {
		out[i] = toLC(m)
	}
	return json.Marshal(out)
}

// messagesFromWire turns a client's messages (LangChain's form, OpenAI's
// {role, content}, or a bare string for a human message; one message or a
// list) into []model.Message JSON. field names the value in errors.
func messagesFromWire(raw json.RawMessage, field string) (json.RawMessage, error) {
	var items []json.RawMessage
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, badField(field, "expected a list of messages: %v", err)
		}
	} else {
		items = []json.RawMessage{raw}
	}
	msgs := make([]model.Message, 0, len(items))
	for i, it := range items {
		m, err := messageFromWire(it, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return json.Marshal(msgs)
}

type wireMessage struct {
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Status     string          `json:"status"`
}

type wireToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Arguments json.RawMessage `json:"arguments"`
	// OpenAI's form nests the call under "function".
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func messageFromWire(raw json.RawMessage, field string) (model.Message, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return model.Message{Role: model.RoleUser, Content: text}, nil
	}
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return model.Message{}, badField(field, "expected a message object, a string, or a list of them: %v", err)
	}
	kind := w.Type
	if kind == "" {
		kind = w.Role
	}
	kind = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(kind), "chunk"), "message")
	m := model.Message{ID: w.ID, Name: w.Name}
	switch kind {
	case "human", "user":
		m.Role = model.RoleUser
	case "ai", "assistant":
		m.Role = model.RoleAssistant
	case "system", "developer":
		m.Role = model.RoleSystem
	case "tool":
		m.Role = model.RoleTool
		m.ToolCallID = w.ToolCallID
		if m.ToolCallID == "" {
			return model.Message{}, badField(field+".tool_call_id", "a tool message needs the id of the call it answers")
		}
		m.Status = model.StatusOK
		if w.Status == "error" {
			m.Status = model.StatusError
		}
	case "remove":
		m.Role = model.RoleRemove
		if m.ID == "" {
			return model.Message{}, badField(field+".id", "a remove message needs the id of the message to remove")
		}
	case "":
		return model.Message{}, badField(field+".type", `missing: give "type" (human, ai, tool, system) or "role" (user, assistant, tool, system)`)
	default:
		return model.Message{}, badField(field+".type", "unknown message type %q: use human, ai, tool or system", w.Type+w.Role)
	}
	content, err := contentText(w.Content, field+".content")
	if err != nil {
		return model.Message{}, err
	}
	m.Content = content
	for j, c := range w.ToolCalls {
		tc := model.ToolCall{ID: c.ID, Name: c.Name}
		switch {
		case len(c.Args) > 0 && string(c.Args) != "null":
			tc.Arguments = c.Args
		case len(c.Arguments) > 0 && string(c.Arguments) != "null":
			var s string
			if json.Unmarshal(c.Arguments, &s) == nil {
				tc.Arguments = model.Arguments(s)
			} else {
				tc.Arguments = c.Arguments
			}
		case c.Function != nil:
			tc.Name = c.Function.Name
			tc.Arguments = model.Arguments(c.Function.Arguments)
		default:
			tc.Arguments = json.RawMessage(`{}`)
		}
		if tc.Name == "" {
			return model.Message{}, badField(fmt.Sprintf("%s.tool_calls[%d].name", field, j), "missing")
		}
		if !json.Valid(tc.Arguments) {
			return model.Message{}, badField(fmt.Sprintf("%s.tool_calls[%d].args", field, j), "not JSON")
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	if len(m.ToolCalls) > 0 && m.Role != model.RoleAssistant {
		return model.Message{}, badField(field+".tool_calls", "only an ai message may carry tool calls")
	}
	return m, nil
}

// contentText reads a message's content: a string, or a list of content
// blocks of which only text blocks can be kept.
func contentText(raw json.RawMessage, field string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", badField(field, "expected a string or a list of content blocks")
	}
	var b strings.Builder
	for i, bl := range blocks {
		if t, _ := bl["type"].(string); t != "text" {
			return "", badField(fmt.Sprintf("%s[%d].type", field, i), "only text content blocks are supported, got %q", t)
		}
		text, _ := bl["text"].(string)
		b.WriteString(text)
	}
	return b.String(), nil
}
