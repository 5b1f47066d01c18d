package prebuilt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/agentgraph/agentgraph/model"
)

// jsonTree decodes raw as the slow path does: encoding/json's Decoder with
// UseNumber, one value and nothing after it.
func jsonTree(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // a closing bracket after the value
	}
	return x, true
}

var argTexts = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `12`, `-1.5e+3`, `1E9`, `0.25`,
	`"plain"`, `"tab\tnew\nline \"q\" \\ \/ \b\f\r"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"h\u00E9llo"`,
	`"héllo, 世界"`, ` { "a" : [ 1 , 2 , { "b" : null } ] , "c" : "d" } `, `{"a":1,"a":2}`,
	`[1,[2,[3,[]]],{}]`, `{"nested":{"deep":{"x":[true,false,null]}}}`,
	// Left to encoding/json: errors, invalid UTF-8, lone surrogates.
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"abc`, "\"a\x01b\"",
	`{"a":1} x`, `{"a":1} {}`, `{"a":1}}`, "\"\xff\"", `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\x"`, `"\u12"`,
	`{"a":"\u12G4"}`, `{1:2}`, `[`, `{`, ``, ` `,
}

func TestParseArgsMatchesEncodingJSON(t *testing.T) {
	for _, text := range argTexts {
		got, ok := parseArgs([]byte(text), false)
		want, wantOK := jsonTree([]byte(text))
		if ok && !wantOK {
			t.Errorf("parseArgs(%q) accepted text encoding/json rejects", text)
			continue
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("parseArgs(%q) = %#v, encoding/json gives %#v", text, got, want)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, text := range argTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := parseArgs([]byte(text), false)
		if !ok {
			return // encoding/json decides
		}
		want, wantOK := jsonTree([]byte(text))
		if !wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("parseArgs(%q) = %#v, %v; encoding/json gives %#v, %v", text, got, ok, want, wantOK)
		}
	})
}

type argKind string

type argInner struct {
	N  int64            `json:"n"`
	Fs []float32        `json:"fs,omitempty"`
	M  map[string]*bool `json:"m,omitempty"`
}

type argAll struct {
	S       string              `json:"s"`
	K       argKind             `json:"k,omitempty"`
	B       bool                `json:"b,omitempty"`
	I8      int8                `json:"i8,omitempty"`
	U       uint                `json:"u,omitempty"`
	F       float64             `json:"f,omitempty"`
	P       *string             `json:"p,omitempty"`
	Inner   argInner            `json:"inner,omitzero"`
	PInner  *argInner           `json:"pinner,omitempty"`
	List    []argInner          `json:"list,omitempty"`
	ByName  map[argKind]int     `json:"by_name,omitempty"`
	Matrix  [][]int             `json:"matrix,omitempty"`
	Untaged string              `json:",omitempty"`
	Skip    string              `json:"-"`
	Nested  map[string][]string `json:"nested,omitempty"`
}

type argOwn struct {
	When time.Time `json:"when"`
	Any  any       `json:"any,omitempty"`
}

// TestToolArgsMatchEncodingJSON decodes arguments through a tool and
// through json.Unmarshal and expects the same value, for types the fast
// path takes and types it leaves to encoding/json.
func TestToolArgsMatchEncodingJSON(t *testing.T) {
	all := &MustTool("all", "", func(_ context.Context, a argAll) (string, error) { return "", nil }).(*typedTool[argAll, string]).toolInfo
	own := &MustTool("own", "", func(_ context.Context, a argOwn) (string, error) { return "", nil }).(*typedTool[argOwn, string]).toolInfo
	if all.assign == nil {
		t.Fatal("argAll should take the fast path")
	}
	if own.assign != nil {
		t.Fatal("argOwn holds a time.Time and an interface: it should go to encoding/json")
	}
	cases := []struct {
		tool *toolInfo
		dst  func() any
		text string
	}{
		{all, func() any { return new(argAll) }, `{"s":"x","k":"kind","b":true,"i8":-128,"u":7,"f":1.5e2,"p":"ptr"}`},
		{all, func() any { return new(argAll) }, `{"s":"\u00e9\n","p":null,"inner":{"n":9007199254740993,"fs":[1.25,2],"m":{"a":true,"b":null}}}`},
		{all, func() any { return new(argAll) }, `{"s":"","pinner":{"n":-1},"list":[{"n":1},{"n":2,"fs":[]}],"by_name":{"a":1},"matrix":[[1],[],[2,3]]}`},
		{all, func() any { return new(argAll) }, `{"s":"x","Untaged":"u","nested":{"k":["a","b"],"e":null}}`},
		{all, func() any { return new(argAll) }, `{"s":"x","list":null,"matrix":null}`},
		{all, func() any { return new(argAll) }, `{"S":"case"}`},           // matched ignoring case: encoding/json's way
		{all, func() any { return new(argAll) }, `{"s":"x","i8":300}`},     // out of range
		{all, func() any { return new(argAll) }, `{"s":"x","u":-1}`},       // negative
		{all, func() any { return new(argAll) }, `{"s":"x","f":"1"}`},      // wrong type
		{all, func() any { return new(argAll) }, `{"s":"x","inner":[1]}`},  // wrong type
		{all, func() any { return new(argAll) }, `{"s":"x","extra":true}`}, // unknown field
		{all, func() any { return new(argAll) }, "{\"s\":\"\xffx\"}"},      // invalid UTF-8
		{own, func() any { return new(argOwn) }, `{"when":"2026-11-29T10:00:00Z","any":{"n":1.5,"l":[1,"a"]}}`},
	}
	for _, c := range cases {
		got, want := c.dst(), c.dst()
		err := c.tool.decode(context.Background(), json.RawMessage(c.text), got)
		werr := json.Unmarshal([]byte(c.text), want)
		if err == nil && werr != nil {
			t.Errorf("%s: decode accepted what json.Unmarshal rejects (%v)", c.text, werr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decode = %+v, json.Unmarshal = %+v", c.text, got, want)
		}
	}
}

// TestSpecial8 puts every byte at every position of a word of plain bytes
// and checks that special8 flags exactly the bytes plain does not allow.
func TestSpecial8(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			word := []byte("abcdefgh")
			word[pos] = byte(c)
			got := special8(binary.LittleEndian.Uint64(word))
			if want := !plain[c]; got != want {
				t.Errorf("special8(%q) = %v, want %v", word, got, want)
			}
		}
	}
}

func TestParseArgsLongStrings(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 40)
	for _, text := range []string{
		`{"q":"` + long + `"}`,
		`{"q":"` + long + `\n` + long + `\"` + long + `"}`,
		`{"q":"` + long + `é中` + long + `\u00e9"}`,
		`{"q":"` + long + "\x7f~ " + long + `"}`,
		`{"q":"` + long + "\x01" + long + `"}`,
		`{"q":"` + long[:37] + `\\` + long[:40] + `"}`,
	} {
		got, ok := parseArgs([]byte(text), false)
		want, wantOK := jsonTree([]byte(text))
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("parseArgs of a %d-byte text = %v, %v; encoding/json gives ok %v", len(text), ok, reflect.DeepEqual(got, want), wantOK)
		}
	}
}

// asciiPlain reads blocks of 32 and 8 bytes, then single bytes: every
// byte value at every position of each kind of block must be judged alone.
func TestASCIIPlain(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 40, 71} {
		for pos := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[pos] = byte(c)
				if got, want := asciiPlain(b), c >= 0x20 && c < 0x80; got != want {
					t.Fatalf("asciiPlain of %d bytes with %#x at %d = %v, want %v", n, c, pos, got, want)
				}
			}
		}
	}
}

// A ToolNode's tools decode strings that point into the arguments of the
// state's message (read-only); a direct call's arguments are copied, so
// its caller may reuse the buffer.
func TestToolArgumentStringsShareOnlyTheMessage(t *testing.T) {
	type args struct {
		Q string `json:"q"`
	}
	var got string
	echo := MustTool("echo", "", func(_ context.Context, a args) (string, error) { got = a.Q; return "ok", nil })
	raw := []byte(`{"q":"` + strings.Repeat("x", 100) + `"}`)
	within := func(s string, b []byte) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&b[0]))
		return p >= lo && p < lo+uintptr(len(b))
	}

	c := call("c1", "echo", string(raw))
	if _, err := runTools(t, context.Background(), []Tool{echo}, []model.ToolCall{c}); err != nil {
		t.Fatal(err)
	}
	if got != strings.Repeat("x", 100) || !within(got, c.Arguments) {
		t.Errorf("inside a ToolNode the argument %.10q… is a copy (shares the message's bytes: %v)", got, within(got, c.Arguments))
	}

	if _, err := echo.Call(WithToolCallID(context.Background(), "c2"), raw); err != nil {
		t.Fatal(err)
	}
	if within(got, raw) {
		t.Fatal("a direct call's string argument points into the caller's buffer")
	}
	copy(raw[6:], "yyyy")
	if got != strings.Repeat("x", 100) {
		t.Errorf("reusing the caller's buffer changed the tool's argument to %.10q…", got)
	}
}
