package prebuilt

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/graph"
)

type pyArgs struct {
	Code    string   `json:"code" jsonschema:"description=A whole Python 3 program"`
	Timeout int      `json:"timeout,omitempty" jsonschema:"description=Seconds before the run is stopped,minimum=1,maximum=600"`
	Files   []string `json:"files,omitempty"`
	Env     *envArgs `json:"env,omitempty"`
}

type envArgs struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type pyResult struct {
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
}

func newPyTool(t *testing.T) Tool {
	t.Helper()
	tool, err := NewTool("run_python", "Run a Python program.", func(ctx context.Context, a pyArgs) (pyResult, error) {
		return pyResult{ExitCode: 0, Output: graph.ThreadIDFrom(ctx) + ":" + a.Code}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestToolSchema(t *testing.T) {
	spec := newPyTool(t).Spec()
	if spec.Name != "run_python" || spec.Description != "Run a Python program." {
		t.Fatalf("spec = %+v", spec)
	}
	want := `{"properties":{"code":{"type":"string","description":"A whole Python 3 program"},` +
		`"timeout":{"type":"integer","maximum":600,"minimum":1,"description":"Seconds before the run is stopped"},` +
		`"files":{"items":{"type":"string"},"type":"array"},` +
		`"env":{"properties":{"name":{"type":"string"},"value":{"type":"string"}},"additionalProperties":false,"type":"object","required":["name","value"]}},` +
		`"additionalProperties":false,"type":"object","required":["code"]}`
	if string(spec.Parameters) != want {
		t.Fatalf("schema:\n got %s\nwant %s", spec.Parameters, want)
	}
	for _, noise := range []string{"$ref", "$defs", "$schema", "$id"} {
		if strings.Contains(string(spec.Parameters), noise) {
			t.Fatalf("schema holds %s: %s", noise, spec.Parameters)
		}
	}
}

func TestNewToolRejects(t *testing.T) {
	type node struct {
		Next *node `json:"next"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	cases := []struct {
		name string
		make func() error
		want string
	}{
		{"bad name", func() error {
			_, err := NewTool("run python", "", func(context.Context, pyArgs) (string, error) { return "", nil })
			return err
		}, "letters, digits"},
		{"not a struct", func() error {
			_, err := NewTool("t", "", func(context.Context, string) (string, error) { return "", nil })
			return err
		}, "not a struct"},
		{"recursive", func() error {
			_, err := NewTool("t", "", func(context.Context, node) (string, error) { return "", nil })
			return err
		}, "contains itself"},
		{"channel field", func() error {
			_, err := NewTool("t", "", func(context.Context, withChan) (string, error) { return "", nil })
			return err
		}, "JSON cannot carry"},
		{"nil func", func() error {
			_, err := NewTool[pyArgs, string]("t", "", nil)
			return err
		}, "nil function"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestToolCallDirect(t *testing.T) {
	tool := newPyTool(t)
	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "1"})
	got, err := tool.Call(ctx, json.RawMessage(`{"code":"print(1)"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got != (pyResult{ExitCode: 0, Output: "1:print(1)"}) {
		t.Fatalf("result = %#v", got)
	}
	if text, err := Content(got); err != nil || text != `{"exit_code":0,"output":"1:print(1)"}` {
		t.Fatalf("content = %s, %v", text, err)
	}

	text := MustTool("hello", "", func(_ context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello " + a.Name, nil
	})
	if got, err := text.Call(ctx, json.RawMessage(`{"name":"go"}`)); err != nil || got != "hello go" {
		t.Fatalf("string result: %q, %v", got, err)
	}

	failing := MustTool("fail", "", func(context.Context, struct{}) (string, error) {
		return "", errDisk
	})
	if _, err := failing.Call(ctx, nil); err != errDisk {
		t.Fatalf("tool error = %v", err)
	}
}

var errDisk = errors.New("disk full")

func TestToolArgumentErrors(t *testing.T) {
	tool := newPyTool(t)
	ctx := context.Background()
	cases := []struct {
		name string
		args string
		want []string
	}{
		{"not JSON", `{"code": print(1)}`, []string{"not valid JSON"}},
		{"text kept as a string", `"print(1)"`, []string{"not a JSON object", "print(1)"}},
		{"missing required", `{}`, []string{`field "code" is required (string)`}},
		{"wrong type", `{"code": 12}`, []string{`field "code": expected string, got integer 12`}},
		{"not an integer", `{"code":"x","timeout":1.5}`, []string{`field "timeout": expected integer, got number 1.5`}},
		{"below minimum", `{"code":"x","timeout":0}`, []string{`field "timeout": must be at least 1`}},
		{"unknown field", `{"code":"x","cmd":"ls"}`, []string{`field "cmd" is not a known field; the fields are: code, timeout, files, env`}},
		{"nested", `{"code":"x","env":{"name":1},"files":["a",2]}`, []string{
			`field "env.name": expected string, got integer 1`,
			`field "env.value" is required (string)`,
			`field "files[1]": expected string, got integer 2`,
		}},
		{"two values", `{"code":"x"} {}`, []string{"not valid JSON"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Call(ctx, json.RawMessage(tc.args))
			var ae *ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("err = %v, want an *ArgumentError", err)
			}
			if ae.Tool != "run_python" {
				t.Fatalf("ArgumentError.Tool = %q", ae.Tool)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// Optional fields may be null or absent; empty arguments are {}.
	if _, err := tool.Call(ctx, json.RawMessage(`{"code":"x","env":null,"files":null}`)); err != nil {
		t.Fatalf("null optional fields: %v", err)
	}
	noArgs := MustTool("now", "", func(context.Context, struct{}) (string, error) { return "noon", nil })
	for _, args := range []string{"", "null", "{}", " { } "} {
		if got, err := noArgs.Call(ctx, json.RawMessage(args)); err != nil || got != "noon" {
			t.Fatalf("args %q: %q, %v", args, got, err)
		}
	}
}
