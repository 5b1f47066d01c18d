package prebuilt

import (
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// Options follow agentgraph's rule (see graph.RunOption): each constructor
// takes its own option type, and an option that serves several of them has a
// type satisfying each of their option interfaces. So WithSystemPrompt fits
// NewModelNode and NewReactAgent, and passing it to NewToolNode does not
// compile.

// ModelNodeOption configures NewModelNode.
type ModelNodeOption interface{ applyModelNode(*modelConfig) }

// ToolNodeOption configures NewToolNode.
type ToolNodeOption interface{ applyToolNode(*toolConfig) }

// AgentOption configures NewReactAgent.
type AgentOption interface{ applyAgent(*agentConfig) }

type modelConfig struct {
	systemPrompt string
	toolChoice   model.ToolChoice
}

type toolConfig struct {
	errorsToModel bool
	failOnArgs    bool
	errorContent  func(call model.ToolCall, err error) string
	maxParallel   int
}

type agentConfig struct {
	model   modelConfig
	tools   toolConfig
	compile []graph.CompileOption
}

// modelOption serves NewModelNode and NewReactAgent.
type modelOption func(*modelConfig)

func (f modelOption) applyModelNode(c *modelConfig) { f(c) }
func (f modelOption) applyAgent(c *agentConfig)     { f(&c.model) }

// toolOption serves NewToolNode and NewReactAgent.
type toolOption func(*toolConfig)

func (f toolOption) applyToolNode(c *toolConfig) { f(c) }
func (f toolOption) applyAgent(c *agentConfig)   { f(&c.tools) }

type toolNodeOption func(*toolConfig)

func (f toolNodeOption) applyToolNode(c *toolConfig) { f(c) }

type agentOption func(*agentConfig)

func (f agentOption) applyAgent(c *agentConfig) { f(c) }

// WithSystemPrompt puts a system message with text before the conversation
// in every model call. The message is not stored in the state.
func WithSystemPrompt(text string) interface {
	ModelNodeOption
	AgentOption
} {
	return modelOption(func(c *modelConfig) { c.systemPrompt = text })
}

// WithToolChoice sets the tool choice of every model call (default: the
// model decides). A choice that forces a call applies to every turn, so an
// agent with it loops until the recursion limit unless a tool routes to
// graph.END.
func WithToolChoice(choice model.ToolChoice) interface {
	ModelNodeOption
	AgentOption
} {
	return modelOption(func(c *modelConfig) { c.toolChoice = choice })
}

// WithToolErrorsToModel hands a tool's own error, or its panic, to the model
// as an error tool message ("Error: <error>\n Please fix your mistakes.")
// instead of failing the run with a *ToolError or *PanicError. Use it when the
// model can act on the failures, for example by trying other arguments.
func WithToolErrorsToModel() interface {
	ToolNodeOption
	AgentOption
} {
	return toolOption(func(c *toolConfig) { c.errorsToModel = true })
}

// WithFailOnInvalidArguments makes arguments that do not match a tool's schema
// fail the run with the *ArgumentError, instead of going back to the model as
// an error tool message. A call of an unknown tool still goes back to the
// model.
func WithFailOnInvalidArguments() interface {
	ToolNodeOption
	AgentOption
} {
	return toolOption(func(c *toolConfig) { c.failOnArgs = true })
}

// WithErrorContent sets the text of the error tool messages made for invalid
// arguments (err is an *ArgumentError) and, with WithToolErrorsToModel, for a
// tool's own errors (err is the tool's error or a *PanicError). The message for
// an unknown tool keeps its fixed text, which lists the valid tools.
func WithErrorContent(content func(call model.ToolCall, err error) string) interface {
	ToolNodeOption
	AgentOption
} {
	return toolOption(func(c *toolConfig) { c.errorContent = content })
}

// WithMaxParallel caps how many tool calls of one message a ToolNode runs at
// once (default: all of them). With 1 the calls run one after another, in
// call order. The ReAct agent runs each call as its own task instead; cap
// those with graph.WithMaxConcurrency on the run.
func WithMaxParallel(n int) ToolNodeOption {
	return toolNodeOption(func(c *toolConfig) { c.maxParallel = n })
}

// WithCompileOptions passes options to the agent graph's Compile:
// graph.WithSaver for durable threads, graph.WithInterruptBefore(ToolsNode) to
// pause before tools run, and so on.
func WithCompileOptions(opts ...graph.CompileOption) AgentOption {
	return agentOption(func(c *agentConfig) { c.compile = append(c.compile, opts...) })
}
