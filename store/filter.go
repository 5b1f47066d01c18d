package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Filter is a parsed SearchOptions.Filter. A nil *Filter matches every
// value.
type Filter struct {
	conds []cond
}

type cond struct {
	field string
	op    string
	arg   any   // normalized JSON value
	set   []any // $in, $nin
}

// ParseFilter checks a SearchOptions.Filter and returns it ready to match,
// or an error wrapping ErrInvalid. Each entry names a top-level field of the
// value. A plain JSON value asks for equality; an object with keys starting
// with "$" is a set of operators, all of which must hold:
//
//	$eq   equal to the argument, as a plain value asks
//	$ne   not equal; a value without the field matches
//	$gt, $gte, $lt, $lte
//	      ordered against a number or a string: numbers compare with
//	      numbers, strings with strings (byte by byte); a field of
//	      another type, or none, does not match
//	$in   equal to one of the argument's elements (an array)
//	$nin  equal to none of them; a value without the field matches
//
// These are LangGraph's operators ($in and $nin come from LangGraph.js).
// Values compare as JSON: 1 equals 1.0, and an object or array equals
// another with equal members, all of them.
func ParseFilter(filter map[string]any) (*Filter, error) {
	if len(filter) == 0 {
		return nil, nil
	}
	norm, err := normalize(filter)
	if err != nil {
		return nil, fmt.Errorf("%w: filter is not JSON: %v", ErrInvalid, err)
	}
	f := &Filter{}
	for _, field := range slices.Sorted(maps.Keys(norm)) {
		v := norm[field]
		ops, ok := v.(map[string]any)
		if !ok || !isOperators(ops) {
			f.conds = append(f.conds, cond{field: field, op: "$eq", arg: v})
			continue
		}
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			c := cond{field: field, op: op, arg: ops[op]}
			switch op {
			case "$eq", "$ne":
			case "$gt", "$gte", "$lt", "$lte":
				switch c.arg.(type) {
				case float64, string:
				default:
					return nil, fmt.Errorf("%w: filter on %q: %s takes a number or a string, not %s", ErrInvalid, field, op, jsonText(c.arg))
				}
			case "$in", "$nin":
				set, ok := c.arg.([]any)
				if !ok {
					return nil, fmt.Errorf("%w: filter on %q: %s takes an array, not %s", ErrInvalid, field, op, jsonText(c.arg))
				}
				c.set = set
			default:
				return nil, fmt.Errorf("%w: filter on %q: unknown operator %q: use $eq, $ne, $gt, $gte, $lt, $lte, $in or $nin", ErrInvalid, field, op)
			}
			f.conds = append(f.conds, c)
		}
	}
	return f, nil
}

// isOperators reports whether an object in a filter is a set of operators
// rather than a value to equal: LangGraph treats it so when any key starts
// with "$".
func isOperators(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// Match reports whether value satisfies every condition of f. It expects
// value as encoding/json decodes JSON into a map[string]any, which is how
// stores hold values.
func (f *Filter) Match(value map[string]any) bool {
	if f == nil {
		return true
	}
	for _, c := range f.conds {
		v, ok := value[c.field]
		if !c.match(v, ok) {
			return false
		}
	}
	return true
}

func (c cond) match(v any, ok bool) bool {
	switch c.op {
	case "$eq":
		return ok && jsonEqual(v, c.arg)
	case "$ne":
		return !ok || !jsonEqual(v, c.arg)
	case "$in":
		return ok && slices.ContainsFunc(c.set, func(a any) bool { return jsonEqual(v, a) })
	case "$nin":
		return !ok || !slices.ContainsFunc(c.set, func(a any) bool { return jsonEqual(v, a) })
	}
	if !ok {
		return false
	}
	var d int
	switch a := c.arg.(type) {
	case float64:
		n, isNum := v.(float64)
		if !isNum {
			return false
		}
		d = cmp.Compare(n, a)
	case string:
		s, isStr := v.(string)
		if !isStr {
			return false
		}
		d = strings.Compare(s, a)
	}
	switch c.op {
	case "$gt":
		return d > 0
	case "$gte":
		return d >= 0
	case "$lt":
		return d < 0
	}
	return d <= 0 // $lte
}

// jsonEqual compares two values as encoding/json decodes them.
func jsonEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

// normalize returns v as encoding/json decodes it, or the error that stops
// it from being JSON.
func normalize(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
