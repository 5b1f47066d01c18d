package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// graphHandle is a registered graph seen through JSON: what the server
// needs of a *graph.Graph[S] without knowing S. WithGraph builds one.
type graphHandle interface {
	keys() []graph.KeyInfo
	drawing() graph.Drawing
	// prepare checks a run's input and command and returns the run, ready
	// to start; a bad request fails here, before the run is accepted.
	prepare(k *runKwargs) (runFunc, error)
	state(ctx context.Context, cfg checkpoint.Config, subgraphs bool) (*threadState, error)
	history(ctx context.Context, threadID string, h historyBody) ([]*threadState, error)
	update(ctx context.Context, cfg checkpoint.Config, values json.RawMessage, asNode string) (checkpoint.Config, error)
}

// runFunc runs a prepared run, sending its stream events to emit, and
// returns the final values (with "__interrupt__" when it paused).
type runFunc func(ctx context.Context, rc runContext) (json.RawMessage, error)

// runContext is what a run needs from the server.
type runContext struct {
	threadID, runID, graphID, assistantID string
	emit                                  func(event string, data any)
	// resumePending continues the thread's pending step instead of
	// applying the input again (a run restarted after a shutdown).
	resumePending bool
	// drain, once closed, stops the run at its next step boundary.
	drain <-chan struct{}
}

type adapter[S any] struct {
	g        *graph.Graph[S]
	keyInfo  []graph.KeyInfo
	msgKeys  map[string]bool
	nodes    map[string]bool
	graphRef string
}

// GraphOption configures one graph registered with WithGraph.
type GraphOption func(*graphConfig)

type graphConfig struct {
	description string
}

// WithDescription describes the graph's assistant.
func WithDescription(text string) GraphOption {
	return func(c *graphConfig) { c.description = text }
}

// WithGraph registers g under id: it becomes assistant id (and the
// assistant whose id is uuid5 of it, as on the reference server), and runs
// name it in assistant_id. g must be compiled with a saver for threads to
// keep state; give the server the same saver with WithSaver so it can
// delete and copy threads.
func WithGraph[S any](id string, g *graph.Graph[S], opts ...GraphOption) Option {
	return func(c *config) error {
		if id == "" {
			return errors.New("server: WithGraph: empty graph id")
		}
		if g == nil {
			return fmt.Errorf("server: WithGraph(%q): nil graph", id)
		}
		if _, dup := c.graphs[id]; dup {
			return fmt.Errorf("server: graph %q registered twice", id)
		}
		var gc graphConfig
		for _, o := range opts {
			o(&gc)
		}
		a := &adapter[S]{g: g, keyInfo: g.Keys(), msgKeys: map[string]bool{}, nodes: map[string]bool{}, graphRef: id}
		for _, k := range a.keyInfo {
			if k.Type == messagesType {
				a.msgKeys[k.Name] = true
			}
		}
		for _, n := range g.Drawing().Nodes {
			a.nodes[n] = true
		}
		c.graphs[id] = &registered{id: id, handle: a, description: gc.description}
		c.order = append(c.order, id)
		return nil
	}
}

func (a *adapter[S]) keys() []graph.KeyInfo  { return a.keyInfo }
func (a *adapter[S]) drawing() graph.Drawing { return a.g.Drawing() }

// decodeValues turns {"key": json} from a client into an Update, naming
// field in errors.
func (a *adapter[S]) decodeValues(raw json.RawMessage, field string) (graph.Update[S], bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return graph.Update[S]{}, false, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return graph.Update[S]{}, false, badField(field, "expected an object of state keys, got %s", jsonTypeOf(raw))
	}
	for name, v := range values {
		if !a.msgKeys[name] {
			continue
		}
		conv, err := messagesFromWire(v, field+"."+name)
		if err != nil {
			return graph.Update[S]{}, false, err
		}
		values[name] = conv
	}
	u, err := a.g.DecodeUpdate(values)
	if err != nil {
		return graph.Update[S]{}, false, badField(field, "%v", err)
	}
	return u, true, nil
}

func jsonTypeOf(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "invalid JSON"
	}
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// encodeState writes s as {"key": json}, messages in LangChain's form.
func (a *adapter[S]) encodeState(s S) (map[string]json.RawMessage, error) {
	m, err := a.g.EncodeState(s)
	if err != nil {
		return nil, err
	}
	for k := range a.msgKeys {
		if v, ok := m[k]; ok {
			if m[k], err = messagesToWire(v); err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
		}
	}
	return m, nil
}

// encodeUpdate writes one task's writes, by key name.
func (a *adapter[S]) encodeUpdate(u map[string]any) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(u))
	for k, v := range u {
		if msgs, ok := v.([]model.Message); ok && a.msgKeys[k] {
			lc := make([]lcMessage, len(msgs))
			for i, m := range msgs {
				lc[i] = toLC(m)
			}
			v = lc
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
}

func (a *adapter[S]) prepare(k *runKwargs) (runFunc, error) {
	input, hasInput, err := a.decodeValues(k.Input, "input")
	if err != nil {
		return nil, err
	}
	var resume *json.RawMessage
	command := false
	if c := k.Command; c != nil {
		if hasInput {
			return nil, badField("command", "give either input or command, not both")
		}
		command = true
		upd, err := a.commandUpdate(c)
		if err != nil {
			return nil, err
		}
		input, hasInput = upd, len(upd.Writes()) > 0 || len(upd.Gotos()) > 0
		if len(c.Resume) > 0 {
			r := c.Resume
			resume = &r
		}
	}
	modes, err := parseStreamModes(k.StreamMode)
	if err != nil {
		return nil, err
	}
	var opts []graph.RunOption
	if cfg := k.Config; cfg != nil {
		if cfg.RecursionLimit != nil {
			if *cfg.RecursionLimit < 1 {
				return nil, badField("config.recursion_limit", "must be at least 1, got %d", *cfg.RecursionLimit)
			}
			opts = append(opts, graph.WithRecursionLimit(*cfg.RecursionLimit))
		}
		for key, v := range cfg.Configurable {
			opts = append(opts, graph.WithValue(key, v))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.Metadata)) {
		opts = append(opts, graph.WithMetadata(key, metadataString(k.Metadata[key])))
	}
	switch k.Durability {
	case "", "async":
	case "sync":
		opts = append(opts, graph.WithDurability(graph.DurabilitySync))
	case "exit":
		opts = append(opts, graph.WithDurability(graph.DurabilityExit))
	default:
		return nil, badField("durability", "unknown value %q: use sync, async or exit", k.Durability)
	}
	engineModes := graph.ModeValues
	if modes.updates || modes.messagesTuple {
		engineModes |= graph.ModeUpdates
	}
	if modes.messagesTuple {
		engineModes |= graph.ModeMessages
	}
	if modes.custom {
		engineModes |= graph.ModeCustom
	}
	if modes.debug {
		engineModes |= graph.ModeDebug
	}
	for _, bp := range []struct {
		field string
		raw   json.RawMessage
		opt   func(...string) graph.BreakpointOption
	}{{"interrupt_before", k.InterruptBefore, graph.WithInterruptBefore}, {"interrupt_after", k.InterruptAfter, graph.WithInterruptAfter}} {
		nodes, err := a.breakpointNodes(bp.field, bp.raw)
		if err != nil {
			return nil, err
		}
		if len(nodes) > 0 {
			opts = append(opts, bp.opt(nodes...))
		}
	}
	opts = append(opts, graph.WithStreamModes(engineModes))
	if k.Subgraphs {
		opts = append(opts, graph.WithSubgraphs())
	}
	checkpointID := k.checkpointID()
	return func(ctx context.Context, rc runContext) (json.RawMessage, error) {
		ropts := append(slices.Clip(opts), graph.WithThread(rc.threadID), graph.WithRunID(rc.runID), graph.WithDrain(rc.drain))
		if checkpointID != "" {
			ropts = append(ropts, graph.WithCheckpointID(checkpointID))
		}
		in := input
		switch {
		case rc.resumePending:
			in = graph.Update[S]{}
			ropts = append(ropts, graph.WithContinue())
		case resume != nil:
			o, err := a.resumeOption(ctx, rc.threadID, *resume)
			if err != nil {
				return nil, err
			}
			ropts = append(ropts, o)
		case command && hasInput:
			if snap, err := a.g.GetState(ctx, graph.WithThread(rc.threadID)); err == nil && len(snap.Next) > 0 {
				ropts = append(ropts, graph.WithContinue())
			}
		}
		return a.run(ctx, rc, in, ropts, modes)
	}, nil
}

// breakpointNodes reads a run's interrupt_before or interrupt_after: "*"
// for every node, or a list of node names.
func (a *adapter[S]) breakpointNodes(field string, raw json.RawMessage) ([]string, error) {
	if emptyJSON(raw) {
		return nil, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all != "*" {
			return nil, badField(field, `expected "*" or a list of node names, got %q`, all)
		}
		var out []string
		for _, n := range a.g.Drawing().Nodes {
			if n != graph.START && n != graph.END {
				out = append(out, n)
			}
		}
		return out, nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, badField(field, `expected "*" or a list of node names, got %s`, jsonTypeOf(raw))
	}
	for i, n := range names {
		if !a.nodes[n] || n == graph.START || n == graph.END {
			return nil, badField(fmt.Sprintf("%s[%d]", field, i), "the graph has no node %q", n)
		}
	}
	return names, nil
}

func metadataString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// resumeOption answers the thread's pending interrupts: a map keyed by
// their ids answers each, any other value answers the only one.
func (a *adapter[S]) resumeOption(ctx context.Context, threadID string, raw json.RawMessage) (graph.RunOption, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, badField("command.resume", "%v", err)
	}
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		snap, err := a.g.GetState(ctx, graph.WithThread(threadID))
		if err == nil {
			pending := map[string]bool{}
			for _, in := range snap.Interrupts {
				pending[in.ID] = true
			}
			byID := true
			for id := range m {
				byID = byID && pending[id]
			}
			if byID {
				return graph.WithResumeByID(m), nil
			}
		}
	}
	return graph.WithResume(v), nil
}

// commandUpdate turns a command's update and goto into an Update.
func (a *adapter[S]) commandUpdate(c *commandBody) (graph.Update[S], error) {
	var u graph.Update[S]
	if len(c.Update) > 0 && string(c.Update) != "null" {
		raw := c.Update
		var pairs [][2]json.RawMessage
		if json.Unmarshal(raw, &pairs) == nil {
			obj := map[string]json.RawMessage{}
			for i, p := range pairs {
				var key string
				if err := json.Unmarshal(p[0], &key); err != nil {
					return u, badField(fmt.Sprintf("command.update[%d][0]", i), "expected a key name")
				}
				obj[key] = p[1]
			}
			raw, _ = json.Marshal(obj)
		}
		upd, _, err := a.decodeValues(raw, "command.update")
		if err != nil {
			return u, err
		}
		u = upd
	}
	if len(c.Goto) > 0 && string(c.Goto) != "null" {
		var items []json.RawMessage
		if c.Goto[0] == '[' {
			if err := json.Unmarshal(c.Goto, &items); err != nil {
				return u, badField("command.goto", "%v", err)
			}
		} else {
			items = []json.RawMessage{c.Goto}
		}
		for i, it := range items {
			var name string
			if err := json.Unmarshal(it, &name); err != nil {
				var send struct {
					Node  string          `json:"node"`
					Input json.RawMessage `json:"input"`
				}
				if json.Unmarshal(it, &send) != nil || send.Node == "" {
					return u, badField(fmt.Sprintf("command.goto[%d]", i), "expected a node name or {node, input}")
				}
				return u, badField(fmt.Sprintf("command.goto[%d].input", i), "a Send with its own input is not supported over the wire; route to the node by name")
			}
			if !a.nodes[name] || name == graph.START {
				return u, badField(fmt.Sprintf("command.goto[%d]", i), "the graph has no node %q", name)
			}
			u = u.Goto(name)
		}
	}
	return u, nil
}

// run streams the graph and turns its events into the wire's.
func (a *adapter[S]) run(ctx context.Context, rc runContext, input graph.Update[S], opts []graph.RunOption, modes streamModes) (json.RawMessage, error) {
	var (
		last       S
		haveState  bool
		interrupts []graph.Interruption
		streamed   = map[string]bool{} // tasks that streamed message chunks
	)
	meta := func(ev graph.Event[S]) map[string]any {
		return map[string]any{
			"thread_id": rc.threadID, "run_id": rc.runID, "graph_id": rc.graphID, "assistant_id": rc.assistantID,
			"langgraph_step": ev.Step, "langgraph_node": ev.Node, "langgraph_checkpoint_ns": ev.Namespace,
			"checkpoint_ns": ev.Namespace, "langgraph_task_id": ev.TaskID,
		}
	}
	name := func(mode string, ev graph.Event[S]) string {
		if ev.Namespace != "" {
			return mode + "|" + ev.Namespace
		}
		return mode
	}
	for ev, err := range a.g.Stream(ctx, input, opts...) {
		if err != nil {
			return nil, err
		}
		switch ev.Mode {
		case graph.ModeValues:
			if ev.Namespace == "" {
				last, haveState = ev.State, true
				if modes.values {
					vals, err := a.encodeState(ev.State)
					if err != nil {
						return nil, err
					}
					rc.emit("values", vals)
				}
			} else if modes.values {
				rc.emit(name("values", ev), ev.Data)
			}
		case graph.ModeUpdates:
			upd, err := a.encodeUpdate(ev.Update)
			if err != nil {
				return nil, err
			}
			if modes.updates {
				rc.emit(name("updates", ev), map[string]any{ev.Node: upd})
			}
			if modes.messagesTuple && !streamed[ev.TaskID] {
				for k := range a.msgKeys {
					if msgs, ok := ev.Update[k].([]model.Message); ok {
						for _, m := range msgs {
							rc.emit(name("messages", ev), []any{toLC(m), meta(ev)})
						}
					}
				}
			}
		case graph.ModeMessages:
			if !modes.messagesTuple {
				continue
			}
			switch d := ev.Data.(type) {
			case model.Chunk:
				streamed[ev.TaskID] = true
				if d.Done != nil {
					continue
				}
				rc.emit(name("messages", ev), []any{chunkToLC(d, "run-"+ev.TaskID), meta(ev)})
			case model.Message:
				streamed[ev.TaskID] = true
				rc.emit(name("messages", ev), []any{toLC(d), meta(ev)})
			default:
				rc.emit(name("messages", ev), []any{d, meta(ev)})
			}
		case graph.ModeCustom:
			if modes.custom {
				rc.emit(name("custom", ev), ev.Data)
			}
		case graph.ModeDebug:
			if modes.debug && ev.Debug != nil {
				payload := map[string]any{"id": ev.TaskID, "name": ev.Node, "duration_ms": ev.Debug.Duration.Milliseconds(), "tasks": ev.Debug.Tasks}
				if ev.Debug.Err != nil {
					payload["error"] = ev.Debug.Err.Error()
				}
				rc.emit(name("debug", ev), map[string]any{
					"type": ev.Debug.Type, "step": ev.Step,
					"timestamp": wireTime(ev.Debug.Time), "payload": payload,
				})
			}
		case graph.ModeInterrupt:
			if ev.Namespace != "" {
				continue
			}
			interrupts = append(interrupts, ev.Interrupts...)
			wire := interruptsToWire(ev.Interrupts)
			if modes.updates {
				rc.emit("updates", map[string]any{"__interrupt__": wire})
			}
			if modes.values {
				rc.emit("values", map[string]any{"__interrupt__": wire})
			}
		}
	}
	var out map[string]json.RawMessage
	if haveState {
		var err error
		if out, err = a.encodeState(last); err != nil {
			return nil, err
		}
	} else {
		out = map[string]json.RawMessage{}
	}
	if len(interrupts) > 0 {
		b, _ := json.Marshal(interruptsToWire(interrupts))
		out["__interrupt__"] = b
	}
	return json.Marshal(out)
}

type lcChunk struct {
	Content          string          `json:"content"`
	AdditionalKwargs map[string]any  `json:"additional_kwargs"`
	ResponseMetadata map[string]any  `json:"response_metadata"`
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	ToolCalls        []any           `json:"tool_calls"`
	ToolCallChunks   []lcToolCallBit `json:"tool_call_chunks"`
	InvalidToolCalls []any           `json:"invalid_tool_calls"`
	UsageMetadata    *lcUsage        `json:"usage_metadata,omitempty"`
}

type lcToolCallBit struct {
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	Args  string `json:"args"`
	Index int    `json:"index"`
	Type  string `json:"type"`
}

func chunkToLC(c model.Chunk, id string) lcChunk {
	out := lcChunk{Content: c.Delta, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}, Type: "AIMessageChunk", ID: id,
		ToolCalls: []any{}, ToolCallChunks: []lcToolCallBit{}, InvalidToolCalls: []any{}}
	for _, d := range c.ToolCalls {
		out.ToolCallChunks = append(out.ToolCallChunks, lcToolCallBit{ID: d.ID, Name: d.Name, Args: d.Arguments, Index: d.Index, Type: "tool_call_chunk"})
	}
	if u := c.Usage; u != nil {
		out.UsageMetadata = &lcUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	}
	return out
}

// wireInterrupt is an interrupt as LangGraph writes it.
type wireInterrupt struct {
	Value any    `json:"value"`
	ID    string `json:"id"`
}

func interruptsToWire(in []graph.Interruption) []wireInterrupt {
	out := make([]wireInterrupt, len(in))
	for i, x := range in {
		out[i] = wireInterrupt{Value: x.Value, ID: x.ID}
	}
	return out
}

// threadState is a thread's state at one checkpoint, as the wire has it.
type threadState struct {
	Values           map[string]json.RawMessage `json:"values"`
	Next             []string                   `json:"next"`
	Tasks            []wireTask                 `json:"tasks"`
	Metadata         map[string]any             `json:"metadata"`
	CreatedAt        *wireTime                  `json:"created_at"`
	Checkpoint       *wireCheckpoint            `json:"checkpoint"`
	ParentCheckpoint *wireCheckpoint            `json:"parent_checkpoint"`
	Interrupts       []wireInterrupt            `json:"interrupts"`
}

type wireTask struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Error      *string         `json:"error"`
	Interrupts []wireInterrupt `json:"interrupts"`
	Checkpoint *wireCheckpoint `json:"checkpoint"`
	State      any             `json:"state"`
	Result     any             `json:"result"`
}

type wireCheckpoint struct {
	ThreadID      string `json:"thread_id"`
	CheckpointID  string `json:"checkpoint_id"`
	CheckpointNS  string `json:"checkpoint_ns"`
	CheckpointMap any    `json:"checkpoint_map"`
}

func toWireCheckpoint(c *checkpoint.Config) *wireCheckpoint {
	if c == nil || c.CheckpointID == "" {
		return nil
	}
	return &wireCheckpoint{ThreadID: c.ThreadID, CheckpointID: c.CheckpointID, CheckpointNS: c.Namespace}
}

func metadataToWire(md checkpoint.Metadata) map[string]any {
	out := map[string]any{}
	for k, v := range md.Extra {
		var j any
		if json.Unmarshal([]byte(v), &j) == nil {
			if _, isString := j.(string); !isString {
				out[k] = j
				continue
			}
		}
		out[k] = v
	}
	out["source"] = string(md.Source)
	out["step"] = md.Step
	parents := map[string]string{}
	maps.Copy(parents, md.Parents)
	out["parents"] = parents
	if md.RunID != "" {
		out["run_id"] = md.RunID
	}
	return out
}

// emptyState is the state of a thread that has no checkpoint yet.
func emptyState() *threadState {
	return &threadState{Values: map[string]json.RawMessage{}, Next: []string{}, Tasks: []wireTask{}, Metadata: nil, Interrupts: []wireInterrupt{}}
}

func (a *adapter[S]) snapshotToWire(snap graph.Snapshot[S]) (*threadState, error) {
	vals, err := a.encodeState(snap.Values)
	if err != nil {
		return nil, err
	}
	ts := &threadState{Values: vals, Next: snap.Next, Tasks: []wireTask{}, Metadata: metadataToWire(snap.Metadata),
		Checkpoint: toWireCheckpoint(&snap.Config), ParentCheckpoint: toWireCheckpoint(snap.ParentConfig),
		Interrupts: interruptsToWire(snap.Interrupts)}
	if ts.Next == nil {
		ts.Next = []string{}
	}
	if !snap.CreatedAt.IsZero() {
		t := wireTime(snap.CreatedAt)
		ts.CreatedAt = &t
	}
	for _, t := range snap.Tasks {
		wt := wireTask{ID: t.ID, Name: t.Node, Interrupts: interruptsToWire(t.Interrupts)}
		if t.Err != "" {
			e := t.Err
			wt.Error = &e
		}
		if t.State != nil {
			wt.State = t.State
		}
		ts.Tasks = append(ts.Tasks, wt)
	}
	return ts, nil
}

func (a *adapter[S]) state(ctx context.Context, cfg checkpoint.Config, subgraphs bool) (*threadState, error) {
	opts := []graph.StateOption{graph.WithCheckpoint(cfg)}
	if subgraphs {
		opts = append(opts, graph.WithSubgraphs())
	}
	snap, err := a.g.GetState(ctx, opts...)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if cfg.CheckpointID != "" {
			return nil, notFound("thread %s has no checkpoint %s", cfg.ThreadID, cfg.CheckpointID)
		}
		return emptyState(), nil
	}
	if err != nil {
		return nil, err
	}
	return a.snapshotToWire(snap)
}

func (a *adapter[S]) history(ctx context.Context, threadID string, h historyBody) ([]*threadState, error) {
	opts := []graph.HistoryOption{graph.WithThread(threadID)}
	if h.Checkpoint != nil && h.Checkpoint.CheckpointID != "" {
		opts = append(opts, graph.WithCheckpointID(h.Checkpoint.CheckpointID))
	}
	limit := 10
	if h.Limit != nil {
		limit = *h.Limit
	}
	opts = append(opts, graph.WithLimit(limit))
	if h.Before != "" {
		opts = append(opts, graph.WithBefore(h.Before))
	}
	for k, v := range h.Metadata {
		switch k {
		case "step":
			if f, ok := v.(float64); ok {
				v = strconv.Itoa(int(f))
			}
		}
		opts = append(opts, graph.WithFilter(k, metadataString(v)))
	}
	out := []*threadState{}
	for snap, err := range a.g.GetStateHistory(ctx, opts...) {
		if errors.Is(err, checkpoint.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		ts, err := a.snapshotToWire(snap)
		if err != nil {
			return nil, err
		}
		out = append(out, ts)
	}
	return out, nil
}

func (a *adapter[S]) update(ctx context.Context, cfg checkpoint.Config, values json.RawMessage, asNode string) (checkpoint.Config, error) {
	upd, _, err := a.decodeValues(values, "values")
	if err != nil {
		return cfg, err
	}
	if asNode != "" && !a.nodes[asNode] {
		return cfg, badField("as_node", "the graph has no node %q", asNode)
	}
	if asNode == "" {
		// LangGraph picks the node that ran last; the thread's latest
		// checkpoint names it only through its tasks, so an update without
		// as_node is applied as input.
		asNode = graph.START
	}
	return a.g.UpdateState(ctx, upd, asNode, graph.WithCheckpoint(cfg))
}
