package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

// instance is the command running in this process on a free loopback port.
type instance struct {
	url    string
	stop   context.CancelFunc
	done   chan error
	logMu  sync.Mutex
	logBuf bytes.Buffer
}

func (s *instance) Write(p []byte) (int, error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logBuf.Write(p)
}

func (s *instance) log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logBuf.String()
}

// start runs the command over the files in dir until the test ends or
// shutdown is called.
func start(t *testing.T, dir string) *instance {
	t.Helper()
	f := flags{addr: "127.0.0.1:0", db: filepath.Join(dir, "threads.db"), model: "scripted", provider: "openai",
		sandboxRoot: filepath.Join(dir, "sandboxes"), grace: 10 * time.Second, maxBody: 1 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	s := &instance{stop: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() { s.done <- run(ctx, f, s, ready) }()
	select {
	case addr := <-ready:
		s.url = "http://" + addr
	case err := <-s.done:
		cancel()
		t.Fatalf("the server did not start: %v\n%s", err, s.log())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the server did not start within 30s")
	}
	t.Cleanup(func() { s.shutdown(t) })
	return s
}

// shutdown stops the server as SIGTERM does and waits for it to exit.
func (s *instance) shutdown(t *testing.T) {
	t.Helper()
	if s.done == nil {
		return
	}
	s.stop()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("server exited with %v\n%s", err, s.log())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("server still running 30s after shutdown\n%s", s.log())
	}
	s.done = nil
}

func (s *instance) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lastMessage returns the content of the last message in a JSON state.
func lastMessage(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		Values *struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not a state: %v: %q", err, body)
	}
	msgs := v.Messages
	if v.Values != nil {
		msgs = v.Values.Messages
	}
	if len(msgs) == 0 {
		t.Fatalf("no messages in %q", body)
	}
	return msgs[len(msgs)-1].Content
}

func TestServesCodeActAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	if code, body := s.call(t, "GET", "/ok", ""); code != 200 || body != `{"ok":true}` {
		t.Fatalf("/ok: %d %s", code, body)
	}
	code, body := s.call(t, "POST", "/assistants/search", `{}`)
	if code != 200 || !strings.Contains(body, `"assistant_id":"46fcfdd0-2de0-5b23-a5d3-6df17cb1821b"`) || !strings.Contains(body, `"graph_id":"codeact"`) {
		t.Fatalf("assistants: %d %s", code, body)
	}
	if code, body := s.call(t, "POST", "/threads", `{"thread_id":"kept","metadata":{"user":"ann"}}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	// The scripted model runs a user message that is not a known prompt as
	// the program itself.
	program := `open('note.txt', 'w').write('still here'); print(6 * 7)`
	input, _ := json.Marshal(map[string]any{"assistant_id": "codeact", "input": map[string]any{"messages": []any{map[string]string{"role": "user", "content": program}}}})
	code, body = s.call(t, "POST", "/threads/kept/runs/wait", string(input))
	if code != 200 || !strings.Contains(lastMessage(t, body), "exit code 0\n42") {
		t.Fatalf("run: %d %s", code, body)
	}
	if code, body := s.call(t, "PUT", "/store/items", `{"namespace":["users","ann"],"key":"prefs","value":{"lang":"go"}}`); code != 204 {
		t.Fatalf("put: %d %s", code, body)
	}
	s.shutdown(t)

	// Threads, their records, the store and the sandbox's files are all
	// still there on the next start.
	s = start(t, dir)
	code, body = s.call(t, "GET", "/threads/kept", "")
	if code != 200 || !strings.Contains(body, `"user":"ann"`) || !strings.Contains(body, `"status":"idle"`) {
		t.Fatalf("thread after restart: %d %s", code, body)
	}
	if code, body := s.call(t, "GET", "/threads/kept/runs", ""); code != 200 || !strings.Contains(body, `"status":"success"`) {
		t.Fatalf("runs after restart: %d %s", code, body)
	}
	if code, body := s.call(t, "GET", "/store/items?namespace=users.ann&key=prefs", ""); code != 200 || !strings.Contains(body, `"value":{"lang":"go"}`) {
		t.Fatalf("store after restart: %d %s", code, body)
	}
	if code, body := s.call(t, "GET", "/threads/kept/files/content?path=note.txt", ""); code != 200 || body != "still here" {
		t.Fatalf("the thread's file after restart, before its sandbox runs again: %d %q", code, body)
	}
	input, _ = json.Marshal(map[string]any{"assistant_id": "codeact", "input": map[string]any{"messages": []any{map[string]string{"role": "user", "content": "print(open('note.txt').read())"}}}})
	code, body = s.call(t, "POST", "/threads/kept/runs/wait", string(input))
	if code != 200 || !strings.Contains(lastMessage(t, body), "exit code 0\nstill here") {
		t.Fatalf("second turn after restart: %d %s", code, body)
	}
	code, body = s.call(t, "GET", "/threads/kept/state", "")
	var st struct {
		Values struct {
			Messages []any `json:"messages"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st.Values.Messages) != 8 {
		t.Fatalf("state after two turns: %d %s", code, body)
	}
}

func TestGuideScenariosWithSDK(t *testing.T) {
	// Scenario 4 needs a short timeout; the tool reads it at every call.
	t.Setenv("RUN_TIMEOUT", "3")
	s := start(t, t.TempDir())
	runNode(t, "guide.mjs", s.url)
}

func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		f    flags
		want string
	}{
		{flags{addr: "127.0.0.1:0", db: filepath.Join(dir, "a.db"), model: "gpt-x", provider: "martian", sandboxRoot: filepath.Join(dir, "sb")}, "unknown provider"},
		{flags{addr: "127.0.0.1:0", db: filepath.Join(dir, "no", "such", "dir", "a.db"), model: "scripted", sandboxRoot: filepath.Join(dir, "sb")}, "open thread file"},
		{flags{addr: "256.0.0.1:0", db: filepath.Join(dir, "b.db"), model: "scripted", sandboxRoot: filepath.Join(dir, "sb"), maxBody: 1}, "256.0.0.1"},
	} {
		err := run(context.Background(), c.f, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error saying %q", c.f, err, c.want)
		}
	}
}

// runNode runs node server/jstest/script with the server's URL and fails
// the test if the script does. Without server/jstest/node_modules it
// skips, or fails under CI.
func runNode(t *testing.T, script, url string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "server", "jstest"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph-sdk")); err != nil || statErr != nil {
		msg := "node or server/jstest/node_modules missing: run `npm ci --prefix server/jstest` to drive the server with @langchain/langgraph-sdk"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script), url)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	if testing.Verbose() {
		t.Logf("node %s:\n%s", script, out)
	}
}
