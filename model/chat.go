package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

// ToolSpec describes a tool to a model. Parameters is a JSON schema object
// for the tool's arguments; nil means the tool takes no arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolChoice says whether and which tool the model must call. The zero value
// (or ToolChoiceAuto) lets the model decide; ToolChoiceNone forbids tool
// calls; ToolChoiceRequired demands at least one; any other value is the name
// of the one tool the model must call (see ForceTool). A tool cannot be
// forced by name if it is called "auto", "none" or "required".
type ToolChoice string

const (
	ToolChoiceAuto     ToolChoice = ""
	ToolChoiceNone     ToolChoice = "none"
	ToolChoiceRequired ToolChoice = "required"
)

// ForceTool returns the ToolChoice that makes the model call the named tool.
func ForceTool(name string) ToolChoice { return ToolChoice(name) }

// Tool returns the name of the forced tool, or "" when c is auto, none or
// required.
func (c ToolChoice) Tool() string {
	switch c {
	case ToolChoiceAuto, "auto", ToolChoiceNone, ToolChoiceRequired:
		return ""
	}
	return string(c)
}

// Request is one call to a chat model.
type Request struct {
	Messages   []Message
	Tools      []ToolSpec
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows or forbids several tool calls in
	// one assistant message; nil leaves it to the model's default.
	ParallelToolCalls *bool
	// Temperature, when set, overrides the model's default sampling
	// temperature.
	Temperature *float64
	// MaxTokens bounds the completion's length; 0 means no bound.
	MaxTokens int
	// ResponseFormat, when set, asks for an answer that is one JSON value
	// matching its schema; see NewOutput.
	ResponseFormat *ResponseFormat
}

// Usage counts the tokens a call consumed, or the sum over several calls.
// InputTokens counts the whole prompt, cached tokens included; OutputTokens
// counts the whole completion, reasoning tokens included. The breakdowns are
// parts of those counts, set where the API reports them: CacheReadTokens of
// the input were read from the provider's prompt cache, CacheWriteTokens were
// written to it, and ReasoningTokens of the output were spent on hidden
// reasoning.
//
// The JSON encoding is stored with assistant messages in checkpoints: fields
// may be added, never renamed.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and v, for totals over several calls.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// IsZero reports whether u counts nothing, which is what a backend that
// reports no usage returns.
func (u Usage) IsZero() bool { return u == Usage{} }

// TotalUsage sums the usage the messages carry (see Message.Usage): the
// tokens a conversation's model calls consumed. Messages without usage count
// nothing.
func TotalUsage(msgs []Message) Usage {
	var total Usage
	for i := range msgs {
		if u := msgs[i].Usage; u != nil {
			total = total.Add(*u)
		}
	}
	return total
}

// Finish reasons adapters report in Response.FinishReason, whatever words
// their API uses; a reason without an equivalent here is passed on as the
// API gave it.
const (
	// FinishStop: the model ended its answer, or hit a stop sequence.
	FinishStop = "stop"
	// FinishToolCalls: the model asks for tool calls.
	FinishToolCalls = "tool_calls"
	// FinishLength: the answer reached Request.MaxTokens or the model's limit.
	FinishLength = "length"
	// FinishContentFilter: the provider withheld or refused the answer.
	FinishContentFilter = "content_filter"
)

// Response is a model's whole answer: one assistant message. When the
// backend reports usage, Usage holds it and Message.Usage points to a copy,
// so the count travels with the message into a conversation's state.
type Response struct {
	Message Message
	Usage   Usage
	// FinishReason says why the model stopped: one of the Finish
	// constants, or the backend's own word when none fits.
	FinishReason string
}

// ToolCallDelta is a piece of a streamed tool call. Index identifies the
// call within the message; the first piece of a call carries its ID and
// Name, and the Arguments of all pieces concatenated are the call's argument
// text. Assemble pieces with a ToolCallAssembler.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Chunk is one element of a stream. Delta is new content text; ToolCalls are
// pieces of tool calls; Usage is set when the backend reports usage. Done is
// set on the last chunk only and holds the whole assembled response, so a
// consumer that only wants the result can wait for it.
type Chunk struct {
	// MessageID, when set, is the id the assembled message will carry, so
	// a consumer can tie chunks to the message stored afterwards. Adapters
	// leave it empty; the graph node that streams a model sets it.
	MessageID string
	Delta     string
	ToolCalls []ToolCallDelta
	Usage     *Usage
	Done      *Response
}

// ChatModel is a chat model with tools. Implementations are safe for
// concurrent use.
//
// Generate returns the model's whole answer. Stream yields the answer as it
// is produced and ends with a chunk whose Done is set; after an error it
// yields nothing more. A consumer may stop a stream early; the
// implementation then releases what it holds. Both stop promptly when ctx is
// cancelled and return ctx's error. Both reject a request holding a message
// that cannot be sent (see Validate) with ErrInvalidMessage, without calling
// the backend. Failures of the backend match ErrTemporary or ErrRejected.
// When the backend reports usage, the answer's message carries it.
//
// A conformance suite, model/modeltest, checks these rules.
type ChatModel interface {
	Generate(ctx context.Context, req Request) (Response, error)
	Stream(ctx context.Context, req Request) iter.Seq2[Chunk, error]
}

// Classes of backend failure. An adapter's errors match the class they
// belong to with errors.Is, so callers can tell them apart whatever the
// backend.
var (
	// ErrTemporary: the same request may succeed later (rate limits,
	// overload, server errors). Adapters have already retried it.
	ErrTemporary = errors.New("model: temporary failure")
	// ErrRejected: the API refused the request itself (bad request, unknown
	// model, bad API key, no quota left); sending it again will not help.
	ErrRejected = errors.New("model: request rejected")
)

// ErrInvalidMessage reports a message that cannot be sent to a model.
var ErrInvalidMessage = errors.New("model: invalid message")

// InvalidMessageError says which message of a request is invalid and why.
// It matches ErrInvalidMessage with errors.Is.
type InvalidMessageError struct {
	Index  int
	Role   Role
	Reason string
}

func (e *InvalidMessageError) Error() string {
	return fmt.Sprintf("model: message %d (role %q) cannot be sent: %s", e.Index, e.Role, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidMessage) true.
func (e *InvalidMessageError) Is(target error) bool { return target == ErrInvalidMessage }

// Validate checks that msgs can be sent to a model: known roles, no remove
// markers (they belong to a reducer, not a prompt), tool messages naming the
// call they answer, and tool calls with an id, a name and JSON arguments. It returns an
// *InvalidMessageError for the first message that fails.
func Validate(msgs []Message) error {
	for i := range msgs {
		m := &msgs[i] // a pointer: a copy of each message made long conversations cost more per turn
		bad := func(reason string) error { return &InvalidMessageError{Index: i, Role: m.Role, Reason: reason} }
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return bad(fmt.Sprintf("tool call %d needs both an id and a name", j))
				}
				// Arguments of earlier turns are checked once, when the adapter
				// decodes them: checking every call again on every request
				// would cost the whole conversation each turn.
				if last := i == len(msgs)-1; last && len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
					return bad(fmt.Sprintf("tool call %d has arguments that are not JSON: build them with model.Arguments", j))
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return bad("a tool message needs ToolCallID: build it with model.ToolResult or model.ToolError")
			}
		case RoleRemove:
			return bad("a remove marker is an instruction for the AddMessages reducer; reduce it into the state instead of sending it")
		default:
			return bad("unknown role; use system, user, assistant or tool")
		}
	}
	return nil
}
