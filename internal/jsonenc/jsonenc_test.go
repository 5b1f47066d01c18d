package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ <b>&amp;", "\n\t\r\x01\x1f", "é 日本 \u2028\u2029", "bad \xff\xfe utf8", string([]byte{0xe2, 0x80})} {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// Every byte that needs escaping, and each byte of a rune that does, at
// every offset of a string long enough for the eight-byte scan, must come
// out as encoding/json writes it.
func TestStringEscapesAtEveryOffset(t *testing.T) {
	var specials []string
	for c := range 0x20 {
		specials = append(specials, string(rune(c)))
	}
	specials = append(specials, `"`, `\`, "<", ">", "&", "\x7f", "\x80", "\xff", "é", "日", "\u2028", "\u2029", "\xe2\x80", "😀")
	// Bytes one bit away from a special one must not be taken for it.
	for _, c := range []byte{'"', '\\', '<', '>', '&', 0x20} {
		for bit := range 7 {
			specials = append(specials, string([]byte{c ^ 1<<bit}))
		}
	}
	for _, sp := range specials {
		for n := range 20 {
			s := strings.Repeat("a", n) + sp + strings.Repeat("b", 19-n)
			want, _ := json.Marshal(s)
			if got := String(nil, s); string(got) != string(want) {
				t.Errorf("%q: got %s, want %s", s, got, want)
			}
		}
	}
}

func TestRawMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{`{"a":1}`, `{ "code" : "print(1 < 2 & 3)" ,"x":[1, 2] }`, "{\"s\":\"\u2028\"}", `[]`, `"x"`} {
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Raw(nil, []byte(raw))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: got %s (%v), want %s", raw, got, err, want)
		}
	}
	if _, err := Raw(nil, []byte(`{"a":`)); err == nil {
		t.Error("invalid JSON must fail")
	}
}

func BenchmarkString(b *testing.B) {
	s := strings.Repeat("result for query: 3f2b8c1e-5d6a-4e7f-9a0b-1c2d3e4f5a6b, ", 600)
	b.SetBytes(int64(len(s)))
	buf := make([]byte, 0, len(s)+2)
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}
