package checkpoint

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// The fast path must produce what encoding/json reads back as the same value.
func TestJSONFastPathRoundTrips(t *testing.T) {
	values := []any{
		nil, "plain", "quote\" back\\ <html>&amp; \n\t\r \x01 \u2028 é 日本 \xff", true, false,
		0.0, -1.5, 1e-7, 1e21, 123456789.0, math.MaxFloat64, 42, int64(6327816386138),
		[]any{}, []any{"a", 1.0, nil, []any{true}},
		map[string]any{}, map[string]any{"k": map[string]any{"nested": []any{"hi?", true, 1.0, nil}}, "<k>": "v"},
	}
	for _, v := range values {
		got, err := JSON.Marshal(&v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if !json.Valid(got) {
			t.Fatalf("%#v: invalid JSON %s", v, got)
		}
		var back, want any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		std, _ := json.Marshal(v)
		json.Unmarshal(std, &want)
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("%#v: fast path gives %s, encoding/json %s", v, got, std)
		}
	}
	// What the fast path does not know goes to encoding/json.
	var odd any = struct{ A int }{7}
	got, err := JSON.Marshal(&odd)
	if err != nil || string(got) != `{"A":7}` {
		t.Fatalf("fallback: %s %v", got, err)
	}
	var nan any = math.NaN()
	if _, err := JSON.Marshal(&nan); err == nil {
		t.Fatal("NaN must fail as encoding/json fails")
	}
}

func BenchmarkJSONAny(b *testing.B) {
	leaf := []any{"hi?hi?hi?", true, 1, int64(6327816386138), nil}
	m := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		m[k] = map[string]any{"x": leaf, "y": leaf, "z": leaf}
	}
	var v any = []any{m, m, m, m}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			JSON.Marshal(&v)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(&v)
		}
	})
}

type appender struct{ A string }

func (a *appender) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"A":`...)
	b, _ = appendJSON(b, a.A)
	return append(b, '}'), nil
}

func TestJSONAppenderSlices(t *testing.T) {
	for _, v := range [][]appender{nil, {}, {{"x"}, {"<y>"}}} {
		got, err := JSON.Marshal(&v)
		want, _ := json.Marshal(v)
		if err != nil || string(got) != string(want) {
			t.Errorf("%v: got %s (%v), want %s", v, got, err, want)
		}
		var back []appender
		if err := JSON.Unmarshal(got, &back); err != nil || len(back) != len(v) {
			t.Errorf("round trip of %s: %v %v", got, back, err)
		}
	}
}

// A map or list that appears several times is written each time in full,
// also when what repeats holds repeats itself, and the output is allocated
// at its size.
func TestJSONFastPathRepeats(t *testing.T) {
	inner := map[string]any{"k": []any{"a", 1.0}}
	list := []any{inner, inner}
	outer := []any{list, inner, list, "<&>"}
	for _, v := range []any{
		map[string]any{"x": list, "y": list, "z": []any{list, inner, list[:1]}},
		[]any{outer, map[string]any{"o": outer, "l": list}, outer, []any{outer, outer[:2]}},
	} {
		got, err := JSON.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		var back, want any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		std, _ := json.Marshal(v)
		json.Unmarshal(std, &want)
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("got %s\nwant %s", got, std)
		}
		if len(got) != len(std) || cap(got) != len(got) {
			t.Errorf("output of %d bytes with room for %d, want %d", len(got), cap(got), len(std))
		}
	}
}
