package prebuilt

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"unsafe"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// MessagesState is the state of a chat agent: one conversation.
type MessagesState struct {
	Messages []model.Message `json:"messages"`
}

// Messages is the key of MessagesState's conversation, named "messages" and
// reduced by AddMessages. It is marked AsMessages: a stream in
// graph.ModeMessages yields the messages nodes write to it (tool messages,
// answers not streamed token by token).
var Messages = graph.SliceField("messages", func(s *MessagesState) *[]model.Message { return &s.Messages }, AddMessages).AsMessages()

// AddMessages reduces writes into a conversation with LangGraph's
// add_messages rules, in write order:
//
//   - a message whose ID is new is appended;
//   - a message whose ID is already present replaces that message where it
//     stands;
//   - a model.Remove(id) marker deletes the message with that id;
//   - a model.RemoveAll() marker drops every message before it, the current
//     conversation included, so only what follows it in the write is kept;
//   - a message without an ID gets one.
//
// A reducer cannot fail (the engine turns a panic in one into a failed
// run), so a remove marker naming an id the conversation lacks deletes
// nothing. To treat that as an error, build markers with RemoveMessages, or
// check a write with Merge, in the node that makes it.
//
// The ids given to messages without one are derived from the message and
// the id of the message it follows, not drawn at random: the engine rebuilds
// a thread by folding its stored writes again, and must get the same ids
// each time. Ids made by model.NewID are unaffected.
//
// The current conversation is never changed in place (other readers share
// its elements): replacing or deleting works on a copy.
var AddMessages = graph.ReduceSlice(func(current, update []model.Message) []model.Message {
	out, _ := merge(current, update, false)
	return out
})

// ErrUnknownMessage reports a remove marker naming a message the
// conversation does not hold.
var ErrUnknownMessage = errors.New("prebuilt: no message with this id")

// UnknownMessageError names the id a remove marker asked for. It matches
// ErrUnknownMessage with errors.Is.
type UnknownMessageError struct{ ID string }

func (e *UnknownMessageError) Error() string {
	return fmt.Sprintf("prebuilt: cannot remove message %q: the conversation has no message with this id; remove only ids read from the state", e.ID)
}

// Is makes errors.Is(err, ErrUnknownMessage) true.
func (e *UnknownMessageError) Is(target error) bool { return target == ErrUnknownMessage }

// Merge applies update to current as AddMessages does, but reports a remove
// marker for an unknown id as an *UnknownMessageError instead of ignoring it.
// Neither slice is modified.
func Merge(current, update []model.Message) ([]model.Message, error) {
	return merge(slices.Clip(current), update, true)
}

// RemoveMessages returns remove markers for ids, to write through a messages
// key, after checking that current holds each of them.
func RemoveMessages(current []model.Message, ids ...string) ([]model.Message, error) {
	out := make([]model.Message, 0, len(ids))
	for _, id := range ids {
		if indexOf(current, id, nil) < 0 {
			return nil, &UnknownMessageError{ID: id}
		}
		out = append(out, model.Remove(id))
	}
	return out, nil
}

// indexThreshold is the conversation length from which merge finds ids
// through a map instead of scanning.
const indexThreshold = 64

func merge(current, update []model.Message, strict bool) ([]model.Message, error) {
	for i := len(update) - 1; i >= 0; i-- {
		if update[i].Role == model.RoleRemove && update[i].ID == model.RemoveAllID {
			current, update = nil, update[i+1:]
			break
		}
	}
	out := current
	owned := false // out no longer shares elements with current
	var removed map[string]bool
	var index map[string]int
	if len(current) >= indexThreshold && len(update) > 1 {
		index = make(map[string]int, len(current)+len(update))
		for i, m := range current {
			index[m.ID] = i
		}
	}
	for _, m := range update {
		if m.Role == model.RoleRemove {
			if indexOf(out, m.ID, index) < 0 {
				if strict {
					return nil, &UnknownMessageError{ID: m.ID}
				}
				continue
			}
			if removed == nil {
				removed = map[string]bool{}
			}
			removed[m.ID] = true
			continue
		}
		if m.ID == "" {
			prev := ""
			if len(out) > 0 {
				prev = out[len(out)-1].ID
			}
			m.ID = derivedID(prev, m)
		}
		if i := indexOf(out, m.ID, index); i >= 0 {
			if !owned {
				out = slices.Clone(out)
				owned = true
			}
			out[i] = m
			delete(removed, m.ID)
			continue
		}
		if index != nil {
			index[m.ID] = len(out)
		}
		out = append(out, m)
	}
	if len(removed) > 0 {
		kept := make([]model.Message, 0, len(out))
		for _, m := range out {
			if !removed[m.ID] {
				kept = append(kept, m)
			}
		}
		out = kept
	}
	return out, nil
}

func indexOf(msgs []model.Message, id string, index map[string]int) int {
	if index != nil {
		if i, ok := index[id]; ok && i < len(msgs) && msgs[i].ID == id {
			return i
		}
		return -1
	}
	if len(id) < 8 {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].ID == id {
				return i
			}
		}
		return -1
	}
	// Every id is compared with each message's until one matches: compare
	// the first eight bytes inline and call the full comparison only when
	// they agree (ids of one conversation are mostly the same length).
	head := idHead(id)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].ID; len(m) == len(id) && idHead(m) == head && m == id {
			return i
		}
	}
	return -1
}

// idHead returns the first eight bytes of an id of at least eight.
func idHead(id string) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(id), 8))
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// derivedID returns an id for m, appended after the message with id prev.
// Two messages get the same id only if they have the same content and follow
// the same message; since order is kept, that message cannot still hold an
// earlier one after it when m is appended.
func derivedID(prev string, m model.Message) string {
	h := fnv.New128a()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(prev)
	field(string(m.Role))
	field(m.Content)
	field(m.Name)
	field(m.ToolCallID)
	field(string(m.Status))
	for _, c := range m.ToolCalls {
		field(c.ID)
		field(c.Name)
		field(string(c.Arguments))
	}
	var out [4 + 26]byte
	copy(out[:], "msg_")
	idEncoding.Encode(out[4:], h.Sum(nil))
	return string(out[:])
}
