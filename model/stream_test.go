package model_test

import (
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"testing"

	"github.com/agentgraph/agentgraph/model"
)

func seqOf(chunks []model.Chunk, err error) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if err != nil {
			yield(model.Chunk{}, err)
		}
	}
}

func TestToolCallAssembler(t *testing.T) {
	var a model.ToolCallAssembler
	// Pieces of two calls, interleaved and out of index order, with the id
	// repeated on a later piece as some servers do.
	for _, d := range []model.ToolCallDelta{
		{Index: 1, ID: "call_b", Name: "second", Arguments: `{"n":`},
		{Index: 0, ID: "call_a", Name: "run_python"},
		{Index: 0, Arguments: `{"code":`},
		{Index: 1, ID: "call_b", Arguments: `2}`},
		{Index: 0, Arguments: `"print(1)"}`},
		{Index: 2, Name: "no_id"},
	} {
		a.Add(d)
	}
	got := a.Calls()
	if len(got) != 3 || a.Len() != 3 {
		t.Fatalf("got %d calls: %+v", len(got), got)
	}
	want := []model.ToolCall{
		{ID: "call_a", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(1)"}`)},
		{ID: "call_b", Name: "second", Arguments: json.RawMessage(`{"n":2}`)},
	}
	if !reflect.DeepEqual(got[:2], want) {
		t.Fatalf("got %+v, want %+v", got[:2], want)
	}
	if got[2].Name != "no_id" || len(got[2].ID) < 10 || string(got[2].Arguments) != `{}` {
		t.Fatalf("call without id: %+v", got[2])
	}
}

func TestCollect(t *testing.T) {
	done := model.Response{Message: model.Assistant("hello"), FinishReason: "stop", Usage: model.Usage{TotalTokens: 3}}
	got, err := model.Collect(seqOf([]model.Chunk{{Delta: "hel"}, {Delta: "lo"}, {Done: &done}}, nil))
	if err != nil || !reflect.DeepEqual(got, done) {
		t.Fatalf("got %+v, %v", got, err)
	}

	boom := errors.New("boom")
	if _, err := model.Collect(seqOf([]model.Chunk{{Delta: "x"}}, boom)); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}

	partial, err := model.Collect(seqOf([]model.Chunk{
		{Delta: "a"},
		{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "c", Name: "t", Arguments: `{}`}}},
		{Usage: &model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}},
	}, nil))
	if !errors.Is(err, model.ErrNoDone) {
		t.Fatalf("got %v, want ErrNoDone", err)
	}
	if partial.Message.Content != "a" || len(partial.Message.ToolCalls) != 1 || partial.Usage.TotalTokens != 3 {
		t.Fatalf("partial response %+v", partial)
	}
}
