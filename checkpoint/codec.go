package checkpoint

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentgraph/agentgraph/internal/jsonenc"
)

// Codec turns channel values into bytes and back. The graph encodes every
// channel value, write and Send argument with its Codec before a Saver sees
// it. JSON is the default; plug another (msgpack, encryption over JSON) by
// implementing these two methods and passing it to the graph when
// compiling. A Codec must round-trip every state type exactly, and Marshal
// must return bytes that no later call reuses: the graph holds all of a
// checkpoint's values until it stores them.
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
	b := uninitialized(n)
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
	// Clipped: what lies beyond was never written.
	return slices.Clip(append(b, ']')), true, nil
}

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// appendJSON appends v as JSON when v is made only of JSON's own types; it
// reports false, having appended nothing useful, for anything else.
func appendJSON(b []byte, v any) ([]byte, bool) {
	e := anyEncoder{b: b}
	if !e.value(v) {
		return e.b, false
	}
	return e.bytes(), true
}

// anyEncoder writes JSON-shaped values. State often holds the same map or
// list in several places (a list copied into another key, a message in two
// lists); within one encoding, a map or list met again is copied from where
// it was first written instead of being encoded again. Nothing changes the
// values while they are encoded: the engine encodes between steps.
//
// The copies are made last: b holds the output without them, and copies
// says where each goes and what it repeats, so the output is allocated once,
// at its size, and each of its bytes written once. Copies of repeated lists
// make outputs of megabytes from a few kilobytes of distinct JSON; growing
// the output as it is written would copy it again and again.
type anyEncoder struct {
	b      []byte
	seen   map[span]span
	copies []repeat
	grown  int // the bytes the copies add to b
}

// span is a slice's or map's identity (data pointer and length) as a key,
// or a range of the output as a value.
type span struct{ p, n uintptr }

// repeat is a copy of the output's bytes [from, from+n) to go before b[at].
type repeat struct{ at, from, n int }

// pos is the length of the output so far, copies included.
func (e *anyEncoder) pos() int { return len(e.b) + e.grown }

func (e *anyEncoder) again(id span) bool {
	r, ok := e.seen[id]
	if !ok {
		return false
	}
	e.copies = append(e.copies, repeat{at: len(e.b), from: int(r.p), n: int(r.n)})
	e.grown += int(r.n)
	return true
}

func (e *anyEncoder) remember(id span, start int) {
	if e.seen == nil {
		e.seen = map[span]span{}
	}
	e.seen[id] = span{uintptr(start), uintptr(e.pos() - start)}
}

// bytes returns the output with its copies made. A copy repeats bytes
// before it, so they are in place by the time it is made.
func (e *anyEncoder) bytes() []byte {
	if len(e.copies) == 0 {
		return e.b
	}
	out := uninitialized(e.pos())
	done := 0
	for _, c := range e.copies {
		out = append(out, e.b[done:c.at]...)
		done = c.at
		out = append(out, out[c.from:c.from+c.n]...)
	}
	return append(out, e.b[done:]...)
}

// uninitialized returns an empty slice with room for n bytes that were not
// zeroed, for an encoding that writes every byte of a large output: zeroing
// it first would cost about as much as writing it. Only a strings.Builder
// allocates so; the Builder is dropped, and the bytes are the caller's.
func uninitialized(n int) []byte {
	var sb strings.Builder
	sb.Grow(max(n, 1))
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), max(n, 1))[:0:n]
}

func (e *anyEncoder) value(v any) bool {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case string:
		e.b = jsonenc.String(e.b, x)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		e.b = appendFloat(e.b, x)
	case int:
		e.b = strconv.AppendInt(e.b, int64(x), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, x, 10)
	case []any:
		if x == nil {
			e.b = append(e.b, "null"...)
			return true
		}
		id := span{uintptr(unsafe.Pointer(unsafe.SliceData(x))), uintptr(len(x))}
		if len(x) > 0 && e.again(id) {
			return true
		}
		start := e.pos()
		e.b = append(e.b, '[')
		for i, el := range x {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if !e.value(el) {
				return false
			}
		}
		e.b = append(e.b, ']')
		if len(x) > 0 {
			e.remember(id, start)
		}
	case map[string]any:
		if x == nil {
			e.b = append(e.b, "null"...)
			return true
		}
		id := span{reflect.ValueOf(x).Pointer(), uintptr(len(x))}
		if len(x) > 0 && e.again(id) {
			return true
		}
		start := e.pos()
		e.b = append(e.b, '{')
		first := true
		for k, el := range x {
			if !first {
				e.b = append(e.b, ',')
			}
			first = false
			e.b = jsonenc.String(e.b, k)
			e.b = append(e.b, ':')
			if !e.value(el) {
				return false
			}
		}
		e.b = append(e.b, '}')
		if len(x) > 0 {
			e.remember(id, start)
		}
	default:
		return false
	}
	return true
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
