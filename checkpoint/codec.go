package checkpoint

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/agentgraph/agentgraph/internal/jsonenc"
)

// Codec turns channel values into bytes and back. The graph encodes every
// channel value, write and Send argument with its Codec before a Saver sees
// it. JSON is the default; plug another (msgpack, encryption over JSON) by
// implementing these two methods and passing it to the graph when
// compiling. A Codec must round-trip every state type exactly.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default Codec: encoding/json, with two fast paths that write
// the same JSON without reflection: values that are already JSON-shaped (any
// holding map[string]any, []any, string, float64, bool, integers or nil; map
// keys are not sorted there), and values — or slices of values — whose
// pointer type implements JSONAppender (model.Message does).
var JSON Codec = jsonCodec{}

// JSONAppender is implemented by types that append their own encoding/json
// encoding to a byte slice faster than reflection writes it. JSONSize, when
// the type has it, estimates the length, so a slice of them is encoded into
// one buffer of the right size.
type JSONAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

type jsonSizer interface{ JSONSize() int }

var appenderType = reflect.TypeFor[JSONAppender]()

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case *any:
		if b, ok := appendJSON(nil, *x); ok {
			return b, nil
		}
	case JSONAppender:
		return x.AppendJSON(nil)
	default:
		if b, ok, err := appendSlice(v); ok {
			return b, err
		}
	}
	return json.Marshal(v)
}

// appendSlice encodes a pointer to a slice of JSONAppender values.
func appendSlice(v any) ([]byte, bool, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
		return nil, false, nil
	}
	s := rv.Elem()
	if !reflect.PointerTo(s.Type().Elem()).Implements(appenderType) {
		return nil, false, nil
	}
	if s.IsNil() {
		return []byte("null"), true, nil
	}
	n := 2
	for i := range s.Len() {
		if z, ok := s.Index(i).Addr().Interface().(jsonSizer); ok {
			n += z.JSONSize() + 1
		} else {
			n += 64
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i := range s.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = s.Index(i).Addr().Interface().(JSONAppender).AppendJSON(b); err != nil {
			return nil, true, err
		}
	}
	return append(b, ']'), true, nil
}

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// appendJSON appends v as JSON when v is made only of JSON's own types; it
// reports false, having appended nothing useful, for anything else.
func appendJSON(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return jsonenc.String(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return b, false
		}
		return appendFloat(b, x), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		b = append(b, '{')
		first := true
		for k, e := range x {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = jsonenc.String(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendFloat formats like encoding/json.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
