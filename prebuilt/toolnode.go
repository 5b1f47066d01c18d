package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// Node names the ReAct agent uses, and ToolsCondition routes to.
const (
	AgentNode = "agent"
	ToolsNode = "tools"
)

// ErrUnknownTool reports a call of a tool the ToolNode does not have.
var ErrUnknownTool = errors.New("prebuilt: unknown tool")

// UnknownToolError names the tool a model asked for and the tools it could
// have asked for. It matches ErrUnknownTool with errors.Is.
type UnknownToolError struct {
	Name  string
	Known []string
}

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("%s is not a valid tool, try one of [%s].", e.Name, strings.Join(e.Known, ", "))
}

// Is makes errors.Is(err, ErrUnknownTool) true.
func (e *UnknownToolError) Is(target error) bool { return target == ErrUnknownTool }

// ToolError is a tool's own failure, with the call it answered. A ToolNode
// returns it, failing the run, when built with FailOnToolError.
type ToolError struct {
	Tool   string
	CallID string
	Err    error
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("prebuilt: tool %q (call %s) failed: %v", e.Tool, e.CallID, e.Err)
}

func (e *ToolError) Unwrap() error { return e.Err }

// PanicError is a tool's panic, contained by a ToolNode.
type PanicError struct {
	Tool   string
	CallID string
	Value  any
	Stack  []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("prebuilt: tool %q (call %s) panicked: %v", e.Tool, e.CallID, e.Value)
}

// ErrNoAssistantMessage reports a ToolNode run on a conversation without an
// assistant message, so there are no tool calls to run.
var ErrNoAssistantMessage = errors.New("prebuilt: the conversation has no assistant message to take tool calls from: route to the ToolNode after a model's turn, as ToolsCondition does")

// Option configures NewToolNode, NewModelNode and NewReactAgent. Each
// constructor reads the options that concern it and ignores the others, so
// one list can configure an agent and its parts.
type Option func(*options)

type options struct {
	failOnToolError bool
	failOnPanic     bool
	errorContent    func(call model.ToolCall, err error) string
	maxParallel     int
	systemPrompt    string
	toolChoice      model.ToolChoice
	compile         []graph.CompileOption
}

// FailOnToolError makes a tool's error fail the run (the node returns a
// *ToolError) instead of becoming an error tool message. Calls the model got
// wrong, an unknown tool or invalid arguments, still go back to the model.
// Read by NewToolNode and NewReactAgent.
func FailOnToolError() Option { return func(o *options) { o.failOnToolError = true } }

// FailOnPanic makes a tool's panic fail the run (the node returns a
// *PanicError) instead of becoming an error tool message. Either way the
// panic does not escape the ToolNode. Read by NewToolNode and NewReactAgent.
func FailOnPanic() Option { return func(o *options) { o.failOnPanic = true } }

// ErrorContent sets the content of the error tool messages a ToolNode makes.
// err is an *UnknownToolError, an *ArgumentError, a *PanicError or the
// tool's own error. The default is "Error: <err>\nPlease fix your mistakes."
// Read by NewToolNode and NewReactAgent.
func ErrorContent(f func(call model.ToolCall, err error) string) Option {
	return func(o *options) { o.errorContent = f }
}

// MaxParallel caps how many tool calls of one message run at once (default:
// all of them). With 1 the calls run one after another, in call order.
// Read by NewToolNode and NewReactAgent.
func MaxParallel(n int) Option { return func(o *options) { o.maxParallel = n } }

func defaultErrorContent(_ model.ToolCall, err error) string {
	return "Error: " + err.Error() + "\nPlease fix your mistakes."
}

func collect(opts []Option) options {
	o := options{errorContent: defaultErrorContent}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// ToolNode is a graph node that runs the tool calls of the conversation's
// last assistant message and answers each with a tool message.
//
// The calls run concurrently, each with a context that carries the run
// config (graph.ConfigFrom works in the tool), the call's id (ToolCallID)
// and the state the node read (ToolState). The node writes the tool
// messages in call order, followed by the writes of tools that returned an
// Output[S], in call order too. A tool that ignores its context holds up
// the step until it returns.
//
// Failures the model can act on become error tool messages: an unknown tool
// (the message names the valid ones), invalid arguments (it names the field
// and the expected type), and by default a tool's error or panic. With
// FailOnToolError or FailOnPanic those fail the run instead. A cancelled
// run's context fails the node, and a tool that calls Interrupt pauses the
// run.
type ToolNode[S any] struct {
	messages graph.SliceKey[S, model.Message]
	byName   map[string]*Tool
	known    []string
	o        options
}

// NewToolNode returns a ToolNode over the conversation held by messages. It
// fails on a nil or duplicate tool, and on a tool returning an Output for a
// state other than S.
func NewToolNode[S any](messages graph.SliceKey[S, model.Message], tools []*Tool, opts ...Option) (*ToolNode[S], error) {
	n := &ToolNode[S]{messages: messages, byName: make(map[string]*Tool, len(tools)), o: collect(opts)}
	want := reflect.TypeFor[Output[S]]()
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("prebuilt: tool %d is nil: build tools with prebuilt.NewTool", i)
		}
		if _, dup := n.byName[t.name]; dup {
			return nil, fmt.Errorf("prebuilt: two tools are named %q: give each tool its own name", t.name)
		}
		if t.result.Implements(stateOutputType) && t.result != want {
			return nil, fmt.Errorf("prebuilt: tool %q returns %v, but this ToolNode runs over %v: return %v", t.name, t.result, reflect.TypeFor[S](), want)
		}
		n.byName[t.name] = t
		n.known = append(n.known, t.name)
	}
	return n, nil
}

type callResult[S any] struct {
	msg    model.Message
	writes []graph.Write[S]
	gotos  []string
	fatal  error // fails the run
}

// Run runs the tool calls of the last assistant message in s.
func (n *ToolNode[S]) Run(ctx context.Context, s S) (graph.Update[S], error) {
	msgs := n.messages.Get(&s)
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return graph.Update[S]{}, ErrNoAssistantMessage
	}
	calls := msgs[last].ToolCalls
	if len(calls) == 0 {
		return graph.Update[S]{}, nil
	}
	results := make([]callResult[S], len(calls))
	state := any(s)
	interrupts := new(sync.Mutex)
	var fatal error
	if len(calls) == 1 || n.o.maxParallel == 1 {
		for i, c := range calls {
			if results[i] = n.call(ctx, c, state, interrupts); results[i].fatal != nil {
				fatal = results[i].fatal
				break
			}
		}
	} else {
		fatal = n.callAll(ctx, calls, results, state, interrupts)
	}
	if fatal != nil {
		return graph.Update[S]{}, fatal
	}
	out := make([]model.Message, len(calls))
	writes := make([]graph.Write[S], 1, 1+len(calls))
	var gotos []string
	for i := range results {
		r := &results[i]
		out[i] = r.msg
		writes = append(writes, r.writes...)
		gotos = append(gotos, r.gotos...)
	}
	writes[0] = n.messages.Add(out...)
	u := graph.Updates(writes...)
	if len(gotos) > 0 {
		u = u.Goto(gotos...)
	}
	return u, nil
}

// callAll runs the calls concurrently and returns the first failure that
// fails the run, in time order: the cause, not the siblings it cancelled.
func (n *ToolNode[S]) callAll(ctx context.Context, calls []model.ToolCall, results []callResult[S], state any, interrupts *sync.Mutex) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel() // the run fails: siblings need not finish
	}
	var sem chan struct{}
	if n.o.maxParallel > 0 && n.o.maxParallel < len(calls) {
		sem = make(chan struct{}, n.o.maxParallel)
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					fail(fmt.Errorf("prebuilt: tool %q (call %s) did not start: %w", c.Name, c.ID, ctx.Err()))
					return
				}
			}
			results[i] = n.call(ctx, c, state, interrupts)
			if err := results[i].fatal; err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

func (n *ToolNode[S]) call(ctx context.Context, c model.ToolCall, state any, interrupts *sync.Mutex) (r callResult[S]) {
	t := n.byName[c.Name]
	if t == nil {
		return n.failed(c, &UnknownToolError{Name: c.Name, Known: n.known})
	}
	v, err := invoke(context.WithValue(ctx, toolCallKey{}, &toolCall{id: c.ID, state: state, interrupts: interrupts}), t, c)
	if err != nil {
		var (
			ae *ArgumentError
			pe *PanicError
			p  *pause
		)
		switch {
		case errors.As(err, &p):
			return callResult[S]{fatal: p.err}
		case errors.As(err, &ae):
		case errors.As(err, &pe):
			if n.o.failOnPanic {
				return callResult[S]{fatal: pe}
			}
		case ctx.Err() != nil:
			return callResult[S]{fatal: fmt.Errorf("prebuilt: tool %q (call %s) stopped: %w", c.Name, c.ID, context.Cause(ctx))}
		case n.o.failOnToolError:
			return callResult[S]{fatal: &ToolError{Tool: c.Name, CallID: c.ID, Err: err}}
		}
		return n.failed(c, err)
	}
	content, err := t.content(v)
	if err != nil {
		return n.failed(c, err)
	}
	r.msg = model.ToolResult(c.ID, c.Name, content)
	if o, ok := v.(stateOutput); ok {
		so, ok := o.(Output[S])
		if !ok {
			return callResult[S]{fatal: fmt.Errorf("prebuilt: tool %q returned %T, but this ToolNode runs over %v: return %v", c.Name, v, reflect.TypeFor[S](), reflect.TypeFor[Output[S]]())}
		}
		r.writes, r.gotos = so.Writes, so.Goto
	}
	return r
}

func (n *ToolNode[S]) failed(c model.ToolCall, err error) callResult[S] {
	return callResult[S]{msg: model.ToolError(c.ID, c.Name, n.o.errorContent(c, err))}
}

func invoke(ctx context.Context, t *Tool, c model.ToolCall) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &PanicError{Tool: c.Name, CallID: c.ID, Value: p, Stack: debug.Stack()}
		}
	}()
	return t.run(ctx, c.Arguments)
}

// ToolsCondition routes to ToolsNode when the last message of the
// conversation asks for tool calls, and to graph.END otherwise. Add it with
// ToolsBranch, which lists both targets for validation and drawing:
//
//	g.AddConditionalEdges(prebuilt.AgentNode, prebuilt.ToolsCondition(key), prebuilt.ToolsBranch())
func ToolsCondition[S any](messages graph.SliceKey[S, model.Message]) graph.Router[S] {
	return func(_ context.Context, s S) (graph.Route[S], error) {
		msgs := messages.Get(&s)
		if len(msgs) > 0 && msgs[len(msgs)-1].HasToolCalls() {
			return graph.To[S](ToolsNode), nil
		}
		return graph.To[S](graph.END), nil
	}
}

// ToolsBranch is the BranchConfig of ToolsCondition: its targets are
// ToolsNode and graph.END.
func ToolsBranch() graph.BranchConfig {
	return graph.BranchConfig{Name: "tools_condition", Paths: []string{ToolsNode, graph.END}}
}
