package prebuilt

import (
	"context"
	"encoding/json"
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

// ToolError is a tool's own failure, with the call it answered. A ToolNode
// returns it, failing the run, unless built with WithToolErrorsToModel.
type ToolError struct {
	Tool   string
	CallID string
	Err    error
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("prebuilt: tool %q (call %s) failed: %v", e.Tool, e.CallID, e.Err)
}

func (e *ToolError) Unwrap() error { return e.Err }

// PanicError is a tool's panic, contained by a ToolNode. Like a tool's error,
// it fails the run unless the node was built with WithToolErrorsToModel.
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
// Errors are handled as in LangGraph. The model's own mistakes go back to
// it as error tool messages (status model.StatusError), in the words
// LangGraph uses, which models are tuned to read:
//
//   - an unknown tool: "Error: <name> is not a valid tool, try one of
//     [<tools>]."
//   - invalid arguments: "Error invoking tool '<name>' with kwargs <arguments>
//     with error:\n <problems>\n Please fix the error and try again.", each
//     problem naming the field and what it expected (WithFailOnInvalidArguments
//     makes these fail the run instead).
//
// A tool's own error or panic fails the run with a *ToolError or *PanicError,
// unless WithToolErrorsToModel hands it to the model. The pause of a tool that
// calls graph.Interrupt always passes through, and so does the cancellation
// of the run.
//
// Several calls that may pause in one node run pause one at a time, in an
// order set by timing; build the node WithMaxParallel(1) to pause in call
// order. The ReAct agent avoids this by running each call as a task of its
// own.
type ToolNode[S any] struct {
	messages graph.SliceKey[S, model.Message]
	byName   map[string]Tool
	known    []string
	o        toolConfig
}

// NewToolNode returns a ToolNode over the conversation held by messages. It
// fails on a nil or duplicate tool, and on a tool returning an Output for a
// state other than S.
func NewToolNode[S any](messages graph.SliceKey[S, model.Message], tools []Tool, opts ...ToolNodeOption) (*ToolNode[S], error) {
	var c toolConfig
	for _, o := range opts {
		o.applyToolNode(&c)
	}
	return newToolNode(messages, tools, c)
}

func newToolNode[S any](messages graph.SliceKey[S, model.Message], tools []Tool, c toolConfig) (*ToolNode[S], error) {
	n := &ToolNode[S]{messages: messages, byName: make(map[string]Tool, len(tools)), o: c}
	want := reflect.TypeFor[Output[S]]()
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("prebuilt: tool %d is nil: build tools with prebuilt.NewTool", i)
		}
		name := t.Spec().Name
		if _, dup := n.byName[name]; dup {
			return nil, fmt.Errorf("prebuilt: two tools are named %q: give each tool its own name", name)
		}
		if rt, ok := t.(resultTyped); ok {
			if res := rt.resultType(); res != nil && res.Implements(stateOutputType) && res != want {
				return nil, fmt.Errorf("prebuilt: tool %q returns %v, but this ToolNode runs over %v: return %v", name, res, reflect.TypeFor[S](), want)
			}
		}
		n.byName[name] = t
		n.known = append(n.known, name)
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
	state := any(&s) // s is on the heap already: a pointer to it is not another copy
	if len(calls) == 1 {
		r := n.call(ctx, calls[0], state)
		if r.fatal != nil {
			return graph.Update[S]{}, r.fatal
		}
		return n.update([]model.Message{r.msg}, r.writes, r.gotos), nil
	}
	results := make([]callResult[S], len(calls))
	var fatal error
	if n.o.maxParallel == 1 {
		for i, c := range calls {
			if results[i] = n.call(ctx, c, state); results[i].fatal != nil {
				fatal = results[i].fatal
				break
			}
		}
	} else {
		fatal = n.callAll(ctx, calls, results, state)
	}
	if fatal != nil {
		return graph.Update[S]{}, fatal
	}
	out := make([]model.Message, len(calls))
	var (
		writes []graph.Write[S]
		gotos  []string
	)
	for i := range results {
		r := &results[i]
		out[i] = r.msg
		writes = append(writes, r.writes...)
		gotos = append(gotos, r.gotos...)
	}
	return n.update(out, writes, gotos), nil
}

// update is the node's result: the tool messages, then the writes and
// routes the tools' Outputs asked for.
func (n *ToolNode[S]) update(msgs []model.Message, writes []graph.Write[S], gotos []string) graph.Update[S] {
	all := make([]graph.Write[S], 1, 1+len(writes))
	all[0] = n.messages.Add(msgs...)
	u := graph.Updates(append(all, writes...)...)
	if len(gotos) > 0 {
		u = u.Goto(gotos...)
	}
	return u
}

// callAll runs the calls concurrently and returns the first failure that
// fails the run, in time order: the cause, not the siblings it cancelled.
func (n *ToolNode[S]) callAll(ctx context.Context, calls []model.ToolCall, results []callResult[S], state any) error {
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
			results[i] = n.call(ctx, c, state)
			if err := results[i].fatal; err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

func (n *ToolNode[S]) call(ctx context.Context, c model.ToolCall, state any) callResult[S] {
	t := n.byName[c.Name]
	if t == nil {
		return callResult[S]{msg: model.ToolError(c.ID, c.Name, unknownToolContent(c.Name, n.known))}
	}
	v, err := invoke(&toolCall{Context: ctx, id: c.ID, state: state, args: c.Arguments}, t, c)
	if err != nil {
		return n.failed(ctx, c, err)
	}
	content, err := content(c.Name, v)
	if err != nil {
		return n.failed(ctx, c, err)
	}
	r := callResult[S]{msg: model.ToolResult(c.ID, c.Name, content)}
	if o, ok := v.(stateOutput); ok {
		so, ok := o.(Output[S])
		if !ok {
			return callResult[S]{fatal: fmt.Errorf("prebuilt: tool %q returned %T, but this ToolNode runs over %v: return %v", c.Name, v, reflect.TypeFor[S](), reflect.TypeFor[Output[S]]())}
		}
		r.writes, r.gotos = so.Writes, so.Goto
	}
	return r
}

// failed decides what a call's error becomes: a message for the model or
// the run's failure.
func (n *ToolNode[S]) failed(ctx context.Context, c model.ToolCall, err error) callResult[S] {
	var (
		ae *ArgumentError
		pe *PanicError
	)
	switch {
	case graph.IsInterrupt(err):
		return callResult[S]{fatal: err}
	case errors.As(err, &ae):
		if n.o.failOnArgs {
			return callResult[S]{fatal: ae}
		}
		if n.o.errorContent != nil {
			return callResult[S]{msg: model.ToolError(c.ID, c.Name, n.o.errorContent(c, ae))}
		}
		return callResult[S]{msg: model.ToolError(c.ID, c.Name, invalidArgumentsContent(c, ae))}
	case ctx.Err() != nil:
		return callResult[S]{fatal: fmt.Errorf("prebuilt: tool %q (call %s) stopped: %w", c.Name, c.ID, context.Cause(ctx))}
	case !n.o.errorsToModel:
		if errors.As(err, &pe) {
			return callResult[S]{fatal: pe}
		}
		return callResult[S]{fatal: &ToolError{Tool: c.Name, CallID: c.ID, Err: err}}
	case n.o.errorContent != nil:
		return callResult[S]{msg: model.ToolError(c.ID, c.Name, n.o.errorContent(c, err))}
	}
	return callResult[S]{msg: model.ToolError(c.ID, c.Name, "Error: "+err.Error()+"\n Please fix your mistakes.")}
}

// unknownToolContent is LangGraph's text for a call of a tool the node lacks.
func unknownToolContent(name string, known []string) string {
	return "Error: " + name + " is not a valid tool, try one of [" + strings.Join(known, ", ") + "]."
}

// invalidArgumentsContent is LangGraph's text for arguments that do not fit
// a tool's schema, with the arguments as the model sent them and one
// problem a line.
func invalidArgumentsContent(c model.ToolCall, ae *ArgumentError) string {
	args := strings.TrimSpace(string(c.Arguments))
	var text string
	switch {
	case args == "" || args == "null":
		args = "{}"
	case args[0] == '"' && json.Unmarshal([]byte(args), &text) == nil:
		args = text // text that was not JSON, kept by model.Arguments as a string
	}
	return "Error invoking tool '" + c.Name + "' with kwargs " + args + " with error:\n " +
		strings.Join(ae.Problems, "\n") + "\n Please fix the error and try again."
}

func invoke(ctx context.Context, t Tool, c model.ToolCall) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &PanicError{Tool: c.Name, CallID: c.ID, Value: p, Stack: debug.Stack()}
		}
	}()
	return t.Call(ctx, c.Arguments)
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
