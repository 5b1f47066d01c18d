package prebuilt

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentgraph/agentgraph/model"
	"github.com/invopop/jsonschema"
)

// schemaFor returns the JSON schema of a tool's arguments type: an object
// schema with every nested type written out in place (no $ref, no $defs),
// and neither $schema nor $id — model.SchemaFor, which structured output
// uses too, so a tool's arguments and a typed answer follow one rule.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := model.SchemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("tool arguments: %w", err)
	}
	return s, nil
}

// validator checks decoded JSON against the subset of JSON Schema the
// reflector produces, collecting every problem with the path where it is.
type validator struct {
	problems []string
}

func (v *validator) addf(path, format string, args ...any) {
	where := "arguments"
	if path != "" {
		where = "field " + quote(path)
	}
	msg := fmt.Sprintf(format, args...)
	sep := ": "
	if strings.HasPrefix(msg, "is ") {
		sep = " " // field "x" is required
	}
	v.problems = append(v.problems, where+sep+msg)
}

func quote(s string) string { return `"` + s + `"` }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names what a schema expects, for messages.
func describe(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		var alts []string
		for _, a := range append(slices.Clone(s.OneOf), s.AnyOf...) {
			alts = append(alts, describe(a))
		}
		return strings.Join(alts, " or ")
	}
	if len(s.Enum) > 0 {
		b, _ := json.Marshal(s.Enum)
		return "one of " + string(b)
	}
	t := s.Type
	switch t {
	case "":
		return "any value"
	case "array":
		if s.Items != nil && s.Items.Type != "" {
			return "array of " + describe(s.Items)
		}
	case "string":
		if s.Format != "" {
			return "string (" + s.Format + ")"
		}
	}
	return t
}

// kind names the JSON type of a decoded value.
func kind(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if isInteger(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

// isInteger reports whether n is written as an integer. 1.0 is not: Go
// cannot decode it into an integer field.
func isInteger(n json.Number) bool {
	return !strings.ContainsAny(string(n), ".eE")
}

func show(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 40 {
		b = append(b[:37:37], "..."...)
	}
	return string(b)
}

func typeMatches(want string, x any) bool {
	got := kind(x)
	switch want {
	case "", got:
		return true
	case "number":
		return got == "integer"
	}
	return false
}

func (v *validator) check(s *jsonschema.Schema, x any, path string) {
	if s == nil || s == jsonschema.TrueSchema {
		return
	}
	if s == jsonschema.FalseSchema {
		v.addf(path, "is not allowed")
		return
	}
	if alts := append(slices.Clone(s.OneOf), s.AnyOf...); len(alts) > 0 {
		for _, a := range alts {
			sub := validator{}
			sub.check(a, x, path)
			if len(sub.problems) == 0 {
				return
			}
		}
		v.addf(path, "expected %s, got %s %s", describe(s), kind(x), show(x))
		return
	}
	if !typeMatches(s.Type, x) {
		v.addf(path, "expected %s, got %s %s", describe(s), kind(x), show(x))
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return sameJSON(e, x) }) {
		v.addf(path, "expected %s, got %s", describe(s), show(x))
		return
	}
	switch x := x.(type) {
	case map[string]any:
		v.object(s, x, path)
	case []any:
		if s.MinItems != nil && uint64(len(x)) < *s.MinItems {
			v.addf(path, "needs at least %d items, got %d", *s.MinItems, len(x))
		}
		if s.MaxItems != nil && uint64(len(x)) > *s.MaxItems {
			v.addf(path, "takes at most %d items, got %d", *s.MaxItems, len(x))
		}
		for i, e := range x {
			v.check(s.Items, e, fmt.Sprintf("%s[%d]", path, i))
		}
	case string:
		if s.MinLength != nil || s.MaxLength != nil {
			n := uint64(utf8.RuneCountInString(x))
			if s.MinLength != nil && n < *s.MinLength {
				v.addf(path, "needs at least %d characters, got %d", *s.MinLength, n)
			}
			if s.MaxLength != nil && n > *s.MaxLength {
				v.addf(path, "takes at most %d characters, got %d", *s.MaxLength, n)
			}
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(x) {
				v.addf(path, "must match the pattern %s, got %s", s.Pattern, show(x))
			}
		}
	case json.Number:
		v.bound(path, x, s.Minimum, func(c int) bool { return c >= 0 }, "at least")
		v.bound(path, x, s.Maximum, func(c int) bool { return c <= 0 }, "at most")
		v.bound(path, x, s.ExclusiveMinimum, func(c int) bool { return c > 0 }, "more than")
		v.bound(path, x, s.ExclusiveMaximum, func(c int) bool { return c < 0 }, "less than")
	}
}

func (v *validator) bound(path string, x, limit json.Number, ok func(int) bool, what string) {
	if limit == "" {
		return
	}
	a, errA := strconv.ParseFloat(string(x), 64)
	b, errB := strconv.ParseFloat(string(limit), 64)
	if errA == nil && errB == nil && !ok(cmp.Compare(a, b)) {
		v.addf(path, "must be %s %s, got %s", what, limit, x)
	}
}

func (v *validator) object(s *jsonschema.Schema, x map[string]any, path string) {
	for _, name := range s.Required {
		if _, ok := x[name]; !ok {
			v.addf(join(path, name), "is required (%s)", describe(property(s, name)))
		}
	}
	var unknown []string
	names := make([]string, 0, len(x))
	for name := range x {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		val := x[name]
		if p := property(s, name); p != nil {
			if val == nil && !slices.Contains(s.Required, name) {
				continue // an optional field given as null keeps its zero value
			}
			v.check(p, val, join(path, name))
			continue
		}
		switch {
		case s.AdditionalProperties == jsonschema.FalseSchema:
			unknown = append(unknown, name)
		case s.AdditionalProperties != nil:
			v.check(s.AdditionalProperties, val, join(path, name))
		}
	}
	if len(unknown) > 0 {
		var known []string
		if s.Properties != nil {
			for p := s.Properties.Oldest(); p != nil; p = p.Next() {
				known = append(known, p.Key)
			}
		}
		for _, name := range unknown {
			v.addf(join(path, name), "is not a known field; the fields are: %s", strings.Join(known, ", "))
		}
	}
}

func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if s.Properties == nil {
		return nil
	}
	p, _ := s.Properties.Get(name)
	return p
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
