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
func NewModelNode[S any](m model.ChatModel, messages graph.SliceKey[S, model.Message], tools []Tool, opts ...ModelNodeOption) (*ModelNode[S], error) {
	var c modelConfig
	for _, o := range opts {
		o.applyModelNode(&c)
	}
	return newModelNode(m, messages, tools, c)
}

func newModelNode[S any](m model.ChatModel, messages graph.SliceKey[S, model.Message], tools []Tool, o modelConfig) (*ModelNode[S], error) {
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
	id := ""
	if graph.Streaming(ctx, graph.ModeMessages) {
		// The message's id is chosen first, so each streamed chunk names
		// the message the state will hold.
		id = model.NewID()
		resp, err = model.Collect(forward(ctx, id, n.model.Stream(ctx, req)))
	} else {
		resp, err = n.model.Generate(ctx, req)
	}
	if err != nil {
		return graph.Update[S]{}, fmt.Errorf("prebuilt: model call: %w", err)
	}
	msg := resp.Message
	switch {
	case id != "":
		msg.ID = id // the id the streamed chunks named
	case msg.ID == "":
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

// forward passes each chunk of seq, named for message id, to the run's
// messages stream on its way.
func forward(ctx context.Context, id string, seq iter.Seq2[model.Chunk, error]) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for c, err := range seq {
			if err == nil {
				if c.MessageID == "" {
					c.MessageID = id
				}
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
func NewReactAgent(m model.ChatModel, tools []Tool, opts ...AgentOption) (*graph.Graph[MessagesState], error) {
	var c agentConfig
	for _, o := range opts {
		o.applyAgent(&c)
	}
	b, err := agentGraph(m, Messages, tools, c, nil)
	if err != nil {
		return nil, err
	}
	return b.Compile(c.compile...)
}

// ResponseState is the state of an agent that ends with a typed answer: the
// conversation, and the answer decoded from the model's last reply.
type ResponseState[T any] struct {
	Messages []model.Message `json:"messages"`
	// Response is set when the run ends: the model's final answer as a T.
	Response *T `json:"structured_response,omitempty"`
}

// NewReactAgentWithResponse returns a ReAct agent that, once the model
// answers without tool calls, asks it once more for the answer as a T, held
// to T's JSON schema (response_format json_schema, strict where T allows),
// and puts it in ResponseState.Response, as LangGraph's create_react_agent
// does with response_format. The schema comes from T as tools' schemas do.
// An answer that does not fit the schema is sent back to the model once with
// what was wrong; a second misfit fails the run with an error that
// errors.Is model.ErrInvalidOutput. name names the format for the model.
//
// The agent's keys are built for it: write the input with its Messages key.
func NewReactAgentWithResponse[T any](m model.ChatModel, tools []Tool, name string, opts ...AgentOption) (*ResponseAgent[T], error) {
	var c agentConfig
	for _, o := range opts {
		o.applyAgent(&c)
	}
	out, err := model.NewOutput[T](name, "")
	if err != nil {
		return nil, fmt.Errorf("prebuilt: %w", err)
	}
	msgs := graph.SliceField("messages", func(s *ResponseState[T]) *[]model.Message { return &s.Messages }, AddMessages).AsMessages()
	resp := graph.Field("structured_response", func(s *ResponseState[T]) **T { return &s.Response }, graph.LastValue[*T]())
	respond := &respondNode[T]{model: m, messages: msgs, response: resp, out: out, system: c.model.systemPrompt}
	b, err := agentGraph(m, msgs, tools, c, respond, resp)
	if err != nil {
		return nil, err
	}
	g, err := b.Compile(c.compile...)
	if err != nil {
		return nil, err
	}
	return &ResponseAgent[T]{Graph: g, Messages: msgs, Response: resp}, nil
}

// ResponseAgent is a compiled agent with a typed answer, with the keys of
// its state.
type ResponseAgent[T any] struct {
	*graph.Graph[ResponseState[T]]
	// Messages is the conversation's key ("messages"), reduced by
	// AddMessages.
	Messages graph.SliceKey[ResponseState[T], model.Message]
	// Response is the typed answer's key ("structured_response").
	Response *graph.Key[ResponseState[T], *T]
}

// RespondNode is the node of NewReactAgentWithResponse that asks the model
// for the typed answer.
const RespondNode = "generate_structured_response"

// agentGraph builds the ReAct loop over a state whose conversation is held
// by msgs. With respond, an answer without tool calls goes to respond
// (RespondNode) instead of ending the run.
func agentGraph[S any](m model.ChatModel, msgs graph.SliceKey[S, model.Message], tools []Tool, c agentConfig, respond graph.Node[S], more ...graph.AnyKey[S]) (*graph.StateGraph[S], error) {
	agent, err := newModelNode(m, msgs, tools, c.model)
	if err != nil {
		return nil, err
	}
	toolNode, err := newToolNode(msgs, tools, c.tools)
	if err != nil {
		return nil, err
	}
	done := graph.END
	if respond != nil {
		done = RespondNode
	}
	b := graph.New(append([]graph.AnyKey[S]{msgs}, more...)...).
		AddNode(AgentNode, agent).
		AddNode(ToolsNode, toolNode).
		AddEdge(graph.START, AgentNode).
		AddConditionalEdges(AgentNode, sendToolCalls(msgs, done), graph.BranchConfig{Name: "tools_condition", Paths: []string{ToolsNode, done}}).
		AddEdge(ToolsNode, AgentNode)
	if respond != nil {
		b.AddNode(RespondNode, respond).AddEdge(RespondNode, graph.END)
	}
	return b, nil
}

// sendToolCalls routes each tool call of the last message to ToolsNode as a
// Send of its own, whose state holds the assistant message cut down to that
// call, and goes to done when the last message asks for none. The Send
// carries only that message, not the conversation, so that a saver does not
// store the conversation once more per call.
func sendToolCalls[S any](msgs graph.SliceKey[S, model.Message], done string) graph.Router[S] {
	return func(_ context.Context, s S) (graph.Route[S], error) {
		conv := msgs.Get(&s)
		if len(conv) == 0 || !conv[len(conv)-1].HasToolCalls() {
			return graph.To[S](done), nil
		}
		last := conv[len(conv)-1]
		sends := make([]graph.Send[S], len(last.ToolCalls))
		for i := range last.ToolCalls {
			one := last
			one.ToolCalls = last.ToolCalls[i : i+1 : i+1]
			var in S
			msgs.Put(&in, []model.Message{one})
			sends[i] = graph.SendTo(ToolsNode, in)
		}
		return graph.Route[S]{Sends: sends}, nil
	}
}

// respondNode asks the model for the conversation's answer as a T.
type respondNode[T any] struct {
	model    model.ChatModel
	messages graph.SliceKey[ResponseState[T], model.Message]
	response *graph.Key[ResponseState[T], *T]
	out      *model.Output[T]
	system   string
}

func (n *respondNode[T]) Run(ctx context.Context, s ResponseState[T]) (graph.Update[ResponseState[T]], error) {
	var zero graph.Update[ResponseState[T]]
	msgs := n.messages.Get(&s)
	if n.system != "" {
		msgs = append([]model.Message{model.System(n.system)}, msgs...)
	}
	for attempt := 0; ; attempt++ {
		resp, err := n.model.Generate(ctx, model.Request{Messages: msgs, ResponseFormat: n.out.Format()})
		if err != nil {
			return zero, fmt.Errorf("prebuilt: model call for the structured response: %w", err)
		}
		v, err := n.out.Decode(resp.Message)
		if err == nil {
			return graph.Updates(n.response.Set(&v)), nil
		}
		var oe *model.OutputError
		if attempt > 0 || !errors.As(err, &oe) {
			return zero, fmt.Errorf("prebuilt: structured response: %w", err)
		}
		msgs = append(slices.Clip(msgs), resp.Message, oe.Feedback())
	}
}
