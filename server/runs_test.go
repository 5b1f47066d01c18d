package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// gate holds a graph's "first" node until the test lets it go, and tells
// the test when a run has entered it.
type gate struct {
	entered chan string // the text of the message the node answers
	release chan struct{}
	// ignoreCancel keeps the node in its step after its run is cancelled
	// until release, as a tool that cannot be interrupted.
	ignoreCancel bool
	first        atomic.Int32
	second       atomic.Int32
}

func newGate() *gate {
	return &gate{entered: make(chan string, 16), release: make(chan struct{})}
}

// twoStepGraph runs first (held by the gate) then second; each appends an
// ai message naming itself and the last human message.
func twoStepGraph(t *testing.T, saver checkpoint.Saver, g *gate) *graph.Graph[prebuilt.MessagesState] {
	t.Helper()
	lastHuman := func(s prebuilt.MessagesState) string {
		for i := len(s.Messages) - 1; i >= 0; i-- {
			if s.Messages[i].Role == model.RoleUser {
				return s.Messages[i].Content
			}
		}
		return ""
	}
	gr, err := graph.New(prebuilt.Messages).
		AddNodeFunc("first", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			g.first.Add(1)
			text := lastHuman(s)
			g.entered <- text
			if g.ignoreCancel {
				<-g.release
			} else {
				select {
				case <-g.release:
				case <-ctx.Done():
					// Like a tool cleaning up, take a moment to stop.
					time.Sleep(10 * time.Millisecond)
					return graph.Update[prebuilt.MessagesState]{}, ctx.Err()
				}
			}
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: "first: " + text})), nil
		}).
		AddNodeFunc("second", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			g.second.Add(1)
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: "second: " + lastHuman(s)})), nil
		}).
		AddEdge(graph.START, "first").
		AddEdge("first", "second").
		AddEdge("second", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

// startServer serves s on loopback until the test ends; the gate, if any,
// is released first so that no run outlives the test.
func startServer(t *testing.T, g *gate, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		if g != nil {
			select {
			case <-g.release:
			default:
				close(g.release)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	return s, ts
}

func gatedServer(t *testing.T) (*gate, *httptest.Server) {
	t.Helper()
	g := newGate()
	saver := checkpoint.NewMemory()
	_, ts := startServer(t, g, WithGraph("steps", twoStepGraph(t, saver, g)), WithSaver(saver), WithWorkers(4))
	return g, ts
}

// callJSON makes a request and decodes its JSON answer into a generic
// value.
func callJSON(t *testing.T, ts *httptest.Server, method, path, body string) (int, any) {
	t.Helper()
	code, text, _ := call(t, ts, method, path, body)
	var v any
	if strings.TrimSpace(text) != "" {
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %q", method, path, code, text)
		}
	}
	return code, v
}

func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("want a JSON object, got %#v", v)
	}
	return m
}

// startRun creates a background run and returns its id.
func startRun(t *testing.T, ts *httptest.Server, thread, text, extra string) string {
	t.Helper()
	body := `{"assistant_id":"steps","input":{"messages":[{"type":"human","content":"` + text + `"}]}` + extra + `}`
	code, v := callJSON(t, ts, "POST", "/threads/"+thread+"/runs", body)
	if code != 200 {
		t.Fatalf("create run: %d %v", code, v)
	}
	run := obj(t, v)
	if st := run["status"]; st != "pending" && st != "running" || run["thread_id"] != thread {
		t.Fatalf("new run: %v", run)
	}
	return run["run_id"].(string)
}

func entered(t *testing.T, g *gate, want string) {
	t.Helper()
	select {
	case got := <-g.entered:
		if got != want {
			t.Fatalf("node entered for %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no run entered the node for %q", want)
	}
}

// waitRun waits for the run to end (join) and returns its record.
func waitRun(t *testing.T, ts *httptest.Server, thread, run string) map[string]any {
	t.Helper()
	code, _, _ := call(t, ts, "GET", "/threads/"+thread+"/runs/"+run+"/join", "")
	if code != 200 {
		t.Fatalf("join %s: %d", run, code)
	}
	code, v := callJSON(t, ts, "GET", "/threads/"+thread+"/runs/"+run, "")
	if code != 200 {
		t.Fatalf("get run %s: %d %v", run, code, v)
	}
	return obj(t, v)
}

// contents lists the thread's messages as "type: content".
func contents(t *testing.T, ts *httptest.Server, thread string) []string {
	t.Helper()
	code, v := callJSON(t, ts, "GET", "/threads/"+thread+"/state", "")
	if code != 200 {
		t.Fatalf("state: %d %v", code, v)
	}
	vals, _ := obj(t, v)["values"].(map[string]any)
	msgs, _ := vals["messages"].([]any)
	out := []string{}
	for _, m := range msgs {
		mm := m.(map[string]any)
		out = append(out, mm["type"].(string)+": "+mm["content"].(string))
	}
	return out
}

func threadStatus(t *testing.T, ts *httptest.Server, thread string) string {
	t.Helper()
	code, v := callJSON(t, ts, "GET", "/threads/"+thread, "")
	if code != 200 {
		t.Fatalf("get thread: %d %v", code, v)
	}
	return obj(t, v)["status"].(string)
}

func same(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func TestCancel(t *testing.T) {
	g, ts := gatedServer(t)
	call(t, ts, "POST", "/threads", `{"thread_id":"c1"}`)
	run := startRun(t, ts, "c1", "slow", "")
	entered(t, g, "slow")
	if code, v := callJSON(t, ts, "GET", "/threads/c1/runs/"+run, ""); code != 200 || obj(t, v)["status"] != "running" {
		t.Fatalf("running run: %d %v", code, v)
	}
	if got := threadStatus(t, ts, "c1"); got != "busy" {
		t.Fatalf("thread of a running run is %q, want busy", got)
	}
	if code, body, _ := call(t, ts, "POST", "/threads/c1/runs/"+run+"/cancel?action=explode", ""); code != 422 || !strings.Contains(body, "action") {
		t.Fatalf("bad action: %d %s", code, body)
	}
	if code, body, _ := call(t, ts, "POST", "/threads/c1/runs/no-such-run/cancel", ""); code != 404 {
		t.Fatalf("cancel unknown run: %d %s", code, body)
	}
	if code, body, _ := call(t, ts, "POST", "/threads/c1/runs/"+run+"/cancel?wait=true", ""); code != 204 || body != "" {
		t.Fatalf("cancel and wait: %d %q", code, body)
	}
	rec := waitRun(t, ts, "c1", run)
	if rec["status"] != "interrupted" {
		t.Fatalf("cancelled run: %v", rec["status"])
	}
	if g.second.Load() != 0 {
		t.Fatal("the cancelled run went on to its second node")
	}
	// The thread keeps the input its run saved; nothing the cancelled step
	// would have written.
	if got := contents(t, ts, "c1"); !same(got, []string{"human: slow"}) {
		t.Fatalf("messages after cancel: %q", got)
	}

	// Cancelling a queued run: it never starts.
	close(g.release)
	g.release = make(chan struct{})
	busy := startRun(t, ts, "c1", "busy", "")
	entered(t, g, "busy")
	queued := startRun(t, ts, "c1", "queued", `,"multitask_strategy":"enqueue"`)
	if code, _, _ := call(t, ts, "POST", "/threads/c1/runs/"+queued+"/cancel", ""); code != 202 {
		t.Fatalf("cancel queued run: %d", code)
	}
	if rec := waitRun(t, ts, "c1", queued); rec["status"] != "interrupted" {
		t.Fatalf("cancelled queued run: %v", rec["status"])
	}
	close(g.release)
	if rec := waitRun(t, ts, "c1", busy); rec["status"] != "success" {
		t.Fatalf("run before the cancelled one: %v", rec["status"])
	}
	if got := threadStatus(t, ts, "c1"); got != "idle" {
		t.Fatalf("thread after its runs ended: %q", got)
	}
	select {
	case text := <-g.entered:
		t.Fatalf("the cancelled queued run ran (entered for %q)", text)
	default:
	}
}

func TestMultitaskStrategies(t *testing.T) {
	for _, c := range []struct {
		strategy string
		// The first run's status (or "deleted"), the second's create
		// status code, and the thread's messages at the end.
		firstStatus string
		createCode  int
		messages    []string
	}{
		{"reject", "success", 422, []string{"human: one", "ai: first: one", "ai: second: one"}},
		// The first run is stopped inside its first node; its input stays.
		{"interrupt", "interrupted", 200, []string{"human: one", "human: two", "ai: first: two", "ai: second: two"}},
		// The first run and everything it wrote are gone.
		{"rollback", "deleted", 200, []string{"human: two", "ai: first: two", "ai: second: two"}},
		{"enqueue", "success", 200, []string{"human: one", "ai: first: one", "ai: second: one", "human: two", "ai: first: two", "ai: second: two"}},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			g, ts := gatedServer(t)
			call(t, ts, "POST", "/threads", `{"thread_id":"m"}`)
			first := startRun(t, ts, "m", "one", "")
			entered(t, g, "one")
			body := `{"assistant_id":"steps","input":{"messages":[{"type":"human","content":"two"}]},"multitask_strategy":"` + c.strategy + `"}`
			code, v := callJSON(t, ts, "POST", "/threads/m/runs", body)
			if code != c.createCode {
				t.Fatalf("second run: %d %v, want %d", code, v, c.createCode)
			}
			var second string
			if code == 200 {
				rec := obj(t, v)
				if st := rec["status"]; rec["multitask_strategy"] != c.strategy || st != "pending" && st != "running" {
					t.Fatalf("second run: %v", rec)
				}
				second = rec["run_id"].(string)
			} else if !strings.Contains(obj(t, v)["detail"].(string), "multitask_strategy") {
				t.Fatalf("reject names no field: %v", v)
			}
			if c.strategy == "enqueue" {
				// The second run waits for the first, which is still held.
				if code, v := callJSON(t, ts, "GET", "/threads/m/runs/"+second, ""); code != 200 || obj(t, v)["status"] != "pending" {
					t.Fatalf("queued run: %d %v", code, v)
				}
			}
			close(g.release)
			if c.firstStatus == "deleted" {
				if second != "" {
					waitRun(t, ts, "m", second)
				}
				if code, _ := callJSON(t, ts, "GET", "/threads/m/runs/"+first, ""); code != 404 {
					t.Fatalf("rolled-back run: %d, want 404", code)
				}
			} else if rec := waitRun(t, ts, "m", first); rec["status"] != c.firstStatus {
				t.Fatalf("first run: %v, want %s", rec["status"], c.firstStatus)
			}
			if second != "" {
				if rec := waitRun(t, ts, "m", second); rec["status"] != "success" {
					t.Fatalf("second run: %v", rec["status"])
				}
			}
			if got := contents(t, ts, "m"); !same(got, c.messages) {
				t.Fatalf("messages %q\nwant %q", got, c.messages)
			}
			code, v = callJSON(t, ts, "GET", "/threads/m/runs", "")
			wantRuns := 2
			if c.firstStatus == "deleted" || c.createCode != 200 {
				wantRuns = 1
			}
			if runs, _ := v.([]any); code != 200 || len(runs) != wantRuns {
				t.Fatalf("thread's runs: %d %v, want %d", code, v, wantRuns)
			}
		})
	}
}

func TestRunBreakpoints(t *testing.T) {
	g, ts := gatedServer(t)
	close(g.release)
	call(t, ts, "POST", "/threads", `{"thread_id":"b"}`)
	for _, c := range []struct{ body, field string }{
		{`"interrupt_before":["nowhere"]`, "interrupt_before[0]"},
		{`"interrupt_after":["first","__end__"]`, "interrupt_after[1]"},
		{`"interrupt_before":"first"`, "interrupt_before"},
		{`"interrupt_after":{"first":true}`, "interrupt_after"},
	} {
		code, body, _ := call(t, ts, "POST", "/threads/b/runs/wait", `{"assistant_id":"steps",`+c.body+`}`)
		if code != 422 || !strings.Contains(body, c.field) {
			t.Errorf("%s: %d %s; want 422 naming %s", c.body, code, body, c.field)
		}
	}
	// Paused after first: the run succeeds, the thread waits at second.
	code, v := callJSON(t, ts, "POST", "/threads/b/runs/wait", `{"assistant_id":"steps","input":{"messages":[{"type":"human","content":"hi"}]},"interrupt_after":["first"]}`)
	if code != 200 {
		t.Fatalf("run with breakpoint: %d %v", code, v)
	}
	if msgs := obj(t, v)["messages"].([]any); len(msgs) != 2 {
		t.Fatalf("values at the breakpoint: %v", v)
	}
	if got := threadStatus(t, ts, "b"); got != "interrupted" {
		t.Fatalf("thread at a breakpoint: %q", got)
	}
	code, v = callJSON(t, ts, "GET", "/threads/b/state", "")
	if next := obj(t, v)["next"].([]any); code != 200 || len(next) != 1 || next[0] != "second" {
		t.Fatalf("state at the breakpoint: %d %v", code, v)
	}
	code, v = callJSON(t, ts, "GET", "/threads/b/runs", "")
	if runs := v.([]any); code != 200 || obj(t, runs[0])["status"] != "success" {
		t.Fatalf("a run stopped at a breakpoint: %v", v)
	}
	// A run with no input continues; the breakpoint was that run's only.
	if code, v = callJSON(t, ts, "POST", "/threads/b/runs/wait", `{"assistant_id":"steps","input":null}`); code != 200 {
		t.Fatalf("continue: %d %v", code, v)
	}
	if got := contents(t, ts, "b"); !same(got, []string{"human: hi", "ai: first: hi", "ai: second: hi"}) {
		t.Fatalf("after continuing: %q", got)
	}
	if got := threadStatus(t, ts, "b"); got != "idle" {
		t.Fatalf("thread after continuing: %q", got)
	}
	// "*" stops before every node, first of all.
	call(t, ts, "POST", "/threads", `{"thread_id":"b2"}`)
	callJSON(t, ts, "POST", "/threads/b2/runs/wait", `{"assistant_id":"steps","input":{"messages":[{"type":"human","content":"x"}]},"interrupt_before":"*"}`)
	code, v = callJSON(t, ts, "GET", "/threads/b2/state", "")
	if next := obj(t, v)["next"].([]any); code != 200 || len(next) != 1 || next[0] != "first" {
		t.Fatalf("state before every node: %d %v", code, v)
	}
}

// restartable is a server over a bbolt checkpoint file and a state file
// that a test stops and starts again.
type restartable struct {
	dir   string
	gate  *gate
	saver *bolt.Saver
	srv   *Server
	ts    *httptest.Server
}

func (r *restartable) start(t *testing.T) {
	t.Helper()
	saver, err := bolt.Open(filepath.Join(r.dir, "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	r.saver = saver
	r.srv, err = New(WithGraph("steps", twoStepGraph(t, saver, r.gate)), WithSaver(saver), WithStateFile(filepath.Join(r.dir, "server.db")))
	if err != nil {
		t.Fatal(err)
	}
	r.ts = httptest.NewServer(r.srv)
}

func (r *restartable) stop(t *testing.T, ctx context.Context) error {
	t.Helper()
	err := r.srv.Shutdown(ctx)
	r.ts.Close()
	if cerr := r.saver.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return err
}

func TestShutdownDrainsAndRestores(t *testing.T) {
	r := &restartable{dir: t.TempDir(), gate: newGate()}
	r.start(t)
	call(t, r.ts, "POST", "/threads", `{"thread_id":"d"}`)
	running := startRun(t, r.ts, "d", "one", "")
	entered(t, r.gate, "one")
	queued := startRun(t, r.ts, "d", "two", `,"multitask_strategy":"enqueue"`)

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop(t, context.Background()) }()
	// Shutdown takes no new runs while it drains the running one.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body, _ := call(t, r.ts, "POST", "/threads", `{}`)
		if code != 200 {
			t.Fatalf("creating a thread while shutting down: %d %s", code, body)
		}
		// Accepted before the shutdown began, this run stops before its
		// first node and so leaves the counts alone.
		code, body, _ = call(t, r.ts, "POST", "/runs/wait", `{"assistant_id":"steps","input":{"messages":[]},"interrupt_before":"*"}`)
		if code == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs still accepted while shutting down: %d %s", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The step in flight finishes and is saved; the run stops at the
	// boundary before second.
	close(r.gate.release)
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n, m := r.gate.first.Load(), r.gate.second.Load(); n != 1 || m != 0 {
		t.Fatalf("before the restart first ran %d times and second %d; want 1 and 0", n, m)
	}

	r.start(t)
	defer r.stop(t, context.Background())
	if rec := waitRun(t, r.ts, "d", running); rec["status"] != "success" {
		t.Fatalf("drained run after the restart: %v", rec["status"])
	}
	entered(t, r.gate, "two")
	if rec := waitRun(t, r.ts, "d", queued); rec["status"] != "success" {
		t.Fatalf("queued run after the restart: %v", rec["status"])
	}
	// first ran once for "one" (not again after the restart) and once for
	// "two"; nothing was lost or applied twice.
	if n, m := r.gate.first.Load(), r.gate.second.Load(); n != 2 || m != 2 {
		t.Fatalf("first ran %d times and second %d; want 2 and 2", n, m)
	}
	want := []string{"human: one", "ai: first: one", "ai: second: one", "human: two", "ai: first: two", "ai: second: two"}
	if got := contents(t, r.ts, "d"); !same(got, want) {
		t.Fatalf("messages %q\nwant %q", got, want)
	}
	if got := threadStatus(t, r.ts, "d"); got != "idle" {
		t.Fatalf("thread after the restart: %q", got)
	}
}

func TestShutdownGraceCancelsAndRestores(t *testing.T) {
	r := &restartable{dir: t.TempDir(), gate: newGate()}
	r.start(t)
	call(t, r.ts, "POST", "/threads", `{"thread_id":"g"}`)
	run := startRun(t, r.ts, "g", "stuck", "")
	entered(t, r.gate, "stuck")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The step never reaches its boundary within the grace period: it is
	// cancelled, and only that step is lost.
	if err := r.stop(t, ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown past its grace: %v, want context.DeadlineExceeded", err)
	}
	close(r.gate.release)
	r.start(t)
	defer r.stop(t, context.Background())
	if rec := waitRun(t, r.ts, "g", run); rec["status"] != "success" {
		t.Fatalf("run after the restart: %v", rec["status"])
	}
	want := []string{"human: stuck", "ai: first: stuck", "ai: second: stuck"}
	if got := contents(t, r.ts, "g"); !same(got, want) {
		t.Fatalf("messages %q\nwant %q", got, want)
	}
	if n := r.gate.first.Load(); n != 2 {
		t.Fatalf("first ran %d times; want 2 (the cut step again)", n)
	}
}

func TestWaitReportsRunError(t *testing.T) {
	ts := newTestServer(t)
	call(t, ts, "POST", "/threads", `{"thread_id":"e"}`)
	// echo's node indexes the last message: with none it panics, and the
	// run, not the server, fails.
	code, v := callJSON(t, ts, "POST", "/threads/e/runs/wait", `{"assistant_id":"echo","input":{"messages":[]}}`)
	if code != 200 {
		t.Fatalf("wait: %d %v", code, v)
	}
	e := obj(t, obj(t, v)["__error__"])
	if e["error"] != "NodeError" || !strings.Contains(e["message"].(string), `node "agent" panicked`) {
		t.Fatalf("wait on a failing run: %v", v)
	}
	code, v = callJSON(t, ts, "GET", "/threads/e/runs", "")
	if runs := v.([]any); code != 200 || len(runs) != 1 || obj(t, runs[0])["status"] != "error" {
		t.Fatalf("failed run: %v", v)
	}
	if got := threadStatus(t, ts, "e"); got != "error" {
		t.Fatalf("thread of a failed run: %q", got)
	}
	// The stream of a failing run ends with an error event.
	_, body, _ := call(t, ts, "POST", "/threads/e/runs/stream", `{"assistant_id":"echo","input":{"messages":[]},"stream_mode":"updates"}`)
	if !strings.Contains(body, "event: error\ndata: {\"error\":\"NodeError\",\"message\":\"graph: node \\\"agent\\\" panicked") {
		t.Fatalf("stream of a failing run: %q", body)
	}
}
