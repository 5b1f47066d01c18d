package prebuilt

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type flatKind string

type argFlat struct {
	Query string   `json:"query"`
	Kind  flatKind `json:"kind,omitempty"`
	On    bool     `json:"on,omitempty"`
	Small int8     `json:"small,omitempty"`
	Count uint16   `json:"count,omitempty"`
	Ratio float32  `json:"ratio,omitempty"`
}

type argFlatBound struct {
	N int    `json:"n" jsonschema:"minimum=1"`
	S string `json:"s"`
}

var flatTexts = []string{
	`{"query":"x"}`, ` { "query" : "a\"b" , "on" : true } `, `{"query":"héllo","kind":"k","small":-128,"count":65535,"ratio":1.5e2}`,
	`{"query":"x","query":"y"}`, `{"query":"x","small":1.0}`, `{"query":"x","small":128}`, `{"query":"x","count":-1}`,
	`{"query":"x","ratio":1e40}`, `{"query":"x","on":null}`, `{"query":null}`, `{"on":true}`, `{}`, `{"query":"x",}`,
	`{"query":"x"} x`, `{"Query":"case"}`, `{"query":"x","extra":1}`, `{"query":1}`, `{"query":"x","on":"true"}`,
	"{\"query\":\"\xff\"}", `{"query":"\ud83d"}`, `{"query":"x","small":-0}`, `{"query":"x","count":1e2}`, `["query"]`,
	`"text"`, `null`, ``, `{"query":"x"`, `{"query" "x"}`, `{"query":"x" "on":true}`,
}

// Whatever the flat decoder takes, the general path takes too, into the
// same value; what it declines the general path decides.
func checkFlat(t *testing.T, tool *toolInfo, text string, dst func() any) {
	t.Helper()
	raw := normalize(json.RawMessage(text))
	got := reflect.New(reflect.TypeOf(dst()).Elem())
	if !tool.flat.decode(raw, false, got.Elem()) {
		return
	}
	general := *tool
	general.flat = nil
	want := dst()
	if err := general.decode(context.Background(), raw, want); err != nil {
		t.Fatalf("%q: the flat decoder took arguments the general path rejects: %v", text, err)
	}
	if !reflect.DeepEqual(got.Interface(), want) {
		t.Fatalf("%q: flat decoder gives %+v, the general path %+v", text, got.Interface(), want)
	}
}

func TestFlatArgsAgreeWithTheGeneralPath(t *testing.T) {
	flat := &MustTool("flat", "", func(_ context.Context, a argFlat) (string, error) { return "", nil }).(*typedTool[argFlat, string]).toolInfo
	if flat.flat == nil {
		t.Fatal("argFlat has string, bool and number fields only: it should have a flat decoder")
	}
	took := 0
	for _, text := range flatTexts {
		checkFlat(t, flat, text, func() any { return new(argFlat) })
		var a argFlat
		if flat.flat.decode(normalize(json.RawMessage(text)), false, reflect.ValueOf(&a).Elem()) {
			took++
		}
	}
	if took < 5 {
		t.Errorf("the flat decoder took %d of the texts; it should take the plain ones", took)
	}
	// A bound is checked by the validator only: such a type is not flat.
	bound := &MustTool("bound", "", func(_ context.Context, a argFlatBound) (string, error) { return "", nil }).(*typedTool[argFlatBound, string]).toolInfo
	if bound.flat != nil {
		t.Error("a field with a minimum has a flat decoder, which would skip the bound")
	}
	if err := bound.decode(context.Background(), json.RawMessage(`{"n":0,"s":"x"}`), new(argFlatBound)); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("n below its minimum: err = %v", err)
	}
	all := &MustTool("all", "", func(_ context.Context, a argAll) (string, error) { return "", nil }).(*typedTool[argAll, string]).toolInfo
	if all.flat != nil {
		t.Error("argAll has struct, slice and map fields: it should not have a flat decoder")
	}
}

func FuzzFlatArgs(f *testing.F) {
	for _, text := range flatTexts {
		f.Add(text)
	}
	flat := &MustTool("flat", "", func(_ context.Context, a argFlat) (string, error) { return "", nil }).(*typedTool[argFlat, string]).toolInfo
	f.Fuzz(func(t *testing.T, text string) {
		checkFlat(t, flat, text, func() any { return new(argFlat) })
	})
}
