package prebuilt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/invopop/jsonschema"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// Tool is something a model can call. Spec is what the model is told: the
// tool's name, what it does and the JSON schema of its arguments. Call runs
// it with the arguments the model sent, a JSON object as raw text, and
// returns its result.
//
// The result becomes the content of the tool message the model reads
// (see Content): a string as it is, an Output[S] by its Content field (its
// Writes and Goto go to the graph), anything else as JSON. An error is the
// tool's failure: a ToolNode fails the run with it, or hands it to the model
// when built WithToolErrorsToModel. Return an *ArgumentError for arguments
// that do not fit the schema, so the model is told to correct its call.
//
// Call gets the run config from ctx (graph.ConfigFrom) and, inside a
// ToolNode, the id of the call it answers (ToolCallID). It may pause the run
// with graph.Interrupt. Implementations are safe for concurrent use.
//
// NewTool makes a Tool from a Go function with typed arguments, NewRawTool
// from a JSON schema and a function taking the raw arguments; Wrap adds
// middleware to any Tool.
type Tool interface {
	Spec() model.ToolSpec
	Call(ctx context.Context, args json.RawMessage) (any, error)
}

// typedTool is a Tool whose arguments are a Go struct. Its Call decodes and
// calls the function itself, so that a call's stack is no deeper than it
// must be: ToolNode runs calls on fresh goroutines, whose stacks grow by
// copying.
type typedTool[Args, Result any] struct {
	toolInfo
	fn func(ctx context.Context, args Args) (Result, error)
}

// toolInfo is what a typed tool knows apart from its function.
type toolInfo struct {
	name        string
	description string
	schema      *jsonschema.Schema
	params      json.RawMessage
	assign      assigner // nil: arguments decode through encoding/json
	flat        *flatArgs
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewTool makes a tool that calls fn with the model's arguments decoded into
// Args, a struct. The schema the model sees comes from Args through
// github.com/invopop/jsonschema, written out in full (no $ref):
//
//   - property names come from json tags;
//   - a field is required unless its json tag says omitempty or omitzero;
//   - `jsonschema:"description=..."` describes a field (escape a comma as
//     \\, or use the tag `jsonschema_description:"..."` for free text), and
//     the other jsonschema tag keywords (enum=, minimum=, ...) apply as
//     documented there;
//   - fields not in Args are rejected (additionalProperties is false).
//
// The run config is not an argument: fn reads it from ctx with
// graph.ConfigFrom, and the id of the call it answers with ToolCallID.
//
// The tool's Call returns what fn returns, which becomes the tool message's
// content: a string as it is, anything else as JSON. To update the graph's
// state as well, return an Output[S]. Arguments that are not a JSON object
// matching the schema give an *ArgumentError, and fn is not called.
func NewTool[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) (Tool, error) {
	if !toolName.MatchString(name) {
		return nil, fmt.Errorf("prebuilt: tool name %q: use 1 to 64 letters, digits, _ or -", name)
	}
	if fn == nil {
		return nil, fmt.Errorf("prebuilt: tool %q has a nil function", name)
	}
	s, err := schemaFor(reflect.TypeFor[Args]())
	if err != nil {
		return nil, fmt.Errorf("prebuilt: tool %q: %w", name, err)
	}
	params, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("prebuilt: tool %q: encode schema: %w", name, err)
	}
	return &typedTool[Args, Result]{
		toolInfo: toolInfo{name: name, description: description, schema: s, params: params, assign: assignerFor(reflect.TypeFor[Args]()), flat: newFlatArgs(reflect.TypeFor[Args](), s)},
		fn:       fn,
	}, nil
}

// MustTool is NewTool for tools declared at package level: it panics on the
// errors NewTool returns, all of which are mistakes in the declaration.
func MustTool[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) Tool {
	t, err := NewTool(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Spec returns what a model is told about the tool.
func (t *toolInfo) Spec() model.ToolSpec {
	return model.ToolSpec{Name: t.name, Description: t.description, Parameters: slices.Clone(t.params)}
}

// Call decodes and checks raw, then calls the tool's function.
func (t *typedTool[Args, Result]) Call(ctx context.Context, raw json.RawMessage) (any, error) {
	var args Args
	if err := t.decode(ctx, raw, &args); err != nil {
		return nil, err
	}
	r, err := t.fn(ctx, args)
	return r, err
}

func (t *typedTool[Args, Result]) resultType() reflect.Type { return reflect.TypeFor[Result]() }

// resultTyped is implemented by tools that know the Go type of their
// result, so NewToolNode can reject an Output for another state up front.
type resultTyped interface{ resultType() reflect.Type }

// Content returns the text of the tool message a tool's result becomes: a
// string as it is, an Output[S] by its Content, anything else encoded as
// JSON.
func Content(result any) (string, error) { return content("", result) }

// content is Content with the tool's name in its error.
func content(tool string, result any) (string, error) {
	if o, ok := result.(stateOutput); ok {
		result = o.toolContent()
	}
	if s, ok := result.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(result)
	if err != nil {
		if tool == "" {
			return "", fmt.Errorf("encode the result as JSON: %w; return a string or a JSON-encodable value", err)
		}
		return "", fmt.Errorf("tool %q: encode its result as JSON: %w; return a string or a JSON-encodable value", tool, err)
	}
	return string(b), nil
}

// normalize trims args and turns empty arguments and null into {}.
func normalize(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}

// parse parses raw arguments into the values the validator reads. Callers
// on a tool call's path call parseArgs first themselves and come here only
// when it declines, so that the common case adds no frame to the stack of
// the call's goroutine.
func parse(name string, raw json.RawMessage, share bool) (any, error) {
	x, ok := parseArgs(raw, share)
	if !ok {
		var err error
		if x, err = decodeArgs(name, raw); err != nil {
			return nil, err
		}
	}
	if s, ok := x.(string); ok {
		return nil, textArgs(name, s)
	}
	return x, nil
}

// decodeArgs parses raw with encoding/json, for the text parseArgs
// declines, and says what is wrong with text that is not JSON.
func decodeArgs(name string, raw json.RawMessage) (any, error) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil || dec.More() {
		if err == nil {
			err = errors.New("text follows the JSON value")
		}
		return nil, &ArgumentError{Tool: name, Problems: []string{fmt.Sprintf("arguments are not valid JSON (%v); send one JSON object", err)}}
	}
	return x, nil
}

// textArgs reports arguments that are a JSON string: model.Arguments keeps
// argument text that is not JSON as a string.
func textArgs(name, s string) error {
	return &ArgumentError{Tool: name, Problems: []string{fmt.Sprintf("arguments are not a JSON object but the text %s; send one JSON object", show(s))}}
}

func (t *toolInfo) decode(ctx context.Context, raw json.RawMessage, dst any) error {
	raw = normalize(raw)
	share := sharedArgs(ctx, raw)
	if t.flat != nil {
		v := reflect.ValueOf(dst).Elem()
		if t.flat.decode(raw, share, v) {
			return nil
		}
		v.SetZero()
	}
	x, ok := parseArgs(raw, share)
	if !ok {
		var err error
		if x, err = decodeArgs(t.name, raw); err != nil {
			return err
		}
	}
	if s, ok := x.(string); ok {
		return textArgs(t.name, s)
	}
	var v validator
	v.check(t.schema, x, "")
	if len(v.problems) > 0 {
		return &ArgumentError{Tool: t.name, Problems: v.problems}
	}
	if t.assign != nil {
		v := reflect.ValueOf(dst).Elem()
		if t.assign(x, v) {
			return nil
		}
		v.SetZero()
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &ArgumentError{Tool: t.name, Problems: []string{fmt.Sprintf("field %q: %s does not fit %v", te.Field, te.Value, te.Type)}}
		}
		return &ArgumentError{Tool: t.name, Problems: []string{err.Error()}}
	}
	return nil
}

// ErrInvalidArguments reports tool arguments that are not a JSON object
// matching the tool's schema.
var ErrInvalidArguments = errors.New("prebuilt: invalid tool arguments")

// ArgumentError lists what is wrong with a call's arguments, each problem
// naming the field and the type it expects, so a model can correct its call.
// It matches ErrInvalidArguments with errors.Is.
type ArgumentError struct {
	Tool     string
	Problems []string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %s", e.Tool, strings.Join(e.Problems, "; "))
}

// Is makes errors.Is(err, ErrInvalidArguments) true.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// Output is a tool result that updates the graph's state as well as
// answering the model: Content becomes the tool message (a string as it is,
// anything else as JSON), Writes are applied with the ToolNode's update, and
// Goto routes the graph as graph.Update.Goto does. A ToolNode over state S
// accepts only tools returning Output[S]; NewToolNode checks this.
//
// Writes to the messages key land after the tool messages of the step. When
// several tools write one last-value key in the same step, the engine
// rejects the update: give such a key a reducer.
type Output[S any] struct {
	Content any
	Writes  []graph.Write[S]
	Goto    []string
}

func (o Output[S]) toolContent() any { return o.Content }

type stateOutput interface{ toolContent() any }

var stateOutputType = reflect.TypeFor[stateOutput]()

type toolCallKey struct{}

// toolCall is what a ToolNode tells each tool through its context, and
// that context itself (one allocation a call instead of two).
type toolCall struct {
	context.Context
	id    string
	state any
	// args are the arguments of the call's message, which the engine
	// never modifies: strings decoded from them need no copy.
	args json.RawMessage
}

func (c *toolCall) Value(key any) any {
	if key == (toolCallKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// sharedArgs reports whether strings decoded from raw may point into it
// rather than be copied: raw lies within the arguments of the message a
// ToolNode is answering (a message of the state, read-only like all of it).
// Arguments from anywhere else, a direct call's or a middleware's rewrite,
// are copied, so a caller may reuse its buffer.
func sharedArgs(ctx context.Context, raw []byte) bool {
	c, ok := ctx.Value(toolCallKey{}).(*toolCall)
	if !ok || len(raw) == 0 || len(c.args) == 0 {
		return false
	}
	msg, at := uintptr(unsafe.Pointer(unsafe.SliceData(c.args))), uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	return at >= msg && at+uintptr(len(raw)) <= msg+uintptr(len(c.args))
}

// ToolCallID returns the id of the tool call ctx's tool is answering, or ""
// outside a ToolNode.
func ToolCallID(ctx context.Context) string {
	if c, ok := ctx.Value(toolCallKey{}).(*toolCall); ok {
		return c.id
	}
	return ""
}

// ToolState returns the graph state the ToolNode read when it started ctx's
// tool call, and whether there is one of type S. It is the state before the
// step's writes, shared by the calls of one step: read it, do not change
// what it points to. A tool that needs it cannot be called directly, so
// prefer passing what the tool needs as arguments or run config values.
func ToolState[S any](ctx context.Context) (S, bool) {
	if c, ok := ctx.Value(toolCallKey{}).(*toolCall); ok {
		if s, ok := c.state.(*S); ok {
			return *s, true
		}
		if p := reflect.ValueOf(c.state); p.Kind() == reflect.Pointer && !p.IsNil() {
			s, ok := p.Elem().Interface().(S) // S an interface the state implements
			return s, ok
		}
	}
	var zero S
	return zero, false
}

// WithToolCallID returns ctx carrying a tool call id, for calling a tool
// directly as a ToolNode would.
func WithToolCallID(ctx context.Context, id string) context.Context {
	if ctx == nil {
		panic("prebuilt: WithToolCallID of a nil context")
	}
	return &toolCall{Context: ctx, id: id}
}
