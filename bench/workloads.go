package main

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
)

// Kind is the shape of a workload, after LangGraph's bench suite
// (libs/langgraph/bench in the langgraph repository).
type Kind string

const (
	Sequential Kind = "sequential"         // a chain of N no-op nodes
	Fanout     Kind = "fanout_to_subgraph" // a Send per subject to a compiled subgraph
	React      Kind = "react_agent"        // a ReAct loop of N model-and-tool rounds
	WideState  Kind = "wide_state"         // 15 keys, reducers, a join, a loop
)

// Workload is one row family of the table.
type Workload struct {
	Name string
	Kind Kind
	// N is the node count (sequential), subject count (fanout), rounds
	// (react) or message bound (wide_state).
	N int
	// Outer and Inner shape wide_state's input message (Outer×Inner maps).
	Outer, Inner int
	// Expect is the check value a correct run returns: nodes run (sequential),
	// finished jokes (fanout), messages in the thread (react), messages at
	// the end (wide_state).
	Expect int
}

var allWorkloads = []Workload{
	{Name: "sequential_10", Kind: Sequential, N: 10, Expect: 10},
	{Name: "sequential_1000", Kind: Sequential, N: 1000, Expect: 1000},
	{Name: "fanout_to_subgraph_10x", Kind: Fanout, N: 10, Expect: 10},
	{Name: "fanout_to_subgraph_100x", Kind: Fanout, N: 100, Expect: 100},
	{Name: "react_agent_10x", Kind: React, N: 10, Expect: 2*10 + 2},
	{Name: "react_agent_100x", Kind: React, N: 100, Expect: 2*100 + 2},
	{Name: "wide_state_25x300", Kind: WideState, N: 300, Outer: 5, Inner: 5, Expect: wideExpect(300)},
	{Name: "wide_state_15x600", Kind: WideState, N: 600, Outer: 3, Inner: 5, Expect: wideExpect(600)},
	{Name: "wide_state_9x1200", Kind: WideState, N: 1200, Outer: 3, Inner: 3, Expect: wideExpect(1200)},
}

// wideExpect is the message count at which wide_state stops: every loop
// appends messages to trigger_events, trigger_events to responses, and
// responses to messages, until there are more than n messages.
func wideExpect(n int) int {
	m, t, r := 1, 0, 0
	for m <= n {
		t += m
		r += t
		m += r
	}
	return m
}

const letters = "abcdefghijklmnopqrstuvwxyz"

// randomString returns n random lowercase letters.
func randomString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[mrand.IntN(len(letters))]
	}
	return string(b)
}

// uuid4 returns a random RFC 4122 version 4 UUID.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// --- fanout_to_subgraph ---

// subjects returns n subjects of 1000 random letters each; as in LangGraph's
// bench, a subject is a list of letters, not a string.
func subjects(n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		s := make([]string, 1000)
		for j := range s {
			k := mrand.IntN(len(letters))
			s[j] = letters[k : k+1]
		}
		out[i] = s
	}
	return out
}

// The subgraph's three steps. A subject list prints as JavaScript prints an
// array (comma-joined), so every column formats the same text.
func jokeEdit(subject string) string     { return subject + " - hohoho" }
func jokeGenerate(subject string) string { return "Joke about " + subject }
func jokeBump(joke string) string        { return joke + " a" }

var jokeEnd = strings.Repeat(" a", 10)

// jokeDone reports whether bumping stops: the joke ends in ten " a".
func jokeDone(joke string) bool { return strings.HasSuffix(joke, jokeEnd) }

// subjectText formats a subject list.
func subjectText(s []string) string { return strings.Join(s, ",") }

// --- react_agent ---

// reactScript is what the scripted model says: turns tool calls, each with
// about 3.6 KB of arguments, then a final answer; it cycles after that.
type reactScript struct {
	ToolName string
	CallIDs  []string // tool call ids, one per turn
	Queries  []string // the query argument of each call
	MsgIDs   []string // message ids, turns+1 of them
	Final    string
}

func newReactScript(turns int) *reactScript {
	s := &reactScript{ToolName: uuid4(), Final: strings.Repeat("answer", 100)}
	for range turns {
		s.CallIDs = append(s.CallIDs, uuid4())
		s.Queries = append(s.Queries, strings.Repeat(uuid4(), 100))
		s.MsgIDs = append(s.MsgIDs, uuid4())
	}
	s.MsgIDs = append(s.MsgIDs, uuid4())
	return s
}

// toolResult is what the one tool returns.
func toolResult(query string) string { return strings.Repeat("result for query: "+query, 10) }

// --- wide_state ---

// wideStep is one node of wide_state: it reads one key and writes others.
type wideStep struct {
	Name  string
	Read  string
	Write []string
}

var wideSteps = []wideStep{
	{"one", "messages", []string{"trigger_events", "primary_issue_medium"}},
	{"two", "trigger_events", []string{"autoresponse", "issue"}},
	{"three", "autoresponse", []string{"relevant_rules"}},
	{"four", "trigger_events", []string{"categorizations", "responses", "memory_docs"}},
	{"five", "categorizations", []string{"user_info", "crm_info", "email_thread_id", "slack_participants", "bot_id", "notified_assignees"}},
	{"six", "responses", []string{"messages"}},
}

// wideKeys are wide_state's 15 keys.
var wideKeys = []string{"messages", "trigger_events", "primary_issue_medium", "autoresponse", "issue",
	"relevant_rules", "memory_docs", "categorizations", "responses", "user_info", "crm_info",
	"email_thread_id", "slack_participants", "bot_id", "notified_assignees"}

var (
	wideListFields = map[string]bool{"messages": true, "trigger_events": true, "categorizations": true, "responses": true, "memory_docs": true, "relevant_rules": true}
	wideDictFields = map[string]bool{"user_info": true, "crm_info": true, "slack_participants": true, "notified_assignees": true, "autoresponse": true, "issue": true}
)

// wideWrites is a wide_state node: list keys get the read value as a list,
// dict keys its last element, other keys a random string of n letters.
func wideWrites(state map[string]any, step wideStep, n int) map[string]any {
	return wideWritesOf(state[step.Read], step, n)
}

// wideWritesOf is wideWrites given the value of the key the step reads.
func wideWritesOf(val any, step wideStep, n int) map[string]any {
	if s, ok := val.(string); ok {
		val = map[string]any{s: s}
	}
	single, list := val, []any{val}
	if l, ok := val.([]any); ok {
		list = l
		if len(l) > 0 {
			single = l[len(l)-1]
		}
	}
	out := make(map[string]any, len(step.Write))
	for _, k := range step.Write {
		switch {
		case wideListFields[k]:
			out[k] = list
		case wideDictFields[k]:
			out[k] = single
		default:
			out[k] = randomString(n)
		}
	}
	return out
}

// wideReduce folds a write into a wide_state key with that key's reducer:
// append for lists, merge for maps, "last non-null" or "truthy wins" for
// some, plain last value for the rest.
func wideReduce(key string, old, upd any) any {
	switch key {
	case "messages", "trigger_events", "categorizations", "responses":
		o, _ := old.([]any)
		u, _ := upd.([]any)
		return slices.Concat(o, u)
	case "primary_issue_medium":
		if s, _ := upd.(string); s != "" {
			return upd
		}
		return old
	case "issue":
		if m, _ := upd.(map[string]any); len(m) > 0 {
			return upd
		}
		return old
	case "user_info", "crm_info", "email_thread_id":
		if upd != nil {
			return upd
		}
		return old
	case "slack_participants", "notified_assignees":
		o, _ := old.(map[string]any)
		u, _ := upd.(map[string]any)
		m := make(map[string]any, len(o)+len(u))
		for k, v := range o {
			m[k] = v
		}
		for k, v := range u {
			m[k] = v
		}
		return m
	default: // autoresponse (always overwrite) and the plain last-value keys
		return upd
	}
}

// wideDefaults is wide_state's initial state before the input is applied.
func wideDefaults() map[string]any {
	return map[string]any{
		"messages": []any{}, "trigger_events": []any{}, "categorizations": []any{}, "responses": []any{},
		"primary_issue_medium": "email",
		"slack_participants":   map[string]any{}, "notified_assignees": map[string]any{},
	}
}

// wideMessage is the one input message: outer maps of inner maps whose
// leaves are ["hi?"*10, true, 1, 6327816386138, nil]*5.
func wideMessage(outer, inner int) map[string]any {
	var leaf []any
	for range 5 {
		leaf = append(leaf, strings.Repeat("hi?", 10), true, 1, int64(6327816386138), nil)
	}
	msg := make(map[string]any, outer)
	for i := range outer {
		m := make(map[string]any, inner)
		for j := range inner {
			m[strings.Repeat(fmt.Sprint(j), 10)] = leaf
		}
		msg[strings.Repeat(fmt.Sprint(i), 10)] = m
	}
	return msg
}

// wideDone is the loop condition after node six.
func wideDone(state map[string]any, n int) bool {
	m, _ := state["messages"].([]any)
	return len(m) > n
}
