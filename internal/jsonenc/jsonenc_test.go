package jsonenc

import (
	"bytes"
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

// clean is the test Raw's fast path used before plainValue: no byte that
// compacting or HTML escaping might change, anywhere.
func clean(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return true
}

// plainValue accepts only what encoding/json accepts and leaves as it is,
// and at least what the plain scan before it accepted.
func checkPlain(t *testing.T, raw []byte) {
	t.Helper()
	got := plainValue(raw)
	if got {
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			t.Fatalf("%q: plain, but Compact fails: %v", raw, err)
		}
		var h bytes.Buffer
		json.HTMLEscape(&h, c.Bytes())
		if !bytes.Equal(h.Bytes(), raw) {
			t.Fatalf("%q: plain, but compacted and escaped it is %q", raw, h.Bytes())
		}
	}
	if !got && clean(raw) && json.Valid(raw) {
		t.Fatalf("%q: valid and clean, but not plain", raw)
	}
}

func TestPlainValue(t *testing.T) {
	for _, s := range []string{
		`{"query":"print(1 + 2)","n":[1,-0.5,2e10,3E-2,0,true,false,null,{}],"o":{"a":[]}}`,
		`"x"`, `""`, `0`, `-0`, `1.5e+3`, `[]`, `{}`, `[[[]]]`, `"\u00e9\n\"\\\/"`, `"é日本"`,
		`01`, `-`, `1.`, `1e`, `.5`, `+1`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `[1 ]`, ` 1`, `1 `,
		`"\x"`, `"\u12g4"`, `"\u12"`, "\"a\x01b\"", `"<b>"`, `"a&b"`, "\"\u2028\"", `tru`, `nul`, `[true false]`,
		`"unterminated`, `{"a":"b"`, `["a","b"]x`, `"a long string that goes on past a few words, eight bytes at a time"`,
	} {
		checkPlain(t, []byte(s))
	}
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if !plainValue(deep(maxDepth)) || json.Valid(deep(maxDepth+1)) || plainValue(deep(maxDepth+1)) {
		t.Errorf("nesting: plain at %d: %v, at %d: %v; want as encoding/json", maxDepth, plainValue(deep(maxDepth)), maxDepth+1, plainValue(deep(maxDepth+1)))
	}
}

func FuzzPlainValue(f *testing.F) {
	for _, s := range []string{`{"query":"a b","n":[1,-0.5,2e10,null]}`, `"\u00e9<"`, `[1,{"a":"\n"}]`, "\"\u2028\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkPlain)
}

func BenchmarkRaw(b *testing.B) {
	raw, _ := json.Marshal(map[string]string{"query": strings.Repeat("3f2b8c1e-5d6a-4e7f-9a0b-1c2d3e4f5a6b", 100)})
	b.SetBytes(int64(len(raw)))
	buf := make([]byte, 0, len(raw))
	for b.Loop() {
		buf, _ = Raw(buf[:0], raw)
	}
}
