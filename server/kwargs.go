package server

import (
	"encoding/json"
	"slices"
)

// runCreate is the body of every run-creating request.
type runCreate struct {
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           *commandBody    `json:"command"`
	CheckpointID      string          `json:"checkpoint_id"`
	Checkpoint        *checkpointBody `json:"checkpoint"`
	Metadata          map[string]any  `json:"metadata"`
	Config            *configBody     `json:"config"`
	Context           json.RawMessage `json:"context"`
	Webhook           string          `json:"webhook"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	OnDisconnect      string          `json:"on_disconnect"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	StreamResumable   bool            `json:"stream_resumable"`
	AfterSeconds      float64         `json:"after_seconds"`
	IfNotExists       string          `json:"if_not_exists"`
	OnCompletion      string          `json:"on_completion"`
	Durability        string          `json:"durability"`
	FeedbackKeys      []string        `json:"feedback_keys"`
}

type commandBody struct {
	Resume json.RawMessage `json:"resume"`
	Update json.RawMessage `json:"update"`
	Goto   json.RawMessage `json:"goto"`
}

type checkpointBody struct {
	CheckpointID  string         `json:"checkpoint_id"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

type configBody struct {
	Tags           []string       `json:"tags,omitempty"`
	RecursionLimit *int           `json:"recursion_limit,omitempty"`
	Configurable   map[string]any `json:"configurable,omitempty"`
}

type historyBody struct {
	Limit      *int            `json:"limit"`
	Before     string          `json:"before"`
	Metadata   map[string]any  `json:"metadata"`
	Checkpoint *checkpointBody `json:"checkpoint"`
}

// runKwargs is what a run record keeps of its request (the wire's kwargs).
type runKwargs struct {
	Input           json.RawMessage `json:"input,omitempty"`
	Command         *commandBody    `json:"command,omitempty"`
	Config          *configBody     `json:"config,omitempty"`
	Context         json.RawMessage `json:"context,omitempty"`
	StreamMode      []string        `json:"stream_mode"`
	InterruptBefore json.RawMessage `json:"interrupt_before,omitempty"`
	InterruptAfter  json.RawMessage `json:"interrupt_after,omitempty"`
	Webhook         string          `json:"webhook,omitempty"`
	FeedbackKeys    []string        `json:"feedback_keys,omitempty"`
	Temporary       bool            `json:"temporary"`
	Subgraphs       bool            `json:"subgraphs"`
	Resumable       bool            `json:"resumable"`
	CheckpointID    string          `json:"checkpoint_id,omitempty"`
	Durability      string          `json:"durability,omitempty"`
	Metadata        map[string]any  `json:"-"`
}

func (k *runKwargs) checkpointID() string { return k.CheckpointID }

// streamModes are the stream modes a run sends to its clients.
type streamModes struct {
	values, updates, messagesTuple, custom, debug bool
}

var knownModes = []string{"values", "messages", "messages-tuple", "updates", "events", "tasks", "checkpoints", "debug", "custom", "tools"}

// normalizeModes reads stream_mode (a string or a list); none means values.
func normalizeModes(raw json.RawMessage) ([]string, error) {
	var modes []string
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			modes = []string{one}
		} else if err := json.Unmarshal(raw, &modes); err != nil {
			return nil, badField("stream_mode", "expected a mode or a list of modes")
		}
	}
	for _, m := range modes {
		if !slices.Contains(knownModes, m) {
			return nil, badField("stream_mode", "unknown mode %q: use one of %v", m, knownModes)
		}
	}
	if len(modes) == 0 {
		modes = []string{"values"}
	}
	return modes, nil
}

func parseStreamModes(modes []string) (streamModes, error) {
	var m streamModes
	for _, s := range modes {
		switch s {
		case "values":
			m.values = true
		case "updates":
			m.updates = true
		case "messages-tuple", "messages":
			m.messagesTuple = true
		case "custom":
			m.custom = true
		case "debug":
			m.debug = true
		}
	}
	return m, nil
}

// emptyJSON reports whether raw holds no value.
func emptyJSON(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
