package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentgraph/agentgraph/model"
)

// DefaultMaxTokens bounds an answer when Request.MaxTokens is 0; the
// Messages API requires a bound.
const DefaultMaxTokens = 4096

// ErrNoAPIKey reports that no API key was given.
var ErrNoAPIKey = errors.New("anthropic: no API key: pass anthropic.WithAPIKey")

// ErrCutShort reports a stream that ended before its message_stop event,
// which happens when the connection drops. It matches model.ErrTemporary.
var ErrCutShort = errors.New("anthropic: the stream ended before the model finished (connection lost?): call again")

type config struct {
	apiKey, baseURL string
	httpClient      *http.Client
	maxRetries      int
	maxTokens       int
}

// Option configures New.
type Option func(*config)

// WithAPIKey sets the API key, which the SDK sends as a bearer token. New
// reads no environment variable: pass the key here.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL (default https://api.anthropic.com);
// requests go to base URL + "/v1/messages".
func WithBaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// WithHTTPClient sets the HTTP client; the default is the SDK's.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithMaxRetries sets how many times a request answered with 408, 409, 429
// or 5xx, or whose connection failed, is retried (default 2; 0 disables
// retries). The SDK waits as Retry-After asks, else backs off
// exponentially from half a second.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// WithMaxTokens sets the bound on an answer's length used when
// Request.MaxTokens is 0 (default DefaultMaxTokens).
func WithMaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// Model is a model.ChatModel over the Messages API. It is safe for
// concurrent use.
//
// Messages map to the wire as follows. System messages, wherever they are,
// become the system prompt, in order. A tool message becomes a tool_result
// block (is_error when its Status is error) in a user turn; consecutive
// messages of one wire role share a turn, so parallel tool results go back
// together. An assistant message's tool calls become tool_use blocks after
// its text. A user or assistant message with no text and no tool calls is
// left out, because the API rejects empty text blocks. Message names and
// tool-message names have no place on the wire.
//
// Request fields: ToolChoice none, required and a tool name become
// tool_choice none, any and tool; ParallelToolCalls false sets
// disable_parallel_tool_use; ResponseFormat becomes output_config.format
// (the API always holds the answer to the schema, so Strict changes
// nothing); Temperature is sent as temperature.
//
// Answers: text blocks join into the content; tool_use blocks become tool
// calls; thinking blocks are not kept. Stop reasons end_turn and
// stop_sequence become model.FinishStop, tool_use model.FinishToolCalls,
// max_tokens and model_context_window_exceeded model.FinishLength, refusal
// model.FinishContentFilter; others pass as sent. Usage counts the whole
// prompt as InputTokens (input_tokens plus cache reads and writes).
type Model struct {
	name      string
	maxTokens int
	client    sdk.Client
}

var _ model.ChatModel = (*Model)(nil)

// New returns a model that calls modelName (for example
// "claude-sonnet-4-5") with the key WithAPIKey gives.
func New(modelName string, opts ...Option) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("anthropic: empty model name: pass the model to call, such as \"claude-sonnet-4-5\"")
	}
	cfg := config{maxRetries: 2, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.apiKey == "" {
		return nil, ErrNoAPIKey
	}
	if cfg.maxRetries < 0 {
		return nil, fmt.Errorf("anthropic: max retries is %d: pass 0 or more", cfg.maxRetries)
	}
	if cfg.maxTokens <= 0 {
		return nil, fmt.Errorf("anthropic: max tokens is %d: pass a positive bound", cfg.maxTokens)
	}
	ropts := []option.RequestOption{
		// Only what the options say: no key, profile or base URL from the
		// environment.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.apiKey),
		option.WithMaxRetries(cfg.maxRetries),
	}
	if cfg.baseURL != "" {
		ropts = append(ropts, option.WithBaseURL(strings.TrimRight(cfg.baseURL, "/")+"/"))
	}
	if cfg.httpClient != nil {
		ropts = append(ropts, option.WithHTTPClient(cfg.httpClient))
	}
	return &Model{name: modelName, maxTokens: cfg.maxTokens, client: sdk.NewClient(ropts...)}, nil
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.name }

// Generate sends req and returns the model's answer. Errors from the API are
// *APIError; a cancelled ctx returns its error, also while waiting to retry.
// A request whose MaxTokens is too large for a single answer by the SDK's
// rule is streamed and collected instead.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	params, opts, err := m.params(req)
	if err != nil {
		return model.Response{}, err
	}
	if _, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil); err != nil {
		return model.Collect(m.Stream(ctx, req))
	}
	msg, err := m.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return model.Response{}, wrapError(ctx, err)
	}
	var (
		text  strings.Builder
		calls []model.ToolCall
	)
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			calls = append(calls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: model.Arguments(string(b.Input))})
		}
	}
	u := usage(msg.Usage.InputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.CacheCreationInputTokens,
		msg.Usage.OutputTokens, msg.Usage.OutputTokensDetails.ThinkingTokens)
	return model.Response{
		Message:      model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: text.String(), ToolCalls: calls, Usage: usagePtr(u)},
		Usage:        u,
		FinishReason: finishReason(msg.StopReason),
	}, nil
}

// Stream sends req with streaming on and yields text and tool-input pieces
// as the content_block_delta events bring them, a usage chunk, and a last
// chunk whose Done holds the assembled answer, equal to what Generate would
// return. Breaking out of the loop closes the connection.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params, opts, err := m.params(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		stream := m.client.Messages.NewStreaming(ctx, params, opts...)
		defer stream.Close()
		var (
			text     strings.Builder
			calls    model.ToolCallAssembler
			toolAt   = map[int64]int{} // content block index -> tool call index
			start    sdk.Usage
			use      model.Usage
			finish   string
			finished bool
		)
		for stream.Next() {
			ev := stream.Current()
			var c model.Chunk
			switch ev.Type {
			case "message_start":
				start = ev.Message.Usage
			case "content_block_start":
				switch b := ev.ContentBlock; b.Type {
				case "text":
					c.Delta = b.Text
				case "tool_use":
					i := len(toolAt)
					toolAt[ev.Index] = i
					c.ToolCalls = []model.ToolCallDelta{{Index: i, ID: b.ID, Name: b.Name}}
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					c.Delta = ev.Delta.Text
				case "input_json_delta":
					if i, ok := toolAt[ev.Index]; ok && ev.Delta.PartialJSON != "" {
						c.ToolCalls = []model.ToolCallDelta{{Index: i, Arguments: ev.Delta.PartialJSON}}
					}
				}
			case "message_delta":
				finish = finishReason(ev.Delta.StopReason)
				// The counts of message_delta are totals so far; input
				// counts appear there only when they changed.
				d := ev.Usage
				in, read, write := start.InputTokens, start.CacheReadInputTokens, start.CacheCreationInputTokens
				if d.InputTokens != 0 || d.CacheReadInputTokens != 0 || d.CacheCreationInputTokens != 0 {
					in, read, write = d.InputTokens, d.CacheReadInputTokens, d.CacheCreationInputTokens
				}
				use = usage(in, read, write, d.OutputTokens, d.OutputTokensDetails.ThinkingTokens)
				u := use
				c.Usage = &u
			case "message_stop":
				finished = true
			}
			text.WriteString(c.Delta)
			for _, d := range c.ToolCalls {
				calls.Add(d)
			}
			if c.Delta == "" && len(c.ToolCalls) == 0 && c.Usage == nil {
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Chunk{}, wrapError(ctx, err))
			return
		}
		if !finished {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, fmt.Errorf("anthropic: %w", err))
				return
			}
			yield(model.Chunk{}, &classed{ErrCutShort, model.ErrTemporary})
			return
		}
		done := model.Response{
			Message:      model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: text.String(), ToolCalls: calls.Calls(), Usage: usagePtr(use)},
			Usage:        use,
			FinishReason: finish,
		}
		yield(model.Chunk{Done: &done}, nil)
	}
}

func usage(input, cacheRead, cacheWrite, output, thinking int64) model.Usage {
	in := int(input + cacheRead + cacheWrite)
	return model.Usage{
		InputTokens: in, OutputTokens: int(output), TotalTokens: in + int(output),
		CacheReadTokens: int(cacheRead), CacheWriteTokens: int(cacheWrite), ReasoningTokens: int(thinking),
	}
}

// usagePtr returns the usage a message carries: none when the server
// counted nothing.
func usagePtr(u model.Usage) *model.Usage {
	if u.IsZero() {
		return nil
	}
	return &u
}

func finishReason(r sdk.StopReason) string {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return model.FinishStop
	case sdk.StopReasonToolUse:
		return model.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.FinishLength
	case sdk.StopReasonRefusal:
		return model.FinishContentFilter
	}
	return string(r)
}

// params translates req into the SDK's parameters.
func (m *Model) params(req model.Request) (sdk.MessageNewParams, []option.RequestOption, error) {
	var p sdk.MessageNewParams
	if len(req.Messages) == 0 {
		return p, nil, fmt.Errorf("anthropic: %w: the request has no messages", model.ErrInvalidMessage)
	}
	if err := model.Validate(req.Messages); err != nil {
		return p, nil, fmt.Errorf("anthropic: %w", err)
	}
	p.Model = sdk.Model(m.name)
	p.MaxTokens = int64(m.maxTokens)
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	type turn struct {
		assistant bool
		blocks    []sdk.ContentBlockParamUnion
	}
	var turns []turn
	for i := range req.Messages {
		msg := &req.Messages[i]
		var (
			assistant bool
			blocks    []sdk.ContentBlockParamUnion
		)
		switch msg.Role {
		case model.RoleSystem:
			if msg.Content != "" {
				p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			}
			continue
		case model.RoleUser:
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
		case model.RoleTool:
			r := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Content != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
			}
			if msg.Status == model.StatusError {
				r.IsError = sdk.Bool(true)
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &r})
		case model.RoleAssistant:
			assistant = true
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for j, c := range msg.ToolCalls {
				input, err := toolInput(c.Arguments)
				if err != nil {
					return p, nil, fmt.Errorf("anthropic: %w", &model.InvalidMessageError{Index: i, Role: msg.Role,
						Reason: fmt.Sprintf("tool call %d has arguments that are not JSON: build them with model.Arguments", j)})
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{assistant, blocks})
	}
	for _, t := range turns {
		if t.assistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(t.blocks...))
		}
	}
	if len(p.Messages) == 0 {
		return p, nil, fmt.Errorf("anthropic: %w: the request has no user or assistant message with content", model.ErrInvalidMessage)
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(req.Tools) > 0
	switch req.ToolChoice {
	case model.ToolChoiceAuto, "auto":
		if noParallel {
			p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{DisableParallelToolUse: sdk.Bool(true)}
		}
	case model.ToolChoiceNone:
		p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
	case model.ToolChoiceRequired:
		p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
		if noParallel {
			p.ToolChoice.OfAny.DisableParallelToolUse = sdk.Bool(true)
		}
	default:
		p.ToolChoice.OfTool = &sdk.ToolChoiceToolParam{Name: req.ToolChoice.Tool()}
		if noParallel {
			p.ToolChoice.OfTool.DisableParallelToolUse = sdk.Bool(true)
		}
	}
	if f := req.ResponseFormat; f != nil {
		var schema map[string]any
		if err := json.Unmarshal(f.Schema, &schema); err != nil || schema == nil {
			return p, nil, fmt.Errorf("anthropic: response format %q: the schema is not a JSON object: build it with model.NewOutput", f.Name)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	var opts []option.RequestOption
	if req.Temperature != nil {
		// The SDK's parameters have no temperature field; the API takes one.
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	return p, opts, nil
}

// toolInput returns a tool call's arguments as the object tool_use input
// holds. Argument text that was not JSON (kept by model.Arguments as a JSON
// string) goes back as an empty object: the tool message that answered the
// call already told the model what was wrong.
func toolInput(args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(args) {
		return nil, errors.New("arguments are not JSON")
	}
	if args[0] != '{' {
		return json.RawMessage(`{}`), nil
	}
	return args, nil
}

// inputSchema turns a tool's JSON schema into the SDK's input_schema.
func inputSchema(params json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(params) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var fields map[string]any
	if err := json.Unmarshal(params, &fields); err != nil || fields == nil {
		return s, errors.New("parameters are not a JSON schema object")
	}
	s.Properties = fields["properties"]
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	if req, ok := fields["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	delete(fields, "properties")
	delete(fields, "required")
	delete(fields, "type")
	if len(fields) > 0 {
		s.ExtraFields = fields
	}
	return s, nil
}
