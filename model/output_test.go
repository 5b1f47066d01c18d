package model_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/model"
)

type weather struct {
	City   string   `json:"city" jsonschema:"description=the city asked about"`
	TempC  float64  `json:"temp_c"`
	Sky    string   `json:"sky" jsonschema:"enum=clear,enum=cloudy,enum=rain"`
	Alerts []string `json:"alerts,omitempty"`
	Wind   *struct {
		Kph int `json:"kph" jsonschema:"minimum=0"`
	} `json:"wind,omitempty"`
}

func TestNewOutputSchema(t *testing.T) {
	o, err := model.NewOutput[weather]("weather", "Today's weather.")
	if err != nil {
		t.Fatal(err)
	}
	f := o.Format()
	// Every object lists all its fields as required and forbids others, as
	// strict mode demands; omitempty fields included.
	const want = `{"properties":{"city":{"type":"string","description":"the city asked about"},"temp_c":{"type":"number"},` +
		`"sky":{"type":"string","enum":["clear","cloudy","rain"]},"alerts":{"items":{"type":"string"},"type":"array"},` +
		`"wind":{"properties":{"kph":{"type":"integer","minimum":0}},"additionalProperties":false,"type":"object","required":["kph"]}},` +
		`"additionalProperties":false,"type":"object","required":["city","temp_c","sky","alerts","wind"]}`
	if string(f.Schema) != want || f.Name != "weather" || f.Description != "Today's weather." || !f.Strict {
		t.Fatalf("format %+v\nschema %s\nwant   %s", f, f.Schema, want)
	}
	f.Schema[0] = 'X'
	if o.Format().Schema[0] != '{' {
		t.Fatal("Format shares its schema with the caller")
	}

	type tagged struct {
		Tags map[string]int `json:"tags"`
	}
	m, err := model.NewOutput[tagged]("tags", "")
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Format(); f.Strict || string(f.Schema) != `{"properties":{"tags":{"additionalProperties":{"type":"integer"},"type":"object"}},"additionalProperties":false,"type":"object","required":["tags"]}` {
		t.Fatalf("a map field: strict %v schema %s", f.Strict, f.Schema)
	}
}

func TestNewOutputErrors(t *testing.T) {
	type loop struct {
		Next *loop `json:"next"`
	}
	type fn struct {
		F func() `json:"f"`
	}
	for _, tc := range []struct {
		name string
		new  func() error
		want string
	}{
		{"not a struct", func() error { _, err := model.NewOutput[[]string]("x", ""); return err },
			"model: type []string is not a struct: a schema describes a JSON object, so declare a struct with json tags"},
		{"cycle", func() error { _, err := model.NewOutput[loop]("x", ""); return err },
			"model: type model_test.loop contains itself (model_test.loop -> model_test.loop): a schema without $ref cannot describe it; break the cycle"},
		{"func field", func() error { _, err := model.NewOutput[fn]("x", ""); return err },
			"model: type model_test.fn has a field JSON cannot carry: unsupported type func()"},
		{"bad name", func() error { _, err := model.NewOutput[weather]("the weather", ""); return err },
			`model: response format name "the weather": use 1 to 64 letters, digits, '_' or '-'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.new(); err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestOutputDecode(t *testing.T) {
	o, err := model.NewOutput[weather]("weather", "")
	if err != nil {
		t.Fatal(err)
	}
	good := weather{City: "Oslo", TempC: -3.5, Sky: "clear", Alerts: []string{"ice"}}
	good.Wind = &struct {
		Kph int `json:"kph" jsonschema:"minimum=0"`
	}{12}
	tests := []struct {
		name     string
		msg      model.Message
		problems []string
	}{
		{"valid", model.Assistant(`{"city":"Oslo","temp_c":-3.5,"sky":"clear","alerts":["ice"],"wind":{"kph":12}}`), nil},
		{"fenced", model.Assistant("```json\n{\"city\":\"Oslo\",\"temp_c\":-3.5,\"sky\":\"clear\",\"alerts\":[\"ice\"],\"wind\":{\"kph\":12}}\n```"), nil},
		{"every problem at once", model.Assistant(`{"city":7,"sky":"snow","alerts":["a",2],"wind":{"kph":-1},"extra":true}`), []string{
			`field "temp_c" is missing (it must be a number)`,
			`field "alerts[1]" must be a string, not integer 2`,
			`field "city" must be a string, not integer 7`,
			`field "extra" is not a field of this object; its fields are: city, temp_c, sky, alerts, wind`,
			`field "sky" must be one of ["clear","cloudy","rain"], not "snow"`,
			`field "wind.kph" must be at least 0, not -1`,
		}},
		{"not JSON", model.Assistant("I cannot tell the weather."), []string{
			`the answer is not JSON (invalid character 'I' looking for beginning of value): "I cannot tell the weather."`}},
		{"trailing text", model.Assistant(`{"city":"Oslo"} thanks`), []string{"the answer has text after its JSON value"}},
		{"array", model.Assistant(`[1]`), []string{"the answer must be an object, not array [1]"}},
		{"empty", model.Assistant(" \n"), []string{"the answer is empty"}},
		{"tool calls", model.Assistant("", model.ToolCall{ID: "c", Name: "t"}), []string{"the answer asks for tool calls instead of giving the result"}},
		{"null for a required field", model.Assistant(`{"city":"Oslo","temp_c":1,"sky":"rain","alerts":null,"wind":null}`), []string{
			`field "alerts" must be an array of strings, not null null`,
			`field "wind" must be an object, not null null`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := o.Decode(tt.msg)
			if tt.problems == nil {
				if err != nil || !reflect.DeepEqual(got, good) {
					t.Fatalf("got %+v, %v; want %+v", got, err, good)
				}
				return
			}
			var oe *model.OutputError
			if !errors.As(err, &oe) || !errors.Is(err, model.ErrInvalidOutput) {
				t.Fatalf("got %v, want an *OutputError", err)
			}
			if !reflect.DeepEqual(oe.Problems, tt.problems) || oe.Format != "weather" || oe.Content != tt.msg.Content {
				t.Fatalf("problems\n%q\nwant\n%q", oe.Problems, tt.problems)
			}
			if want := `model: the answer is not a valid "weather": ` + strings.Join(tt.problems, "; "); err.Error() != want {
				t.Fatalf("message %q\nwant %q", err, want)
			}
			fb := oe.Feedback()
			if want := `Your answer is not a valid "weather": ` + strings.Join(tt.problems, "; ") +
				`. Answer again with only one JSON object that matches the schema.`; fb.Role != model.RoleUser || fb.Content != want || fb.ID == "" {
				t.Fatalf("feedback %+v", fb)
			}
		})
	}
}

func TestSchemaFor(t *testing.T) {
	type args struct {
		Code    string `json:"code" jsonschema:"description=the program"`
		Timeout int    `json:"timeout,omitempty"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[args](), reflect.TypeFor[*args]()} {
		s, err := model.SchemaFor(typ)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(s)
		if want := `{"properties":{"code":{"type":"string","description":"the program"},"timeout":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["code"]}`; string(b) != want {
			t.Fatalf("%v: %s\nwant %s", typ, b, want)
		}
	}
	if _, err := model.SchemaFor(nil); err == nil || err.Error() != "model: type <nil> is not a struct: a schema describes a JSON object, so declare a struct with json tags" {
		t.Fatalf("nil type: %v", err)
	}
}

func ExampleNewOutput() {
	type Verdict struct {
		Answer     int    `json:"answer"`
		Confidence string `json:"confidence" jsonschema:"enum=low,enum=high"`
	}
	out, err := model.NewOutput[Verdict]("verdict", "The answer and how sure it is.")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := model.Request{Messages: []model.Message{model.User("what is six times seven?")}, ResponseFormat: out.Format()}
	fmt.Println(req.ResponseFormat.Name, req.ResponseFormat.Strict)

	// What a model might answer: a faulty answer first, then a good one.
	_, err = out.Decode(model.Assistant(`{"answer":"42"}`))
	fmt.Println(err)
	var oe *model.OutputError
	if errors.As(err, &oe) {
		fmt.Println(oe.Feedback().Content)
	}
	v, err := out.Decode(model.Assistant(`{"answer":42,"confidence":"high"}`))
	fmt.Println(v.Answer, v.Confidence, err)
	// Output:
	// verdict true
	// model: the answer is not a valid "verdict": field "confidence" is missing (it must be one of ["low","high"]); field "answer" must be an integer, not string "42"
	// Your answer is not a valid "verdict": field "confidence" is missing (it must be one of ["low","high"]); field "answer" must be an integer, not string "42". Answer again with only one JSON object that matches the schema.
	// 42 high <nil>
}

func ExampleTotalUsage() {
	first := model.Assistant("", model.ToolCall{ID: "c1", Name: "run_python", Arguments: json.RawMessage(`{}`)})
	first.Usage = &model.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}
	last := model.Assistant("42")
	last.Usage = &model.Usage{InputTokens: 180, OutputTokens: 5, TotalTokens: 185, CacheReadTokens: 100}
	conversation := []model.Message{model.User("six times seven?"), first, model.ToolResult("c1", "run_python", "42\n"), last}
	fmt.Printf("%+v\n", model.TotalUsage(conversation))
	// Output:
	// {InputTokens:300 OutputTokens:35 TotalTokens:335 CacheReadTokens:100 CacheWriteTokens:0 ReasoningTokens:0}
}
