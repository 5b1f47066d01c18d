package model

import (
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/agentgraph/agentgraph/internal/jsonenc"
)

// Role says who a Message is from. Its string value is what the JSON encoding
// stores and never changes.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	// RoleRemove marks an instruction, not a message: the AddMessages reducer
	// removes the message with this ID, or every message when the ID is
	// RemoveAllID. It is never sent to a model; adapters reject it with
	// ErrInvalidMessage.
	RoleRemove Role = "remove"
)

// RemoveAllID is the ID of a RoleRemove marker that removes every message.
const RemoveAllID = "__remove_all__"

// ToolStatus says whether a tool message reports a result or a failure.
type ToolStatus string

const (
	StatusOK    ToolStatus = "ok"
	StatusError ToolStatus = "error"
)

// ToolCall is one call an assistant asks for. Arguments is a JSON value,
// normally an object; see Arguments for how text that is not JSON is kept.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Message is one entry of a conversation. Its JSON encoding (field names as
// tagged) is stored in checkpoints and stays readable across releases: fields
// may be added, never renamed or repurposed.
type Message struct {
	ID      string `json:"id,omitempty"`
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message, or an optional participant
	// name on other messages.
	Name string `json:"name,omitempty"`
	// Status is set on tool messages.
	Status ToolStatus `json:"status,omitempty"`
	// Usage is set on an assistant message a model produced, when the
	// backend reported the tokens the call consumed. It is never sent back
	// to a model. TotalUsage sums it over a conversation.
	Usage *Usage `json:"usage,omitempty"`
}

// AppendJSON appends m's JSON encoding — exactly what encoding/json writes
// for it — to b, without reflection: checkpoints encode every message.
func (m *Message) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	field := func(name string) {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if m.ID != "" {
		field("id")
		b = jsonenc.String(b, m.ID)
	}
	field("role")
	b = jsonenc.String(b, string(m.Role))
	if m.Content != "" {
		field("content")
		b = jsonenc.String(b, m.Content)
	}
	if len(m.ToolCalls) > 0 {
		field("tool_calls")
		b = append(b, '[')
		for i := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			c := &m.ToolCalls[i]
			b = append(b, `{"id":`...)
			b = jsonenc.String(b, c.ID)
			b = append(b, `,"name":`...)
			b = jsonenc.String(b, c.Name)
			if len(c.Arguments) > 0 {
				b = append(b, `,"arguments":`...)
				var err error
				if b, err = jsonenc.Raw(b, c.Arguments); err != nil {
					return b, fmt.Errorf("model: message %s: tool call %s: arguments are not JSON: %w", m.ID, c.ID, err)
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		field("tool_call_id")
		b = jsonenc.String(b, m.ToolCallID)
	}
	if m.Name != "" {
		field("name")
		b = jsonenc.String(b, m.Name)
	}
	if m.Status != "" {
		field("status")
		b = jsonenc.String(b, string(m.Status))
	}
	if u := m.Usage; u != nil {
		field("usage")
		b = u.appendJSON(b)
	}
	return append(b, '}'), nil
}

// JSONSize estimates the length of m's JSON encoding (exact unless strings
// need escaping).
func (m *Message) JSONSize() int {
	n := len(`{"id":"","role":"","content":"","tool_call_id":"","name":"","status":""}`) +
		len(m.ID) + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name) + len(m.Status)
	for _, c := range m.ToolCalls {
		n += len(`,"tool_calls":[{"id":"","name":"","arguments":}]`) + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	if m.Usage != nil {
		var buf [160]byte
		n += len(`,"usage":`) + len(m.Usage.appendJSON(buf[:0]))
	}
	return n
}

// HasToolCalls reports whether m asks for at least one tool call.
func (m Message) HasToolCalls() bool { return len(m.ToolCalls) > 0 }

// System returns a new system message.
func System(text string) Message { return Message{ID: NewID(), Role: RoleSystem, Content: text} }

// User returns a new user message.
func User(text string) Message { return Message{ID: NewID(), Role: RoleUser, Content: text} }

// Assistant returns a new assistant message with optional tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	return Message{ID: NewID(), Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolResult returns a new tool message answering call callID of tool name.
func ToolResult(callID, name, content string) Message {
	return Message{ID: NewID(), Role: RoleTool, Content: content, ToolCallID: callID, Name: name, Status: StatusOK}
}

// ToolError returns a new tool message telling the model that call callID of
// tool name failed; content should say why and what to do instead.
func ToolError(callID, name, content string) Message {
	return Message{ID: NewID(), Role: RoleTool, Content: content, ToolCallID: callID, Name: name, Status: StatusError}
}

// Remove returns a marker that removes the message with the given id when
// reduced into a conversation.
func Remove(id string) Message { return Message{ID: id, Role: RoleRemove} }

// RemoveAll returns a marker that removes every message of a conversation.
func RemoveAll() Message { return Message{ID: RemoveAllID, Role: RoleRemove} }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a new message id: "msg_" followed by 128 random bits in
// lowercase base32. It draws from the runtime's per-thread generator, so
// concurrent callers do not contend on a lock.
func NewID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	var out [4 + 26]byte
	copy(out[:], "msg_")
	idEncoding.Encode(out[4:], b[:])
	return string(out[:])
}

// Arguments turns tool-call argument text as a model produced it into the
// JSON value a ToolCall holds. Empty text becomes {}. Text that is not valid
// JSON is kept as a JSON string holding that text, so the message stays
// encodable in checkpoints and the tool layer can tell the model its
// arguments were not a JSON object.
func Arguments(text string) json.RawMessage {
	if text == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	quoted, _ := json.Marshal(text) // a string always marshals
	return quoted
}

// appendJSON appends u's JSON encoding, exactly as encoding/json writes it.
func (u *Usage) appendJSON(b []byte) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	for _, f := range [...]struct {
		name string
		n    int
	}{{"cache_read_tokens", u.CacheReadTokens}, {"cache_write_tokens", u.CacheWriteTokens}, {"reasoning_tokens", u.ReasoningTokens}} {
		if f.n != 0 {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, int64(f.n), 10)
		}
	}
	return append(b, '}')
}
