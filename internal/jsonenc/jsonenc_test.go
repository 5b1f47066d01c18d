package jsonenc

import (
	"encoding/json"
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
