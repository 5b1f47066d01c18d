package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/openai"
)

func Example() {
	// A stand-in endpoint answering as the Chat Completions API does; point
	// WithBaseURL at any OpenAI-compatible server (or set OPENAI_BASE_URL).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1764400000,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
"function":{"name":"run_python","arguments":"{\"code\":\"print(6*7)\"}"}}]},"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}`)
	}))
	defer srv.Close()

	m, err := openai.New("gpt-4o-mini", openai.WithAPIKey("sk-example"), openai.WithBaseURL(srv.URL))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), model.Request{
		Messages: []model.Message{model.User("what is six times seven?")},
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
	fmt.Println(call.ID, call.Name, string(call.Arguments))
	fmt.Println(resp.FinishReason, resp.Usage.TotalTokens)
	// Output:
	// call_1 run_python {"code":"print(6*7)"}
	// tool_calls 52
}
