package prebuilt

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/invopop/jsonschema"

	"github.com/agentgraph/agentgraph/model"
)

// rawTool is a Tool described by a JSON schema known only at run time.
type rawTool struct {
	spec   model.ToolSpec
	schema *jsonschema.Schema // nil: only an object is required
	fn     func(ctx context.Context, args json.RawMessage) (any, error)
}

// NewRawTool makes a tool from its spec, whose Parameters is the JSON schema
// of its arguments as the model will see it, and a function taking the
// arguments as raw JSON: for tools whose schema is known only at run time,
// such as an MCP server's or an HTTP API's.
//
// Before fn runs, the arguments are checked as a typed tool's are, with an
// *ArgumentError listing every problem: they must be one JSON object (empty
// arguments and null count as {}), and the schema's type, properties,
// required, additionalProperties, enum, items, bounds, lengths, pattern,
// anyOf and oneOf apply. Other keywords ($ref among them) accept anything, so
// fn, or the service behind it, must still check what it relies on. A schema
// that this reading cannot take (a list of types, for one) is given to the
// model as it is, and then only the object is required. fn gets the
// arguments trimmed, with {} for empty ones.
//
// An empty Parameters means a tool without arguments: {"type":"object",
// "properties":{}}.
func NewRawTool(spec model.ToolSpec, fn func(ctx context.Context, args json.RawMessage) (any, error)) (Tool, error) {
	if !toolName.MatchString(spec.Name) {
		return nil, fmt.Errorf("prebuilt: tool name %q: use 1 to 64 letters, digits, _ or -", spec.Name)
	}
	if fn == nil {
		return nil, fmt.Errorf("prebuilt: tool %q has a nil function", spec.Name)
	}
	t := &rawTool{spec: spec, fn: fn}
	if len(spec.Parameters) == 0 {
		t.spec.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var probe any
	if err := json.Unmarshal(t.spec.Parameters, &probe); err != nil {
		return nil, fmt.Errorf("prebuilt: tool %q: the schema is not JSON: %w", spec.Name, err)
	}
	obj, ok := probe.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("prebuilt: tool %q: the schema is %s, not a JSON object", spec.Name, kind(probe))
	}
	if typ, ok := obj["type"]; ok && typ != "object" {
		return nil, fmt.Errorf("prebuilt: tool %q: the schema's type is %v: tool arguments are a JSON object, so the schema's type must be \"object\"", spec.Name, typ)
	}
	var s jsonschema.Schema
	if json.Unmarshal(t.spec.Parameters, &s) == nil {
		t.schema = canonical(&s)
	}
	t.spec.Parameters = slices.Clone(t.spec.Parameters)
	return t, nil
}

// MustRawTool is NewRawTool that panics on the errors NewRawTool returns.
func MustRawTool(spec model.ToolSpec, fn func(ctx context.Context, args json.RawMessage) (any, error)) Tool {
	t, err := NewRawTool(spec, fn)
	if err != nil {
		panic(err)
	}
	return t
}

func (t *rawTool) Spec() model.ToolSpec {
	s := t.spec
	s.Parameters = slices.Clone(s.Parameters)
	return s
}

func (t *rawTool) Call(ctx context.Context, args json.RawMessage) (any, error) {
	args = normalize(args)
	x, err := parse(t.spec.Name, args, sharedArgs(ctx, args))
	if err != nil {
		return nil, err
	}
	if t.schema == nil {
		if _, ok := x.(map[string]any); !ok {
			return nil, &ArgumentError{Tool: t.spec.Name, Problems: []string{fmt.Sprintf("arguments: expected object, got %s %s", kind(x), show(x))}}
		}
	} else {
		var v validator
		v.check(t.schema, x, "")
		if len(v.problems) > 0 {
			return nil, &ArgumentError{Tool: t.spec.Name, Problems: v.problems}
		}
	}
	return t.fn(ctx, args)
}

// canonical replaces the schemas true and false, which decoding leaves as
// copies, with jsonschema.TrueSchema and FalseSchema, which the validator
// recognises.
func canonical(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s == nil:
		return nil
	case reflect.DeepEqual(s, jsonschema.FalseSchema):
		return jsonschema.FalseSchema
	case reflect.DeepEqual(s, jsonschema.TrueSchema):
		return jsonschema.TrueSchema
	}
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			p.Value = canonical(p.Value)
		}
	}
	s.Items = canonical(s.Items)
	s.AdditionalProperties = canonical(s.AdditionalProperties)
	for _, alts := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
		for i := range alts {
			alts[i] = canonical(alts[i])
		}
	}
	return s
}
