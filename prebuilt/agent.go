package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// WithSystemPrompt puts a system message with text before the conversation in
// every model call. The message is not stored in the state. Read by
// NewModelNode and NewReactAgent.
func WithSystemPrompt(text string) Option { return func(o *options) { o.systemPrompt = text } }

// WithToolChoice sets the tool choice of every model call (default: the
// model decides). A choice that forces a call applies to every turn, so an
// agent with it loops until the recursion limit unless a tool routes to
// graph.END. Read by NewModelNode and NewReactAgent.
func WithToolChoice(c model.ToolChoice) Option { return func(o *options) { o.toolChoice = c } }

// WithSaver makes the agent's threads durable through s. Read by
// NewReactAgent.
func WithSaver(s checkpoint.Saver) Option {
	return WithCompileOptions(graph.WithSaver(s))
}

// WithCompileOptions passes options to the agent graph's Compile. Read by
// NewReactAgent.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(o *options) { o.compile = append(o.compile, opts...) }
}

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
func NewModelNode[S any](m model.ChatModel, messages graph.SliceKey[S, model.Message], tools []*Tool, opts ...Option) (*ModelNode[S], error) {
	if m == nil {
		return nil, errors.New("prebuilt: the chat model is nil: pass a model.ChatModel such as openai.New(...) or scripted.New(...)")
	}
	o := collect(opts)
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
// AgentNode calls m with tools bound; ToolsCondition sends tool calls to the
// ToolNode ToolsNode, whose answers go back to the model; an answer without
// tool calls ends the run.
//
//	START -> agent -> (tools -> agent)* -> END
//
// Options: WithSystemPrompt, WithToolChoice, WithSaver and
// WithCompileOptions, and the ToolNode's options.
func NewReactAgent(m model.ChatModel, tools []*Tool, opts ...Option) (*graph.Graph[MessagesState], error) {
	agent, err := NewModelNode(m, Messages, tools, opts...)
	if err != nil {
		return nil, err
	}
	toolNode, err := NewToolNode(Messages, tools, opts...)
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	return graph.New(Messages).
		AddNode(AgentNode, agent).
		AddNode(ToolsNode, toolNode).
		AddEdge(graph.START, AgentNode).
		AddConditionalEdges(AgentNode, ToolsCondition(Messages), ToolsBranch()).
		AddEdge(ToolsNode, AgentNode).
		Compile(o.compile...)
}
