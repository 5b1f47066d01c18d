package prebuilt

import (
	"reflect"

	"github.com/invopop/jsonschema"
)

// flatArgs decodes arguments straight into a struct of scalar fields whose
// schema asks nothing of them beyond their types, the usual shape of a
// tool's arguments ({"query": "..."}), without building the tree the
// validator reads: no map, no boxed values, no second walk. It declines
// whatever it is not sure of — a key it does not know, a null, a value of
// another type, a required field missing — and the general path then
// decodes the text again and words the error, so the two agree.
type flatArgs struct {
	fields   []flatField
	required uint64 // a bit for each required field, by position in fields
}

type flatField struct {
	name    string
	index   int          // in the struct
	kind    reflect.Kind // reflect.String, reflect.Bool, or a number kind
	integer bool         // the schema asks for an integer
	assign  assigner     // for numbers
}

// newFlatArgs returns the flat decoder of t under schema s, or nil when t or
// s is not flat: a field that is not a string, bool or number (or decodes
// itself), or a property with more than a type (an enum, a pattern, a
// bound...).
func newFlatArgs(t reflect.Type, s *jsonschema.Schema) *flatArgs {
	if t.Kind() != reflect.Struct || s == nil || s.Type != "object" || s.Properties == nil || s.Ref != "" ||
		len(s.OneOf)+len(s.AnyOf)+len(s.AllOf)+len(s.Enum) > 0 || s.Not != nil {
		return nil
	}
	byName, ok := structFields(t)
	if !ok || len(byName) == 0 || len(byName) > 64 {
		return nil
	}
	f := &flatArgs{}
	for name, sf := range byName {
		ft := t.Field(sf.index).Type
		if decodesItself(ft) {
			return nil
		}
		p := property(s, name)
		if p == nil || !plainScalar(p) {
			return nil
		}
		field := flatField{name: name, index: sf.index, kind: ft.Kind(), integer: p.Type == "integer"}
		switch {
		case field.kind == reflect.String && p.Type == "string":
		case field.kind == reflect.Bool && p.Type == "boolean":
		case isNumberKind(field.kind) && (p.Type == "integer" || p.Type == "number"):
			field.assign = sf.assign
		default:
			return nil
		}
		f.fields = append(f.fields, field)
	}
	for _, name := range s.Required {
		i := f.find(name)
		if i < 0 {
			return nil
		}
		f.required |= 1 << i
	}
	return f
}

// plainScalar reports whether p asks for a type and nothing else a value
// could fail.
func plainScalar(p *jsonschema.Schema) bool {
	return p.Type != "" && p.Ref == "" && len(p.Enum) == 0 && len(p.OneOf)+len(p.AnyOf)+len(p.AllOf) == 0 && p.Not == nil &&
		p.Const == nil && p.Pattern == "" && p.Format == "" && p.MinLength == nil && p.MaxLength == nil &&
		p.Minimum == "" && p.Maximum == "" && p.ExclusiveMinimum == "" && p.ExclusiveMaximum == "" && p.MultipleOf == ""
}

func isNumberKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func (f *flatArgs) find(name string) int {
	for i := range f.fields {
		if f.fields[i].name == name {
			return i
		}
	}
	return -1
}

// decode stores the object raw holds into v, a struct, and reports whether
// it did; on false v may be partly set. With share, strings point into raw.
func (f *flatArgs) decode(raw []byte, share bool, v reflect.Value) bool {
	p := argParser{b: raw, share: share}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	var seen uint64
	ok := p.members(func(name string) bool {
		i := f.find(name)
		if i < 0 || p.i >= len(p.b) || !f.fields[i].value(&p, v.Field(f.fields[i].index)) {
			return false
		}
		seen |= 1 << i
		return true
	})
	p.space()
	return ok && p.i == len(p.b) && seen&f.required == f.required
}

// value parses one value at p.i (there is one byte at least) into v.
func (ff *flatField) value(p *argParser, v reflect.Value) bool {
	c := p.b[p.i]
	switch ff.kind {
	case reflect.String:
		if c != '"' {
			return false
		}
		s, ok := p.strText()
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch {
		case c == 't' && p.word("true"):
			v.SetBool(true)
			return true
		case c == 'f' && p.word("false"):
			v.SetBool(false)
			return true
		}
		return false
	}
	if c != '-' && (c < '0' || c > '9') {
		return false
	}
	x, ok := p.number()
	if !ok || ff.integer && kind(x) != "integer" {
		return false
	}
	return ff.assign(x, v)
}
