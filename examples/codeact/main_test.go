package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/codeact"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

// guide is the guide's output line for line. ID1 and ID2 stand for the two sandbox ids, VERSION for the
// sandbox's Python version; the rest must match exactly.
const guide = `[ID1] exit code 0
VERSION /home/user 

--- thread 1: Tool said:
[ID1] exit code 0
primes below 1,000,000: 78498
largest gap: 114 after 492113

--- thread 1: Tool said:
[ID1] exit code 0
78498 primes still on disk

--- thread 2: Tool said:
[ID2] exit code 0
False

--- thread 2: Tool said:
[ID2] timed out

ACTION ID1 (1)
ACTION ID2 (2)
`

// checkGuide compares out with the guide line by line and returns the two sandbox ids.
func checkGuide(t *testing.T, out, action string) (id1, id2 string) {
	t.Helper()
	want := strings.Split(guide, "\n")
	got := strings.Split(out, "\n")
	if len(got) != len(want) {
		t.Errorf("%d lines; want %d:\n%s", len(got), len(want), out)
	}
	for i := range min(len(got), len(want)) {
		pattern := regexp.QuoteMeta(want[i])
		pattern = strings.ReplaceAll(pattern, "ID1", `(?P<id1>sb_[a-z0-9]+)`)
		pattern = strings.ReplaceAll(pattern, "ID2", `(?P<id2>sb_[a-z0-9]+)`)
		pattern = strings.ReplaceAll(pattern, "VERSION", `3\.\d+\.\d+`)
		pattern = strings.ReplaceAll(pattern, "ACTION", action)
		re := regexp.MustCompile("^" + pattern + "$")
		m := re.FindStringSubmatch(got[i])
		if m == nil {
			t.Errorf("line %d: %q does not match %q", i+1, got[i], want[i])
			continue
		}
		for name, p := range map[string]*string{"id1": &id1, "id2": &id2} {
			if k := re.SubexpIndex(name); k >= 0 {
				if *p == "" {
					*p = m[k]
				} else if *p != m[k] {
					t.Errorf("line %d: sandbox %s; earlier lines had %s", i+1, m[k], *p)
				}
			}
		}
	}
	if id1 == "" || id1 == id2 {
		t.Errorf("threads 1 and 2 ran in %q and %q; want two sandboxes", id1, id2)
	}
	return id1, id2
}

func listAll(t *testing.T, root string) []sandbox.Info {
	t.Helper()
	b, err := local.New(local.WithRoot(root), local.WithReapInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	infos, err := b.List(context.Background(), sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

func TestGuideScenarios(t *testing.T) {
	t.Setenv(sandboxtool.EnvTimeout, "")
	os.Unsetenv(sandboxtool.EnvTimeout)
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), config{Backend: "local", SandboxRoot: root, Model: "scripted", Progress: true}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	checkGuide(t, stdout.String(), "deleted")
	if infos := listAll(t, root); len(infos) != 0 {
		t.Errorf("after the run the backend still holds %v", infos)
	}
	if v, ok := os.LookupEnv(sandboxtool.EnvTimeout); ok {
		t.Errorf("run left RUN_TIMEOUT=%q set", v)
	}
	// Progress: every step of every turn, on stderr only.
	progress := stderr.String()
	for _, want := range []string{
		"thread 1  step 0  agent", "calls run_python (call_1,", "thread 1  step 1  tools", "run_python answered [sb_",
		"thread 2  step 5  tools", "] timed out", "thread 2  step 6  agent", "assistant replies",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
	if n := strings.Count(progress, "\n"); n != 12 {
		t.Errorf("%d progress lines; want 12 (4 turns of 3 steps):\n%s", n, progress)
	}
}

// With -db and -keep, a second run continues the same threads in the same sandboxes.
func TestSecondRunContinues(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(t.TempDir(), "threads.db")
	var first bytes.Buffer
	if err := run(context.Background(), config{Backend: "local", SandboxRoot: root, Keep: true, DB: db}, &first, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	id1, id2 := checkGuide(t, first.String(), "stopped")
	infos := listAll(t, root)
	if len(infos) != 2 {
		t.Fatalf("after a run with Keep the backend holds %v; want the two sandboxes, stopped", infos)
	}
	for _, info := range infos {
		if info.State != sandbox.StateStopped || (info.ID != id1 && info.ID != id2) {
			t.Errorf("sandbox %s %s (%s); want %s and %s stopped", info.ID, info.Name, info.State, id1, id2)
		}
	}

	var second bytes.Buffer
	if err := run(context.Background(), config{Backend: "local", SandboxRoot: root, DB: db}, &second, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	again1, again2 := checkGuide(t, second.String(), "deleted")
	if again1 != id1 || again2 != id2 {
		t.Errorf("second run used %s and %s; want the first run's %s and %s", again1, again2, id1, id2)
	}
	if infos := listAll(t, root); len(infos) != 0 {
		t.Errorf("after the second run the backend still holds %v", infos)
	}

	// The checkpoint file holds both runs' turns: 2 turns of 4 messages per run, on each thread.
	saver, err := bolt.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	g, err := codeact.Build(scripted.CodeAct(), prebuilt.MustTool("run_python", "", func(context.Context, sandboxtool.RunPythonArgs) (string, error) {
		return "", nil
	}), saver)
	if err != nil {
		t.Fatal(err)
	}
	for _, thread := range []string{"1", "2"} {
		snap, err := g.GetState(context.Background(), graph.WithThread(thread))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(snap.Values.Messages); n != 16 {
			t.Errorf("thread %s holds %d messages; want 16", thread, n)
		}
	}
}

// chatServer answers Chat Completions requests as the guide's stand-in model does, over the real wire
// format: a user message becomes a run_python call with that text as code (the primes program for "count the
// primes"), a tool message becomes "Tool said:\n" and its content.
type chatServer struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
		http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusUnauthorized)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []map[string]any `json:"tools"`
	}
	var raw map[string]any
	body := new(bytes.Buffer)
	body.ReadFrom(r.Body)
	if json.Unmarshal(body.Bytes(), &req) != nil || json.Unmarshal(body.Bytes(), &raw) != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, raw)
	s.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	msg := map[string]any{"role": "assistant", "content": "Tool said:\n" + last.Content}
	finish := "stop"
	if last.Role == "user" {
		code := last.Content
		if strings.HasPrefix(code, scripted.PrimesPrompt) {
			code = scripted.PrimesProgram
		}
		args, _ := json.Marshal(map[string]string{"code": code})
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
			"id": fmt.Sprintf("call_%d", len(req.Messages)), "type": "function",
			"function": map[string]any{"name": "run_python", "arguments": string(args)},
		}}}
		finish = "tool_calls"
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

// -model with a model name talks to an OpenAI-compatible endpoint and changes nothing else.
func TestOpenAICompatibleModel(t *testing.T) {
	srv := &chatServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", hs.URL)
	root := t.TempDir()
	var stdout bytes.Buffer
	if err := run(context.Background(), config{Backend: "local", SandboxRoot: root, Model: "test-model"}, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	checkGuide(t, stdout.String(), "deleted")
	if len(srv.requests) != 8 {
		t.Fatalf("%d model requests; want 8 (two per turn)", len(srv.requests))
	}
	req := srv.requests[0]
	tools, _ := json.Marshal(req["tools"])
	if req["model"] != "test-model" || !strings.Contains(string(tools), `"name":"run_python"`) || !strings.Contains(string(tools), `"code"`) {
		t.Errorf("first request: model %v, tools %s; want test-model and run_python(code)", req["model"], tools)
	}
	if infos := listAll(t, root); len(infos) != 0 {
		t.Errorf("after the run the backend still holds %v", infos)
	}
}

// -backend gvisor plays the four scenarios with every command under runsc; the output is the guide's.
func TestGuideScenariosGvisor(t *testing.T) {
	t.Setenv(sandboxtool.EnvTimeout, "")
	os.Unsetenv(sandboxtool.EnvTimeout)
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), config{Backend: "gvisor", SandboxRoot: root, Model: "scripted"}, &stdout, &stderr)
	if errors.Is(err, sandbox.ErrUnsupported) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkGuide(t, stdout.String(), "deleted")
	if entries, _ := filepath.Glob(filepath.Join(root, "sb_*")); len(entries) != 0 {
		t.Errorf("after the run the root still holds %v", entries)
	}
}

func TestBadFlags(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	root := t.TempDir()
	cases := []struct {
		cfg  config
		want string
	}{
		{config{Backend: "firecracker", SandboxRoot: root}, "-backend local, gvisor"},
		{config{Backend: "local", SandboxRoot: root, Model: "gpt-4o-mini"}, "OPENAI_API_KEY"},
		{config{Backend: "local", SandboxRoot: root, DB: filepath.Join(root, "missing", "dir", "x.db")}, "checkpoint file"},
	}
	for _, c := range cases {
		var stdout bytes.Buffer
		err := run(context.Background(), c.cfg, &stdout, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v; want one mentioning %q", c.cfg, err, c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%+v: printed %q before failing", c.cfg, stdout.String())
		}
	}
}

// BenchmarkGuide measures the whole example: four scenarios, nearly all of it the fourth one's 5 s timeout.
func BenchmarkGuide(b *testing.B) {
	root := b.TempDir()
	for b.Loop() {
		if err := run(context.Background(), config{Backend: "local", SandboxRoot: root}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			b.Fatal(err)
		}
	}
}

// -backend sandboxer plays the four scenarios through the Sandboxer API: the client, an agentgraph-sandboxd
// server on a loopback port, and the local backend behind it. The output is the guide's; with -keep a second
// run finds the same sandboxes by name, resumes them and deletes them at the end.
func TestGuideScenariosSandboxer(t *testing.T) {
	t.Setenv(sandboxtool.EnvTimeout, "")
	os.Unsetenv(sandboxtool.EnvTimeout)
	root := t.TempDir()
	lb, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	keys := &sandboxd.Keys{}
	secret, _, err := keys.Add("codeact", sandboxd.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sandboxd.New(lb, sandboxd.WithKeys(keys), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("SANDBOXER_API_KEY", "")
	t.Setenv("SANDBOXER_TOKEN", "")
	t.Setenv("SANDBOXER_ORG", "")
	t.Setenv("SANDBOXER_API_URL", hs.URL+sandboxd.Prefix)
	if err := run(context.Background(), config{Backend: "sandboxer"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "SANDBOXER_API_KEY") {
		t.Errorf("without a key: %v; want an error naming SANDBOXER_API_KEY", err)
	}
	t.Setenv("SANDBOXER_API_KEY", secret)

	var first, second bytes.Buffer
	if err := run(context.Background(), config{Backend: "sandboxer", Keep: true}, &first, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	id1, id2 := checkGuide(t, first.String(), "stopped")
	if err := run(context.Background(), config{Backend: "sandboxer"}, &second, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if again1, again2 := checkGuide(t, second.String(), "deleted"); again1 != id1 || again2 != id2 {
		t.Errorf("second run used %s and %s; want the first run's %s and %s", again1, again2, id1, id2)
	}
	if infos := listAll(t, root); len(infos) != 0 {
		t.Errorf("after the runs the backend still holds %v", infos)
	}
}
