package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/anthropic"
)

func Example() {
	// A stand-in endpoint answering as the Messages API does; leave out
	// WithBaseURL to call Anthropic.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[{"type":"text","text":"Let me compute that."},
{"type":"tool_use","id":"toolu_01","name":"run_python","input":{"code":"print(6*7)"}}],
"stop_reason":"tool_use","stop_sequence":null,
"usage":{"input_tokens":380,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":52}}`)
	}))
	defer srv.Close()

	m, err := anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey("sk-ant-example"), anthropic.WithBaseURL(srv.URL))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), model.Request{
		Messages: []model.Message{model.System("You answer with Python."), model.User("what is six times seven?")},
		Tools: []model.ToolSpec{{
			Name:        "run_python",
			Description: "Run a Python 3 program and return its output.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`),
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.Message.Content)
	fmt.Println(call.ID, call.Name, string(call.Arguments))
	fmt.Println(resp.FinishReason, resp.Usage.TotalTokens)
	// Output:
	// Let me compute that.
	// toolu_01 run_python {"code":"print(6*7)"}
	// tool_calls 432
}
