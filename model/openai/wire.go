package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/model"
)

// The Chat Completions wire format, as far as this adapter sends and reads
// it. Field order is the order of the bytes sent.

type wireRequest struct {
	Model               string              `json:"model"`
	Messages            []wireMessage       `json:"messages"`
	Tools               []wireTool          `json:"tools,omitempty"`
	ToolChoice          any                 `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *wireResponseFormat `json:"response_format,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	MaxTokens           int                 `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                 `json:"max_completion_tokens,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions  `json:"stream_options,omitempty"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is absent only on an assistant message that asks for tool
	// calls and says nothing; every other message carries it, "" included.
	Content    *string        `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON string holding the arguments' JSON text.
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type wireResponseFormat struct {
	Type       string         `json:"type"`
	JSONSchema wireJSONSchema `json:"json_schema"`
}

type wireJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      bool            `json:"strict"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireCompletion struct {
	Choices []struct {
		Index        int        `json:"index"`
		Message      wireAnswer `json:"message"`
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// wireAnswer is an answer's message, or a streamed chunk's delta.
type wireAnswer struct {
	Content   string `json:"content"`
	Refusal   string `json:"refusal"`
	ToolCalls []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
			// Arguments is a JSON string as the API sends it; some
			// compatible servers send the object itself.
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireChunk struct {
	Choices []struct {
		Index        int        `json:"index"`
		Delta        wireAnswer `json:"delta"`
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage     `json:"usage"`
	Error *wireErrorBody `json:"error"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *wireUsage) usage() model.Usage {
	out := model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// argumentText returns a tool call's argument text from the wire: the
// string's contents when it is a JSON string, the JSON itself otherwise.
func argumentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// request translates req into the wire request.
func (m *Model) request(req model.Request, stream bool) ([]byte, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("openai: %w: the request has no messages", model.ErrInvalidMessage)
	}
	if err := model.Validate(req.Messages); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	out := wireRequest{Model: m.name, Messages: make([]wireMessage, len(req.Messages))}
	for i := range req.Messages {
		msg := &req.Messages[i]
		w := wireMessage{Role: string(msg.Role), Content: &msg.Content}
		switch msg.Role {
		case model.RoleTool:
			// A tool message is linked by tool_call_id alone; the wire has no
			// name or status for it, so a failure shows in the content.
			w.ToolCallID = msg.ToolCallID
		case model.RoleAssistant:
			w.Name = msg.Name
			if msg.Content == "" && len(msg.ToolCalls) > 0 {
				w.Content = nil
			}
			for _, c := range msg.ToolCalls {
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: args}})
			}
		default:
			w.Name = msg.Name
		}
		out.Messages[i] = w
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	switch req.ToolChoice {
	case model.ToolChoiceAuto:
	case "auto", model.ToolChoiceNone, model.ToolChoiceRequired:
		out.ToolChoice = string(req.ToolChoice)
	default:
		var c wireToolChoice
		c.Type, c.Function.Name = "function", req.ToolChoice.Tool()
		out.ToolChoice = c
	}
	// The API rejects parallel_tool_calls when no tools are sent.
	if len(req.Tools) > 0 {
		out.ParallelToolCalls = req.ParallelToolCalls
	}
	if f := req.ResponseFormat; f != nil {
		if len(f.Schema) == 0 {
			return nil, fmt.Errorf("openai: response format %q has no schema: build it with model.NewOutput", f.Name)
		}
		out.ResponseFormat = &wireResponseFormat{Type: "json_schema", JSONSchema: wireJSONSchema{
			Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict,
		}}
	}
	out.Temperature = req.Temperature
	if req.MaxTokens > 0 {
		if m.cfg.legacyMaxTokens {
			out.MaxTokens = req.MaxTokens
		} else {
			out.MaxCompletionTokens = req.MaxTokens
		}
	}
	if stream {
		out.Stream = true
		out.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	body, err := json.Marshal(out)
	if err != nil {
		// Only arguments or a schema that are not JSON get here.
		return nil, fmt.Errorf("openai: %w: %v", model.ErrInvalidMessage, strings.TrimPrefix(err.Error(), "json: "))
	}
	return body, nil
}
