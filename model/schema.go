package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
)

// SchemaFor returns the JSON schema of a Go struct type, as tool arguments
// and structured answers describe themselves to a model: an object schema
// with every nested type written out in place (no $ref, no $defs) and
// neither $schema nor $id. Field names and requiredness follow the json
// tags (a field without omitempty is required); jsonschema tags add
// descriptions, enums and bounds. A pointer to a struct is taken as the
// struct.
//
// It fails for a type that is not a struct, that contains itself (a schema
// without $ref cannot describe it), or that has a field JSON cannot carry.
func SchemaFor(t reflect.Type) (s *jsonschema.Schema, err error) {
	st := t
	for st != nil && st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st == nil || st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("model: type %v is not a struct: a schema describes a JSON object, so declare a struct with json tags", t)
	}
	if cycle := selfReference(st, nil); cycle != nil {
		return nil, fmt.Errorf("model: type %v contains itself (%s): a schema without $ref cannot describe it; break the cycle", t, strings.Join(cycle, " -> "))
	}
	defer func() {
		if p := recover(); p != nil {
			// The reflector panics on kinds JSON has no form for (chan, func).
			s, err = nil, fmt.Errorf("model: type %v has a field JSON cannot carry: %v", t, p)
		}
	}()
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s = r.ReflectFromType(st)
	s.Version, s.ID, s.Definitions = "", "", nil
	return s, nil
}

// selfReference returns the chain of struct types through which t contains
// itself, or nil.
func selfReference(t reflect.Type, seen []reflect.Type) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return selfReference(t.Elem(), seen)
	case reflect.Struct:
	default:
		return nil
	}
	if i := slices.Index(seen, t); i >= 0 {
		var names []string
		for _, s := range seen[i:] {
			names = append(names, s.String())
		}
		return append(names, t.String())
	}
	seen = append(seen, t)
	for i := range t.NumField() {
		if c := selfReference(t.Field(i).Type, seen); c != nil {
			return c
		}
	}
	return nil
}

// conform checks a decoded JSON value (numbers as json.Number) against the
// part of JSON Schema that SchemaFor writes, and returns every problem found,
// each naming where it is, in a stable order.
func conform(s *jsonschema.Schema, x any) []string {
	var c conformance
	c.value(s, x, "")
	return c.problems
}

type conformance struct{ problems []string }

func (c *conformance) add(path, format string, args ...any) {
	where := "the answer"
	if path != "" {
		where = "field " + strconv.Quote(path)
	}
	c.problems = append(c.problems, where+" "+fmt.Sprintf(format, args...))
}

func (c *conformance) value(s *jsonschema.Schema, x any, path string) {
	switch {
	case s == nil || s == jsonschema.TrueSchema:
		return
	case s == jsonschema.FalseSchema:
		c.add(path, "is not allowed")
		return
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 {
		for _, a := range alts {
			if len(conform(a, x)) == 0 {
				return
			}
		}
		c.add(path, "must be %s, not %s %s", expects(s), jsonKind(x), brief(x))
		return
	}
	if !kindFits(s.Type, x) {
		c.add(path, "must be %s, not %s %s", expects(s), jsonKind(x), brief(x))
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return sameJSON(e, x) }) {
		c.add(path, "must be %s, not %s", expects(s), brief(x))
		return
	}
	if s.Const != nil && !sameJSON(s.Const, x) {
		c.add(path, "must be %s, not %s", brief(s.Const), brief(x))
		return
	}
	switch x := x.(type) {
	case map[string]any:
		c.object(s, x, path)
	case []any:
		if s.MinItems != nil && uint64(len(x)) < *s.MinItems {
			c.add(path, "needs at least %d items, has %d", *s.MinItems, len(x))
		}
		if s.MaxItems != nil && uint64(len(x)) > *s.MaxItems {
			c.add(path, "takes at most %d items, has %d", *s.MaxItems, len(x))
		}
		for i, e := range x {
			c.value(s.Items, e, fmt.Sprintf("%s[%d]", path, i))
		}
	case string:
		n := uint64(utf8.RuneCountInString(x))
		if s.MinLength != nil && n < *s.MinLength {
			c.add(path, "needs at least %d characters, has %d", *s.MinLength, n)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			c.add(path, "takes at most %d characters, has %d", *s.MaxLength, n)
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(x) {
				c.add(path, "must match %s, not %s", s.Pattern, brief(x))
			}
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return
		}
		for _, b := range []struct {
			limit json.Number
			ok    func(f, l float64) bool
			words string
		}{
			{s.Minimum, func(f, l float64) bool { return f >= l }, "at least"},
			{s.Maximum, func(f, l float64) bool { return f <= l }, "at most"},
			{s.ExclusiveMinimum, func(f, l float64) bool { return f > l }, "more than"},
			{s.ExclusiveMaximum, func(f, l float64) bool { return f < l }, "less than"},
		} {
			if l, err := b.limit.Float64(); b.limit != "" && err == nil && !b.ok(f, l) {
				c.add(path, "must be %s %s, not %s", b.words, b.limit, x)
			}
		}
	}
}

func (c *conformance) object(s *jsonschema.Schema, x map[string]any, path string) {
	for _, name := range s.Required {
		if _, ok := x[name]; !ok {
			c.add(joinPath(path, name), "is missing (it must be %s)", expects(propertyOf(s, name)))
		}
	}
	names := make([]string, 0, len(x))
	for name := range x {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if p := propertyOf(s, name); p != nil {
			if x[name] == nil && !slices.Contains(s.Required, name) {
				continue // an optional field given as null keeps its zero value
			}
			c.value(p, x[name], joinPath(path, name))
			continue
		}
		switch {
		case s.AdditionalProperties == jsonschema.FalseSchema:
			var known []string
			if s.Properties != nil {
				for p := s.Properties.Oldest(); p != nil; p = p.Next() {
					known = append(known, p.Key)
				}
			}
			c.add(joinPath(path, name), "is not a field of this object; its fields are: %s", strings.Join(known, ", "))
		case s.AdditionalProperties != nil:
			c.value(s.AdditionalProperties, x[name], joinPath(path, name))
		}
	}
}

func propertyOf(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if s == nil || s.Properties == nil {
		return nil
	}
	p, _ := s.Properties.Get(name)
	return p
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// expects names what a schema admits, for messages.
func expects(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 {
		var names []string
		for _, a := range alts {
			names = append(names, expects(a))
		}
		return strings.Join(names, " or ")
	}
	if len(s.Enum) > 0 {
		b, _ := json.Marshal(s.Enum)
		return "one of " + string(b)
	}
	switch s.Type {
	case "":
		return "any value"
	case "array":
		switch {
		case s.Items == nil || s.Items.Type == "":
			return "an array"
		case len(s.Items.Enum) == 0 && len(s.Items.AnyOf) == 0 && len(s.Items.OneOf) == 0 && s.Items.Format == "":
			return "an array of " + s.Items.Type + "s"
		}
		return "an array whose items are " + expects(s.Items)
	case "object", "integer":
		return "an " + s.Type
	case "string":
		if s.Format != "" {
			return "a string (" + s.Format + ")"
		}
	}
	return "a " + s.Type
}

func jsonKind(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "number" // 1.0 cannot be decoded into a Go integer
		}
		return "integer"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

func kindFits(want string, x any) bool {
	got := jsonKind(x)
	return want == "" || want == got || (want == "number" && got == "integer")
}

func brief(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 40 {
		b = append(b[:37:37], "..."...)
	}
	return string(b)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
