package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// ModelNode is a graph node that calls a chat model on the conversation,
// with tools bound, and appends the model's answer to it.
//
// When the run streams graph.ModeMessages, the node calls the model's Stream
// and passes each model.Chunk to graph.EmitMessage as it arrives, so the
// tokens reach graph.Stream with this node's name and step; otherwise it
// calls Generate.
type ModelNode[S any] struct {
	model    model.ChatModel
	messages graph.SliceKey[S, model.Message]
	specs    []model.ToolSpec
	system   *model.Message
	choice   model.ToolChoice
}

// NewModelNode returns a ModelNode calling m over the conversation held by
// messages, with tools bound.
func NewModelNode[S any](m model.ChatModel, messages graph.SliceKey[S, model.Message], tools []*Tool, opts ...ModelNodeOption) (*ModelNode[S], error) {
	var c modelConfig
	for _, o := range opts {
		o.applyModelNode(&c)
	}
	return newModelNode(m, messages, tools, c)
}

func newModelNode[S any](m model.ChatModel, messages graph.SliceKey[S, model.Message], tools []*Tool, o modelConfig) (*ModelNode[S], error) {
	if m == nil {
		return nil, errors.New("prebuilt: the chat model is nil: pass a model.ChatModel such as openai.New(...) or scripted.New(...)")
	}
	n := &ModelNode[S]{model: m, messages: messages, choice: o.toolChoice}
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("prebuilt: tool %d is nil: build tools with prebuilt.NewTool", i)
		}
		n.specs = append(n.specs, t.Spec())
	}
	if o.systemPrompt != "" {
		sys := model.System(o.systemPrompt)
		n.system = &sys
	}
	return n, nil
}

// Run calls the model once and writes its answer.
func (n *ModelNode[S]) Run(ctx context.Context, s S) (graph.Update[S], error) {
	msgs := n.messages.Get(&s)
	if n.system != nil {
		withSystem := make([]model.Message, 0, len(msgs)+1)
		msgs = append(append(withSystem, *n.system), msgs...)
	}
	req := model.Request{Messages: msgs, Tools: n.specs, ToolChoice: n.choice}
	var (
		resp model.Response
		err  error
	)
	if graph.Streaming(ctx, graph.ModeMessages) {
		resp, err = model.Collect(forward(ctx, n.model.Stream(ctx, req)))
	} else {
		resp, err = n.model.Generate(ctx, req)
	}
	if err != nil {
		return graph.Update[S]{}, fmt.Errorf("prebuilt: model call: %w", err)
	}
	msg := resp.Message
	if msg.ID == "" {
		msg.ID = model.NewID()
	}
	if msg.Role == "" {
		msg.Role = model.RoleAssistant
	}
	if slices.ContainsFunc(msg.ToolCalls, func(c model.ToolCall) bool { return c.ID == "" }) {
		// A tool message must name the call it answers. The calls may be
		// shared with the model's own records, so fill ids on a copy.
		msg.ToolCalls = slices.Clone(msg.ToolCalls)
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = "call_" + model.NewID()[len("msg_"):]
			}
		}
	}
	return graph.Updates(n.messages.Add(msg)), nil
}

// forward passes each chunk of seq to the run's messages stream on its way.
func forward(ctx context.Context, seq iter.Seq2[model.Chunk, error]) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for c, err := range seq {
			if err == nil {
				graph.EmitMessage(ctx, c)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// NewReactAgent returns a compiled ReAct agent over MessagesState: the node
// AgentNode calls m with tools bound; each tool call of its answer runs as a
// task of its own in the ToolNode ToolsNode (one graph.Send per call, as
// LangGraph's v2 agent), and the tool messages go back to the model; an
// answer without tool calls ends the run.
//
//	START -> agent -> (tools × calls -> agent)* -> END
//
// Because each call is its own task, a step in which one call pauses
// (graph.Interrupt) or fails keeps the results of the calls that finished:
// with a saver, resuming runs only the calls still pending. The tool
// messages land in the conversation in call order. Inside a tool,
// ToolState[MessagesState] holds a conversation of one message: the
// assistant message asking for this call, with only this call.
//
// Options: WithSystemPrompt and WithToolChoice for the model node,
// WithToolErrorsToModel, WithFailOnInvalidArguments and WithErrorContent for
// the tool node, and WithCompileOptions for the graph (a saver,
// breakpoints).
func NewReactAgent(m model.ChatModel, tools []*Tool, opts ...AgentOption) (*graph.Graph[MessagesState], error) {
	var c agentConfig
	for _, o := range opts {
		o.applyAgent(&c)
	}
	agent, err := newModelNode(m, Messages, tools, c.model)
	if err != nil {
		return nil, err
	}
	toolNode, err := newToolNode(Messages, tools, c.tools)
	if err != nil {
		return nil, err
	}
	return graph.New(Messages).
		AddNode(AgentNode, agent).
		AddNode(ToolsNode, toolNode).
		AddEdge(graph.START, AgentNode).
		AddConditionalEdges(AgentNode, sendToolCalls, ToolsBranch()).
		AddEdge(ToolsNode, AgentNode).
		Compile(c.compile...)
}

// sendToolCalls routes each tool call of the last message to ToolsNode as a
// Send of its own, whose state holds the assistant message cut down to that
// call, and ends the run when the last message asks for none. The Send
// carries only that message, not the conversation, so that a saver does not
// store the conversation once more per call.
func sendToolCalls(_ context.Context, s MessagesState) (graph.Route[MessagesState], error) {
	if len(s.Messages) == 0 || !s.Messages[len(s.Messages)-1].HasToolCalls() {
		return graph.To[MessagesState](graph.END), nil
	}
	last := s.Messages[len(s.Messages)-1]
	sends := make([]graph.Send[MessagesState], len(last.ToolCalls))
	for i := range last.ToolCalls {
		one := last
		one.ToolCalls = last.ToolCalls[i : i+1 : i+1]
		sends[i] = graph.SendTo(ToolsNode, MessagesState{Messages: []model.Message{one}})
	}
	return graph.Route[MessagesState]{Sends: sends}, nil
}
