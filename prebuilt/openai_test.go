package prebuilt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/openai"
)

// chatServer speaks the Chat Completions wire format: the first request of
// a conversation gets a run_python call, the one after the tool's answer a
// text reply. It streams when the request asks for it.
type chatServer struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"no such path","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	s.mu.Unlock()
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	stream, _ := body["stream"].(bool)

	const created = `"created":1764400000,"model":"gpt-test"`
	if last["role"] == "user" {
		if !stream {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion",`+created+`,"choices":[{"index":0,"message":{"role":"assistant","content":null,`+
				`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"run_python","arguments":"{\"code\":\"print(42)\"}"}}]},`+
				`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`)
			return
		}
		sseFrames(w,
			`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"run_python","arguments":""}}]}`, "",
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"code\":"}}]}`, "",
			`{"tool_calls":[{"index":0,"function":{"arguments":"\"print(42)\"}"}}]}`, "",
			`{}`, "tool_calls")
		return
	}
	answer := "Tool said: " + last["content"].(string)
	if !stream {
		b, _ := json.Marshal(answer)
		io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion",`+created+`,"choices":[{"index":0,"message":{"role":"assistant","content":`+string(b)+`},`+
			`"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`)
		return
	}
	var frames []string
	for i, word := range strings.SplitAfter(answer, " ") {
		if i == 0 {
			frames = append(frames, `{"role":"assistant","content":""}`, "")
		}
		b, _ := json.Marshal(word)
		frames = append(frames, `{"content":`+string(b)+`}`, "")
	}
	sseFrames(w, append(frames, `{}`, "stop")...)
}

// sseFrames writes chat.completion.chunk events, one per (delta, finish
// reason) pair, then [DONE].
func sseFrames(w http.ResponseWriter, pairs ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := 0; i < len(pairs); i += 2 {
		fin := "null"
		if pairs[i+1] != "" {
			fin = `"` + pairs[i+1] + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-s\",\"object\":\"chat.completion.chunk\",\"created\":1764400000,\"model\":\"gpt-test\","+
			"\"choices\":[{\"index\":0,\"delta\":%s,\"logprobs\":null,\"finish_reason\":%s}]}\n\n", pairs[i], fin)
		fl.Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func TestReactAgentOverOpenAIWire(t *testing.T) {
	srv := &chatServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	m, err := openai.New("gpt-test", openai.WithAPIKey("sk-test"), openai.WithBaseURL(hs.URL+"/v1"), openai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := NewReactAgent(m, []Tool{echoPython(t)}, WithSystemPrompt("Use the tool."))
	if err != nil {
		t.Fatal(err)
	}
	in := graph.Updates(Messages.Add(model.User("what is 6*7?")))

	// Invoke: no streaming.
	res, err := agent.Invoke(context.Background(), in, graph.WithThread("t1"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if len(msgs) != 4 || msgs[1].ToolCalls[0].ID != "call_1" || msgs[2].Content != "[t1] print(42)" || msgs[3].Content != "Tool said: [t1] print(42)" {
		t.Fatalf("invoke: %+v", msgs)
	}

	// Stream: the model's tokens reach the stream from the agent node.
	var text strings.Builder
	var calls model.ToolCallAssembler
	toolMsgs := 0
	for ev, err := range agent.Stream(context.Background(), in, graph.WithStreamModes(graph.ModeMessages), graph.WithThread("t2")) {
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := ev.Data.(model.Message); ok {
			// The tool's answer, written to the state, comes as a message.
			if ev.Node != ToolsNode || m.Role != model.RoleTool {
				t.Fatalf("message %+v from node %q", m, ev.Node)
			}
			toolMsgs++
			continue
		}
		c := ev.Data.(model.Chunk)
		if ev.Node != AgentNode {
			t.Fatalf("chunk from node %q", ev.Node)
		}
		text.WriteString(c.Delta)
		for _, d := range c.ToolCalls {
			calls.Add(d)
		}
	}
	if got := calls.Calls(); len(got) != 1 || got[0].ID != "call_1" || string(got[0].Arguments) != `{"code":"print(42)"}` {
		t.Fatalf("streamed calls %+v", got)
	}
	if text.String() != "Tool said: [t2] print(42)" {
		t.Fatalf("streamed text %q", text.String())
	}
	if toolMsgs != 1 {
		t.Fatalf("%d tool messages streamed, want 1", toolMsgs)
	}

	// What went over the wire.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.requests) != 4 { // two model calls per run
		t.Fatalf("%d requests, want 4", len(srv.requests))
	}
	first := srv.requests[0]
	tool := first["tools"].([]any)[0].(map[string]any)
	fn := tool["function"].(map[string]any)
	var want any
	if err := json.Unmarshal(echoPython(t).Spec().Parameters, &want); err != nil {
		t.Fatal(err)
	}
	if tool["type"] != "function" || fn["name"] != "run_python" || !reflect.DeepEqual(fn["parameters"], want) {
		t.Fatalf("tool on the wire: %v", tool)
	}
	sys := first["messages"].([]any)[0].(map[string]any)
	if sys["role"] != "system" || sys["content"] != "Use the tool." {
		t.Fatalf("first message on the wire: %v", sys)
	}
	toolMsg := srv.requests[1]["messages"].([]any)[3].(map[string]any)
	if toolMsg["role"] != "tool" || toolMsg["tool_call_id"] != "call_1" {
		t.Fatalf("tool message on the wire: %v", toolMsg)
	}
	if s, _ := srv.requests[2]["stream"].(bool); !s {
		t.Fatal("the streamed run did not ask the server to stream")
	}
}
