package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// echoGraph answers every human message with "echo: <text>".
func echoGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[prebuilt.MessagesState] {
	t.Helper()
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("agent", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			last := s.Messages[len(s.Messages)-1]
			return graph.Updates(prebuilt.Messages.Add(model.Message{ID: "ai-1", Role: model.RoleAssistant, Content: "echo: " + last.Content})), nil
		}).
		AddEdge(graph.START, "agent").
		AddEdge("agent", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	saver := checkpoint.NewMemory()
	s, err := New(WithGraph("echo", echoGraph(t, saver)), WithSaver(saver), WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return ts
}

func call(t *testing.T, ts *httptest.Server, method, path, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestAssistantIDIsTheReferenceUUID5(t *testing.T) {
	// The reference server gives graph "codeact" this assistant id.
	if got := uuid5(graphNamespace, "codeact"); got != "46fcfdd0-2de0-5b23-a5d3-6df17cb1821b" {
		t.Fatalf("uuid5(codeact) = %s", got)
	}
}

func TestStreamFraming(t *testing.T) {
	ts := newTestServer(t)
	code, body, _ := call(t, ts, "POST", "/threads", `{"thread_id":"t1","metadata":{"user":"ann"}}`)
	if code != 200 || !strings.Contains(body, `"thread_id":"t1"`) || !strings.Contains(body, `"status":"idle"`) {
		t.Fatalf("create thread: %d %s", code, body)
	}
	code, body, h := call(t, ts, "POST", "/threads/t1/runs/stream",
		`{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi","id":"h1"}]},"stream_mode":["updates"]}`)
	if code != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v", code, h)
	}
	runID := strings.TrimPrefix(h.Get("Content-Location"), "/threads/t1/runs/")
	want := "event: metadata\ndata: {\"attempt\":1,\"run_id\":\"" + runID + "\"}\nid: 0\n\n" +
		"event: updates\ndata: {\"agent\":{\"messages\":[{\"content\":\"echo: hi\",\"additional_kwargs\":{},\"response_metadata\":{},\"type\":\"ai\",\"id\":\"ai-1\",\"tool_calls\":[],\"invalid_tool_calls\":[]}]}}\nid: 1\n\n"
	if body != want {
		t.Fatalf("stream body\n got %q\nwant %q", body, want)
	}
	code, body, _ = call(t, ts, "GET", "/threads/t1/runs/"+runID, "")
	if code != 200 || !strings.Contains(body, `"status":"success"`) {
		t.Fatalf("run: %d %s", code, body)
	}
	// Joining again with Last-Event-ID replays only what follows.
	req, _ := http.NewRequest("GET", ts.URL+"/threads/t1/runs/"+runID+"/stream", nil)
	req.Header.Set("Last-Event-ID", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "event: updates\n") || !strings.HasSuffix(string(b), "id: 1\n\n") {
		t.Fatalf("rejoin: %q", b)
	}
}

func TestWaitAndState(t *testing.T) {
	ts := newTestServer(t)
	call(t, ts, "POST", "/threads", `{"thread_id":"t2"}`)
	code, body, _ := call(t, ts, "POST", "/threads/t2/runs/wait", `{"assistant_id":"echo","input":{"messages":[{"type":"human","content":"yo"}]}}`)
	var out struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &out); code != 200 || err != nil || len(out.Messages) != 2 || out.Messages[1]["content"] != "echo: yo" {
		t.Fatalf("wait: %d %s", code, body)
	}
	code, body, _ = call(t, ts, "GET", "/threads/t2/state", "")
	if code != 200 || !strings.Contains(body, `"next":[]`) || !strings.Contains(body, `"source":"loop"`) {
		t.Fatalf("state: %d %s", code, body)
	}
	code, body, _ = call(t, ts, "POST", "/threads/t2/history", `{"limit":10}`)
	var hist []map[string]any
	if err := json.Unmarshal([]byte(body), &hist); code != 200 || err != nil || len(hist) < 2 {
		t.Fatalf("history: %d %s", code, body)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	ts := newTestServer(t)
	call(t, ts, "POST", "/threads", `{"thread_id":"t3"}`)
	for _, c := range []struct {
		body, field string
		code        int
	}{
		{`{"assistant_id":"echo","input":{"nope":1}}`, "input", 422},
		{`{"assistant_id":"echo","input":{"messages":[{"type":"robot","content":"x"}]}}`, "input.messages[0].type", 422},
		{`{"assistant_id":"echo","stream_mode":"loud"}`, "stream_mode", 422},
		{`{"assistant_id":"echo","multitask_strategy":"never"}`, "multitask_strategy", 422},
		{`{"assistant_id":"nobody"}`, "nobody", 404},
		{`{"assistant_id":"echo","input":5}`, "input", 422},
		{`{"assistant_id":"echo","config":{"recursion_limit":"x"}}`, "config.recursion_limit", 422},
		{`{bad`, "not valid JSON", 400},
	} {
		code, body, _ := call(t, ts, "POST", "/threads/t3/runs/wait", c.body)
		if code != c.code || !strings.Contains(body, c.field) || !strings.HasPrefix(body, `{"detail":`) {
			t.Errorf("%s: %d %s; want %d naming %s", c.body, code, body, c.code, c.field)
		}
	}
}
