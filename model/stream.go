package model

import (
	"errors"
	"iter"
	"slices"
	"strings"
)

// ErrNoDone reports a stream that ended without error but without its Done
// chunk, so its response is incomplete.
var ErrNoDone = errors.New("model: stream ended without a final chunk")

// Collect consumes a stream and returns its response: the Done chunk's
// response when the stream ends with one. A stream without a Done chunk is
// assembled from its deltas and returned with ErrNoDone, so a caller can
// still see what arrived. The first error ends collection.
func Collect(seq iter.Seq2[Chunk, error]) (Response, error) {
	var (
		text  strings.Builder
		calls ToolCallAssembler
		usage Usage
	)
	for c, err := range seq {
		if err != nil {
			return Response{}, err
		}
		if c.Done != nil {
			return *c.Done, nil
		}
		text.WriteString(c.Delta)
		for _, d := range c.ToolCalls {
			calls.Add(d)
		}
		if c.Usage != nil {
			usage = *c.Usage
		}
	}
	msg := Assistant(text.String(), calls.Calls()...)
	return Response{Message: msg, Usage: usage}, ErrNoDone
}

// ToolCallAssembler joins streamed tool-call pieces into whole calls. The
// zero value is ready to use; it is not safe for concurrent use.
type ToolCallAssembler struct {
	calls []partialCall
}

type partialCall struct {
	index    int
	id, name string
	args     []byte
}

// Add folds one piece into the call with the same Index. The first non-empty
// ID and Name of a call win (some servers repeat them on every piece);
// argument text is appended.
func (a *ToolCallAssembler) Add(d ToolCallDelta) {
	i, found := slices.BinarySearchFunc(a.calls, d.Index, func(p partialCall, idx int) int { return p.index - idx })
	if !found {
		a.calls = slices.Insert(a.calls, i, partialCall{index: d.Index})
	}
	p := &a.calls[i]
	if p.id == "" {
		p.id = d.ID
	}
	if p.name == "" {
		p.name = d.Name
	}
	p.args = append(p.args, d.Arguments...)
}

// Len returns the number of calls seen so far.
func (a *ToolCallAssembler) Len() int { return len(a.calls) }

// Calls returns the assembled calls in index order. A call whose ID never
// arrived (some servers omit it) gets a fresh "call_" id so that its tool
// message can refer to it. Arguments pass through Arguments.
func (a *ToolCallAssembler) Calls() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(a.calls))
	for i := range a.calls {
		p := &a.calls[i]
		id := p.id
		if id == "" {
			id = "call_" + NewID()[4:]
		}
		out[i] = ToolCall{ID: id, Name: p.name, Arguments: Arguments(string(p.args))}
	}
	return out
}
