package model

import (
	"encoding/json"
	"testing"
)

// AppendJSON must write exactly what encoding/json writes: checkpoints made
// by either must read the same.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	msgs := []Message{
		{},
		{Role: RoleUser, Content: "hi <there> & \"you\"\n\u2028 \xff"},
		User("plain"),
		Assistant("", ToolCall{ID: "call_1", Name: "run_python", Arguments: json.RawMessage(`{ "code" : "print(1 < 2)" }`)},
			ToolCall{ID: "c2", Name: "t"}),
		ToolResult("call_1", "run_python", "[sb_x] exit code 0\nok"),
		ToolError("call_1", "run_python", "boom"),
		Remove("msg_1"),
		{ID: "x", Role: RoleAssistant, Name: "bob", ToolCalls: []ToolCall{}},
		{Role: RoleAssistant, Content: "a", Usage: &Usage{}},
		{Role: RoleAssistant, Usage: &Usage{InputTokens: 3, OutputTokens: -1, TotalTokens: 1 << 40, CacheWriteTokens: 7}},
		{Role: RoleAssistant, Usage: &Usage{InputTokens: 3, CacheReadTokens: 2, ReasoningTokens: 9}},
	}
	for _, m := range msgs {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("AppendJSON = %s (%v)\nencoding/json = %s", got, err, want)
		}
		if n := m.JSONSize(); m.Usage != nil && n < len(want) {
			t.Errorf("JSONSize = %d, below the encoding's %d bytes", n, len(want))
		}
	}
	bad := Assistant("", ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"a":`)})
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("invalid arguments must fail, as encoding/json fails")
	}
}
