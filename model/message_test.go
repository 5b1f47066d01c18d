package model_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/model"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenMessages covers every field and role with fixed ids, so the encoding
// in testdata/messages.golden.json is the compatibility promise.
func goldenMessages() []model.Message {
	return []model.Message{
		{ID: "msg_sys", Role: model.RoleSystem, Content: "You write Python."},
		{ID: "msg_user", Role: model.RoleUser, Content: "count the primes below 1,000,000", Name: "ada"},
		{ID: "msg_asst", Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_2", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(1)"}`)},
			{ID: "call_3", Name: "noop"},
		}},
		{ID: "msg_tool", Role: model.RoleTool, Content: "1\n", ToolCallID: "call_2", Name: "run_python", Status: model.StatusOK},
		{ID: "msg_err", Role: model.RoleTool, Content: "boom", ToolCallID: "call_3", Name: "noop", Status: model.StatusError},
		{ID: "msg_reply", Role: model.RoleAssistant, Content: "Tool said:\n1\n"},
		{ID: "msg_used", Role: model.RoleAssistant, Content: "done", Usage: &model.Usage{
			InputTokens: 1200, OutputTokens: 80, TotalTokens: 1280, CacheReadTokens: 1024, CacheWriteTokens: 64, ReasoningTokens: 32}},
		{ID: "msg_used2", Role: model.RoleAssistant, Content: "ok", Usage: &model.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}},
		{ID: "msg_user", Role: model.RoleRemove},
		{ID: model.RemoveAllID, Role: model.RoleRemove},
	}
}

func TestMessageJSONGolden(t *testing.T) {
	// One message per line, as json.Marshal writes it: the exact bytes a
	// checkpoint holds.
	path := filepath.Join("testdata", "messages.golden.jsonl")
	var got []byte
	for _, m := range goldenMessages() {
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got = append(append(got, line...), '\n')
	}
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding changed; stored checkpoints depend on it.\ngot:\n%s\nwant:\n%s", got, want)
	}
	var back []model.Message
	for line := range bytes.Lines(want) {
		var m model.Message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		back = append(back, m)
	}
	if !reflect.DeepEqual(back, goldenMessages()) {
		t.Fatalf("decoding the golden file gave\n%+v\nwant\n%+v", back, goldenMessages())
	}
}

func TestMessageJSONIgnoresUnknownFields(t *testing.T) {
	var m model.Message
	in := `{"id":"msg_x","role":"user","content":"hi","added_later":{"a":1}}`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg_x" || m.Role != model.RoleUser || m.Content != "hi" {
		t.Fatalf("got %+v", m)
	}
}

func TestConstructors(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "run_python", Arguments: json.RawMessage(`{}`)}
	tests := []struct {
		name string
		got  model.Message
		want model.Message
	}{
		{"system", model.System("s"), model.Message{Role: model.RoleSystem, Content: "s"}},
		{"user", model.User("u"), model.Message{Role: model.RoleUser, Content: "u"}},
		{"assistant", model.Assistant("a"), model.Message{Role: model.RoleAssistant, Content: "a"}},
		{"assistant calls", model.Assistant("", call), model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}}},
		{"tool result", model.ToolResult("c1", "run_python", "out"), model.Message{Role: model.RoleTool, Content: "out", ToolCallID: "c1", Name: "run_python", Status: model.StatusOK}},
		{"tool error", model.ToolError("c1", "run_python", "bad"), model.Message{Role: model.RoleTool, Content: "bad", ToolCallID: "c1", Name: "run_python", Status: model.StatusError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.HasPrefix(tt.got.ID, "msg_") {
				t.Fatalf("id %q lacks msg_ prefix", tt.got.ID)
			}
			tt.want.ID = tt.got.ID
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
	if m := model.Remove("msg_a"); m.Role != model.RoleRemove || m.ID != "msg_a" {
		t.Fatalf("Remove gave %+v", m)
	}
	if m := model.RemoveAll(); m.Role != model.RoleRemove || m.ID != model.RemoveAllID {
		t.Fatalf("RemoveAll gave %+v", m)
	}
	if model.User("x").HasToolCalls() || !model.Assistant("", call).HasToolCalls() {
		t.Fatal("HasToolCalls wrong")
	}
}

func TestNewIDUniqueConcurrent(t *testing.T) {
	const workers, each = 8, 2000
	var mu sync.Mutex
	seen := make(map[string]bool, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			ids := make([]string, each)
			for i := range ids {
				ids[i] = model.NewID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if seen[id] {
					t.Errorf("duplicate id %q", id)
				}
				seen[id] = true
			}
		})
	}
	wg.Wait()
	for id := range seen {
		if len(id) != 30 || strings.Trim(id[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("malformed id %q", id)
		}
		break
	}
}

func TestArguments(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `{}`},
		{`{"code":"x"}`, `{"code":"x"}`},
		{`{"code":`, `"{\"code\":"`},
	}
	for _, tt := range tests {
		if got := string(model.Arguments(tt.in)); got != tt.want {
			t.Errorf("Arguments(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		msgs  []model.Message
		index int // -1: valid
	}{
		{"valid", []model.Message{model.System("s"), model.User("u"), model.Assistant("", model.ToolCall{ID: "c", Name: "t"}), model.ToolResult("c", "t", "ok")}, -1},
		{"remove", []model.Message{model.User("u"), model.Remove("x")}, 1},
		{"remove all", []model.Message{model.RemoveAll()}, 0},
		{"tool without call id", []model.Message{{Role: model.RoleTool, Content: "x"}}, 0},
		{"call without name", []model.Message{model.Assistant("", model.ToolCall{ID: "c"})}, 0},
		{"arguments not JSON", []model.Message{model.Assistant("", model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"a":`)})}, 0},
		{"unknown role", []model.Message{model.User("u"), {Role: "robot"}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := model.Validate(tt.msgs)
			if tt.index < 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *model.InvalidMessageError
			if !errors.As(err, &ie) || !errors.Is(err, model.ErrInvalidMessage) {
				t.Fatalf("got %v, want an InvalidMessageError", err)
			}
			if ie.Index != tt.index {
				t.Fatalf("index %d, want %d", ie.Index, tt.index)
			}
		})
	}
}

func TestToolChoice(t *testing.T) {
	for c, want := range map[model.ToolChoice]string{
		model.ToolChoiceAuto: "", "auto": "", model.ToolChoiceNone: "", model.ToolChoiceRequired: "",
		model.ForceTool("run_python"): "run_python",
	} {
		if got := c.Tool(); got != want {
			t.Errorf("%q.Tool() = %q, want %q", c, got, want)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	a := model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CacheReadTokens: 4, CacheWriteTokens: 5, ReasoningTokens: 6}
	b := model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30, CacheReadTokens: 40, CacheWriteTokens: 50, ReasoningTokens: 60}
	if got := a.Add(b); got != (model.Usage{InputTokens: 11, OutputTokens: 22, TotalTokens: 33, CacheReadTokens: 44, CacheWriteTokens: 55, ReasoningTokens: 66}) {
		t.Fatalf("got %+v", got)
	}
	if !(model.Usage{}).IsZero() || a.IsZero() || (model.Usage{ReasoningTokens: 1}).IsZero() {
		t.Fatal("IsZero wrong")
	}
}

func TestTotalUsage(t *testing.T) {
	if got := model.TotalUsage(nil); !got.IsZero() {
		t.Fatalf("TotalUsage(nil) = %+v", got)
	}
	// The golden conversation holds two assistant messages with usage and
	// six messages without.
	want := model.Usage{InputTokens: 1205, OutputTokens: 81, TotalTokens: 1286, CacheReadTokens: 1024, CacheWriteTokens: 64, ReasoningTokens: 32}
	if got := model.TotalUsage(goldenMessages()); got != want {
		t.Fatalf("TotalUsage = %+v, want %+v", got, want)
	}
}

func BenchmarkMessageJSONRoundTrip(b *testing.B) {
	msgs := goldenMessages()
	b.ReportAllocs()
	for b.Loop() {
		data, err := json.Marshal(msgs)
		if err != nil {
			b.Fatal(err)
		}
		var back []model.Message
		if err := json.Unmarshal(data, &back); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewID(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = model.NewID()
		}
	})
}
