package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/agentgraph/agentgraph/model"
)

// ErrExhausted reports a call after every step of the script was used.
var ErrExhausted = errors.New("scripted: script exhausted")

// Step is one scripted answer: a response, or an error when Err is set.
type Step struct {
	Response model.Response
	Err      error
}

// Text returns a step answering with an assistant message holding text.
func Text(text string) Step {
	return Step{Response: model.Response{Message: model.Message{Role: model.RoleAssistant, Content: text}, FinishReason: "stop"}}
}

// Calls returns a step answering with an assistant message that asks for
// the given tool calls.
func Calls(calls ...model.ToolCall) Step {
	return Step{Response: model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls}, FinishReason: "tool_calls"}}
}

// Respond returns a step answering with resp as it is.
func Respond(resp model.Response) Step { return Step{Response: resp} }

// Fail returns a step that fails with err.
func Fail(err error) Step { return Step{Err: err} }

// Model is a scripted chat model. It is safe for concurrent use; concurrent
// calls take steps in the order they acquire the model.
type Model struct {
	mu       sync.Mutex
	steps    []Step
	next     int
	respond  func(context.Context, model.Request) (model.Response, error)
	requests []model.Request
}

var _ model.ChatModel = (*Model)(nil)

// New returns a model that answers each call with the next step. A step's
// message without an ID gets a fresh one on every answer.
func New(steps ...Step) *Model {
	return &Model{steps: steps}
}

// Func returns a model that answers each call with f. It is how CodeAct is
// built, and fits any stand-in whose answer depends on the request.
func Func(f func(ctx context.Context, req model.Request) (model.Response, error)) *Model {
	return &Model{respond: f}
}

// Requests returns a copy of the requests a New model has received, in
// order. Func and CodeAct models keep no history, so long benchmarks with
// them do not grow.
func (m *Model) Requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.requests...)
}

// Remaining returns how many scripted steps are left (0 for Func models).
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

// Generate returns the next scripted answer.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	if err := model.Validate(req.Messages); err != nil {
		return model.Response{}, err
	}
	resp, err := m.answer(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	if resp.Message.ID == "" {
		resp.Message.ID = model.NewID()
	}
	if resp.Message.Role == "" {
		resp.Message.Role = model.RoleAssistant
	}
	// Usage travels with the message, as adapters report it; a step may
	// give it in either place.
	switch {
	case resp.Message.Usage != nil:
		resp.Usage = *resp.Message.Usage
		u := resp.Usage
		resp.Message.Usage = &u
	case !resp.Usage.IsZero():
		u := resp.Usage
		resp.Message.Usage = &u
	}
	return resp, nil
}

func (m *Model) answer(ctx context.Context, req model.Request) (model.Response, error) {
	if m.respond != nil {
		return m.respond(ctx, req)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if m.next >= len(m.steps) {
		return model.Response{}, fmt.Errorf("%w: all %d steps were used by call %d; add steps to scripted.New",
			ErrExhausted, len(m.steps), len(m.requests))
	}
	s := m.steps[m.next]
	m.next++
	return s.Response, s.Err
}

// Stream yields the answer Generate would give as chunks: the content a word
// at a time, then each tool call in pieces (id and name first, arguments in
// two halves), then usage if the answer has any, then the Done chunk.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for _, c := range chunks(resp) {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

func chunks(resp model.Response) []model.Chunk {
	var out []model.Chunk
	text := resp.Message.Content
	for len(text) > 0 {
		end := len(text)
		for i := 0; i < len(text); i++ {
			if text[i] == ' ' || text[i] == '\n' {
				end = i + 1
				break
			}
		}
		out = append(out, model.Chunk{Delta: text[:end]})
		text = text[end:]
	}
	for i, c := range resp.Message.ToolCalls {
		out = append(out, model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: i, ID: c.ID, Name: c.Name}}})
		args := string(c.Arguments)
		half := len(args) / 2
		for _, piece := range []string{args[:half], args[half:]} {
			if piece != "" {
				out = append(out, model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: i, Arguments: piece}}})
			}
		}
	}
	if !resp.Usage.IsZero() {
		u := resp.Usage
		out = append(out, model.Chunk{Usage: &u})
	}
	return append(out, model.Chunk{Done: &resp})
}
