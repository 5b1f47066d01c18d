package sandboxtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

// openBackend opens a local backend on root, closed when the test ends.
func openBackend(t testing.TB, root string) *local.Backend {
	t.Helper()
	b, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// closeAll closes reg when the test ends, so no sandbox outlives it.
func closeAll(t *testing.T, reg *sandboxtool.Registry) {
	t.Cleanup(func() {
		if _, err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

func onThread(id string) context.Context {
	return graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: id})
}

func call(t *testing.T, tool prebuilt.Tool, ctx context.Context, code string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	out, err := tool.Call(ctx, args)
	if err != nil {
		t.Fatalf("run_python(%q): %v", code, err)
	}
	return out.(string)
}

var header = regexp.MustCompile(`^\[(sb_[a-z0-9]+)\] (exit code -?\d+|timed out)(\n|$)`)

// sandboxOf checks out's first line and returns the sandbox id in it.
func sandboxOf(t *testing.T, out string) string {
	t.Helper()
	m := header.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("answer %q does not start with [sb_...] exit code N or timed out", out)
	}
	return m[1]
}

func TestRunPythonAnswers(t *testing.T) {
	b := openBackend(t, t.TempDir())
	// A generous timeout, so that a loaded machine cannot turn an answer into "timed out".
	reg := sandboxtool.New(b, sandboxtool.WithPrefix("t-"), sandboxtool.WithTimeout(60*time.Second))
	closeAll(t, reg)
	tool := reg.RunPython()
	ctx := onThread("1")

	cases := []struct {
		name, code string
		want       string // the answer with the sandbox id replaced by ID
	}{
		{"version and cwd", "import os, sys; print(sys.version_info[0], os.getcwd())", "[ID] exit code 0\n3 /home/user"},
		{"exit code", "import sys; print('bye'); sys.exit(3)", "[ID] exit code 3\nbye"},
		{"stderr after stdout", "import sys; print('out'); sys.stdout.flush(); print('err', file=sys.stderr)", "[ID] exit code 0\nout\nerr"},
		{"no output", "pass", "[ID] exit code 0"},
		{"exception", "raise SystemExit('boom')", "[ID] exit code 1\nboom"},
		{"tail only", "print('x' * 5000 + 'END')", "[ID] exit code 0\n" + strings.Repeat("x", 3996) + "END"},
		{"characters not bytes", "print('é' * 4100)", "[ID] exit code 0\n" + strings.Repeat("é", 3999)},
	}
	var id string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := call(t, tool, ctx, c.code)
			got := sandboxOf(t, out)
			if id == "" {
				id = got
			}
			if got != id {
				t.Errorf("thread 1 ran in %s, then in %s", id, got)
			}
			if want := strings.Replace(c.want, "ID", got, 1); out != want {
				t.Errorf("answer\n%q\nwant\n%q", out, want)
			}
		})
	}

	// A registry with a short timeout finds the same sandbox by name; its runaway program is cut off.
	short := sandboxtool.New(b, sandboxtool.WithPrefix("t-"), sandboxtool.WithTimeout(time.Second))
	out := call(t, short.RunPython(), ctx, "import time\nprint('started', flush=True)\nwhile True: time.sleep(1)")
	if want := "[" + id + "] timed out"; !strings.HasPrefix(out, want) {
		t.Errorf("runaway program: %q; want %q (and what it printed)", out, want)
	}

	infos, err := b.List(context.Background(), sandbox.Filter{Name: "t-1"})
	if err != nil || len(infos) != 1 || infos[0].ID != id {
		t.Fatalf("List(t-1) = %v, %v; want the one sandbox %s", infos, err, id)
	}
	if infos[0].Size != sandbox.SizeSmall || !infos[0].ExpiresAt.Equal(infos[0].CreatedAt.Add(sandboxtool.DefaultTTL)) {
		t.Errorf("sandbox created as %s expiring %v after creation; want small and %v", infos[0].Size,
			infos[0].ExpiresAt.Sub(infos[0].CreatedAt), sandboxtool.DefaultTTL)
	}
}

func TestRunPythonSchema(t *testing.T) {
	reg := sandboxtool.New(openBackend(t, t.TempDir()))
	spec := reg.RunPython().Spec()
	if spec.Name != "run_python" || spec.Description == "" {
		t.Errorf("spec %q %q", spec.Name, spec.Description)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Properties) != 1 || schema.Properties["code"] == nil || len(schema.Required) != 1 || schema.Required[0] != "code" {
		t.Errorf("parameters %s; want the one required argument code", spec.Parameters)
	}
}

func TestNoThreadIsAnError(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	_, err := reg.RunPython().Call(context.Background(), json.RawMessage(`{"code":"print(1)"}`))
	if !errors.Is(err, graph.ErrNoThread) || !strings.Contains(err.Error(), "graph.ContextWithConfig") {
		t.Fatalf("err = %v; want graph.ErrNoThread saying how to pass a thread", err)
	}
	if infos, _ := b.List(context.Background(), sandbox.Filter{}); len(infos) != 0 {
		t.Errorf("a call without a thread created sandboxes: %v", infos)
	}

	// In a graph, the tool's error fails the run; with WithToolErrorsToModel the
	// model gets it as a tool message and the run goes on.
	g, err := prebuilt.NewReactAgent(scripted.CodeAct(), []prebuilt.Tool{reg.RunPython()})
	if err != nil {
		t.Fatal(err)
	}
	in := graph.Updates(prebuilt.Messages.Add(model.User("print(1)")))
	if _, err := g.Invoke(context.Background(), in); !errors.Is(err, graph.ErrNoThread) {
		t.Fatalf("err = %v; want the run to fail with graph.ErrNoThread", err)
	}
	g, err = prebuilt.NewReactAgent(scripted.CodeAct(), []prebuilt.Tool{reg.RunPython()}, prebuilt.WithToolErrorsToModel())
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if len(msgs) != 4 || msgs[2].Role != model.RoleTool || !strings.Contains(msgs[2].Content, "thread id") {
		t.Fatalf("messages %+v; want the error answered as a tool message", msgs)
	}
}

func TestRunTimeoutFromEnvironment(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b, sandboxtool.WithPrefix("env-"), sandboxtool.WithSettingsFromEnv())
	closeAll(t, reg)
	tool := reg.RunPython()
	ctx := onThread("a")
	t.Setenv(sandboxtool.EnvTimeout, "1")
	if out := call(t, tool, ctx, "import time; time.sleep(5)"); !strings.HasSuffix(out, "] timed out") {
		t.Errorf("with RUN_TIMEOUT=1: %q", out)
	}
	t.Setenv(sandboxtool.EnvTimeout, "60")
	if out := call(t, tool, ctx, "import time; time.sleep(1.5); print('done')"); !strings.HasSuffix(out, "] exit code 0\ndone") {
		t.Errorf("with RUN_TIMEOUT=60: %q", out)
	}
	for _, bad := range []string{"soon", "0", "601"} {
		t.Setenv(sandboxtool.EnvTimeout, bad)
		if _, err := tool.Call(ctx, json.RawMessage(`{"code":"pass"}`)); err == nil || !strings.Contains(err.Error(), "600") {
			t.Errorf("RUN_TIMEOUT=%s: err = %v; want one naming the valid range", bad, err)
		}
	}
}

// Without WithSettingsFromEnv, or with a WithTimeout after it, RUN_TIMEOUT changes nothing; with it, an
// empty RUN_TIMEOUT leaves the timeout an earlier WithTimeout set.
func TestRunTimeoutIgnoresEnvironment(t *testing.T) {
	b := openBackend(t, t.TempDir())
	t.Setenv(sandboxtool.EnvTimeout, "1")
	for _, tc := range []struct {
		name string
		opts []sandboxtool.Option
	}{
		{"no option", nil},
		{"WithTimeout after", []sandboxtool.Option{sandboxtool.WithSettingsFromEnv(), sandboxtool.WithTimeout(60 * time.Second)}},
	} {
		reg := sandboxtool.New(b, append([]sandboxtool.Option{sandboxtool.WithPrefix("ignore-")}, tc.opts...)...)
		closeAll(t, reg)
		out := call(t, reg.RunPython(), onThread("a"), "import time; time.sleep(1.5); print('done')")
		if !strings.HasSuffix(out, "] exit code 0\ndone") {
			t.Errorf("%s, RUN_TIMEOUT=1: %q; want the program to finish", tc.name, out)
		}
	}
	t.Setenv(sandboxtool.EnvTimeout, "")
	reg := sandboxtool.New(b, sandboxtool.WithPrefix("unset-"), sandboxtool.WithTimeout(1*time.Second), sandboxtool.WithSettingsFromEnv())
	closeAll(t, reg)
	if out := call(t, reg.RunPython(), onThread("a"), "import time; time.sleep(5)"); !strings.HasSuffix(out, "] timed out") {
		t.Errorf("WithTimeout(1s) then WithSettingsFromEnv, RUN_TIMEOUT empty: %q; want timed out", out)
	}
}

func TestPrefixFromEnvironment(t *testing.T) {
	b := openBackend(t, t.TempDir())
	t.Setenv(sandboxtool.EnvPrefix, "from-env-")
	reg := sandboxtool.New(b, sandboxtool.WithSettingsFromEnv())
	closeAll(t, reg)
	sb, err := reg.Sandbox(context.Background(), "7")
	if err != nil {
		t.Fatal(err)
	}
	info, err := sb.Info(context.Background())
	if err != nil || info.Name != "from-env-7" {
		t.Fatalf("name %q, %v; want from-env-7", info.Name, err)
	}
	for _, tc := range []struct {
		opts []sandboxtool.Option
		want string
	}{
		{nil, sandboxtool.DefaultPrefix + "7"},
		{[]sandboxtool.Option{sandboxtool.WithPrefix("")}, "7"},
		{[]sandboxtool.Option{sandboxtool.WithSettingsFromEnv(), sandboxtool.WithPrefix("mine-")}, "mine-7"},
		{[]sandboxtool.Option{sandboxtool.WithPrefix("mine-"), sandboxtool.WithSettingsFromEnv()}, "from-env-7"},
	} {
		if got := sandboxtool.New(b, tc.opts...).Name("7"); got != tc.want {
			t.Errorf("with %d options, SANDBOX_PREFIX=from-env-: thread 7's sandbox is %q; want %q", len(tc.opts), got, tc.want)
		}
	}
}

func TestCreateOptions(t *testing.T) {
	b := openBackend(t, t.TempDir())
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		create   sandbox.CreateOptions
		wantSize sandbox.Size
		wantTTL  time.Duration
		wantEnv  string
	}{
		{"zero", sandbox.CreateOptions{}, sandboxtool.DefaultSize, sandboxtool.DefaultTTL, "None"},
		{"set", sandbox.CreateOptions{Name: "ignored", Size: sandbox.SizeLarge, TTL: time.Hour, Env: map[string]string{"GREETING": "hi"}},
			sandbox.SizeLarge, time.Hour, "hi"},
	} {
		reg := sandboxtool.New(b, sandboxtool.WithPrefix(tc.name+"-"), sandboxtool.WithCreateOptions(tc.create))
		closeAll(t, reg)
		out := call(t, reg.RunPython(), onThread("1"), "import os; print(os.environ.get('GREETING'))")
		if want := "] exit code 0\n" + tc.wantEnv; !strings.HasSuffix(out, want) {
			t.Errorf("%s: answer %q; want it to end %q", tc.name, out, want)
		}
		sb, err := reg.Sandbox(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		info, err := sb.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ttl := info.ExpiresAt.Sub(info.CreatedAt); info.Name != tc.name+"-1" || info.Size != tc.wantSize || ttl != tc.wantTTL {
			t.Errorf("%s: sandbox %q, size %s, TTL %v; want %q, %s, %v", tc.name, info.Name, info.Size, ttl, tc.name+"-1", tc.wantSize, tc.wantTTL)
		}
	}
}

func TestThreadsAreIsolated(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	tool := reg.RunPython()
	one := call(t, tool, onThread("1"), "open('secret.txt', 'w').write('one'); print('written')")
	two := call(t, tool, onThread("2"), "import os; print(os.path.exists('secret.txt'))")
	if sandboxOf(t, one) == sandboxOf(t, two) {
		t.Fatalf("threads 1 and 2 share sandbox %s", sandboxOf(t, one))
	}
	if !strings.HasSuffix(two, "\nFalse") {
		t.Errorf("thread 2 sees thread 1's file: %q", two)
	}
	again := call(t, tool, onThread("1"), "print(open('secret.txt').read())")
	if sandboxOf(t, again) != sandboxOf(t, one) || !strings.HasSuffix(again, "\none") {
		t.Errorf("thread 1's second call: %q; want its own file in %s", again, sandboxOf(t, one))
	}
}

func TestConcurrentCallsShareOneSandbox(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	const threads, perThread = 3, 32
	ids := make([][]string, threads)
	var wg sync.WaitGroup
	errs := make(chan error, threads*perThread)
	for th := range threads {
		ids[th] = make([]string, perThread)
		for i := range perThread {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sb, err := reg.Sandbox(context.Background(), fmt.Sprint(th))
				if err != nil {
					errs <- err
					return
				}
				ids[th][i] = sb.ID()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for th, row := range ids {
		for _, id := range row {
			if id != row[0] {
				t.Fatalf("thread %d got sandboxes %s and %s", th, row[0], id)
			}
		}
		if seen[row[0]] {
			t.Fatalf("two threads share %s", row[0])
		}
		seen[row[0]] = true
	}
	infos, err := b.List(context.Background(), sandbox.Filter{})
	if err != nil || len(infos) != threads {
		t.Fatalf("backend holds %d sandboxes (%v); want %d", len(infos), err, threads)
	}

	// Concurrent tool calls too: every answer names the one sandbox and is its own program's, though all of
	// them write main.py.
	tool := reg.RunPython()
	outs := make([]string, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]string{"code": fmt.Sprintf("print('call', %d)", i)})
			out, _ := tool.Call(onThread("0"), args)
			outs[i], _ = out.(string)
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if want := fmt.Sprintf("[%s] exit code 0\ncall %d", ids[0][0], i); out != want {
			t.Errorf("concurrent call %d answered %q; want %q", i, out, want)
		}
	}
}

func TestCloseDeletesInOrder(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	var want []sandboxtool.Closed
	for _, th := range []string{"b", "a", "c"} {
		sb, err := reg.Sandbox(context.Background(), th)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, sandboxtool.Closed{ThreadID: th, SandboxID: sb.ID(), Action: sandboxtool.Deleted})
	}
	got, err := reg.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Close reported %v; want %v", got, want)
	}
	if s := got[0].String(); s != "deleted "+want[0].SandboxID+" (b)" {
		t.Errorf("String() = %q", s)
	}
	if infos, err := b.List(context.Background(), sandbox.Filter{}); err != nil || len(infos) != 0 {
		t.Errorf("after Close the backend holds %v (%v)", infos, err)
	}
	for _, c := range want {
		if _, err := b.Get(context.Background(), c.SandboxID); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Get(%s) after Close: %v; want ErrNotFound", c.SandboxID, err)
		}
	}
	// Closed, the Registry starts afresh.
	if got, err := reg.Close(context.Background()); len(got) != 0 || err != nil {
		t.Errorf("second Close: %v, %v", got, err)
	}
}

// A new process (here: a new backend handle and Registry on the same root) reaches the thread's sandbox and
// its files, resumed after WithStopOnClose stopped it.
func TestRestartFindsStoppedSandbox(t *testing.T) {
	root := t.TempDir()
	first := sandboxtool.New(openBackend(t, root), sandboxtool.WithStopOnClose())
	out := call(t, first.RunPython(), onThread("42"), "open('notes.txt', 'w').write('kept'); print('ok')")
	id := sandboxOf(t, out)
	closed, err := first.Close(context.Background())
	if err != nil || len(closed) != 1 || closed[0].Action != sandboxtool.Stopped || closed[0].SandboxID != id {
		t.Fatalf("Close with WithStopOnClose: %v, %v", closed, err)
	}

	b := openBackend(t, root)
	infos, err := b.List(context.Background(), sandbox.Filter{Name: "langgraph-42"})
	if err != nil || len(infos) != 1 || infos[0].State != sandbox.StateStopped {
		t.Fatalf("after Close with WithStopOnClose: %v, %v; want one stopped sandbox", infos, err)
	}
	second := sandboxtool.New(b)
	closeAll(t, second)
	out = call(t, second.RunPython(), onThread("42"), "print(open('notes.txt').read())")
	if sandboxOf(t, out) != id || !strings.HasSuffix(out, "\nkept") {
		t.Fatalf("after restart: %q; want sandbox %s with notes.txt", out, id)
	}
	info, err := mustGet(t, b, id).Info(context.Background())
	if err != nil || info.State != sandbox.StateRunning {
		t.Errorf("state %v, %v; want running", info.State, err)
	}
}

func openBackendB(b *testing.B) *local.Backend { return openBackend(b, b.TempDir()) }

func mustGet(t *testing.T, b sandbox.Backend, id string) sandbox.Sandbox {
	t.Helper()
	sb, err := b.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// A sandbox stopped under the Registry (its TTL passed) is resumed; one deleted under it is replaced.
func TestStoppedOrDeletedUnderneath(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	tool := reg.RunPython()
	ctx := onThread("x")
	id := sandboxOf(t, call(t, tool, ctx, "open('f', 'w').write('1')"))
	if err := mustGet(t, b, id).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := call(t, tool, ctx, "print(open('f').read())"); out != "["+id+"] exit code 0\n1" {
		t.Errorf("after Stop: %q", out)
	}
	if err := mustGet(t, b, id).Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := call(t, tool, ctx, "import os; print(os.path.exists('f'))")
	if sandboxOf(t, out) == id || !strings.HasSuffix(out, "\nFalse") {
		t.Errorf("after Delete: %q; want a new, empty sandbox", out)
	}
}

// The tool works inside a graph, with the thread id the graph passes.
func TestInGraph(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	g, err := prebuilt.NewReactAgent(scripted.CodeAct(), []prebuilt.Tool{reg.RunPython()}, prebuilt.WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), graph.Updates(prebuilt.Messages.Add(model.User("print(6 * 7)"))), graph.WithThread("g"))
	if err != nil {
		t.Fatal(err)
	}
	last := res.State.Messages[len(res.State.Messages)-1].Content
	sb, err := reg.Sandbox(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Tool said:\n[" + sb.ID() + "] exit code 0\n42"; last != want {
		t.Errorf("reply %q; want %q", last, want)
	}
}

// A cancelled run is an error, not an answer the model would read as the program's.
func TestCancelled(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	tool := reg.RunPython()
	ctx, cancel := context.WithCancel(onThread("c"))
	call(t, tool, ctx, "pass") // the sandbox exists before the clock starts
	time.AfterFunc(300*time.Millisecond, cancel)
	out, err := tool.Call(ctx, json.RawMessage(`{"code":"import time; time.sleep(60)"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %q, %v; want context.Canceled", out, err)
	}
}

// Close while first uses are under way: every sandbox handed out is in one of the Close reports, and none is
// left in the backend.
func TestCloseDuringFirstUse(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	const n = 16
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := reg.Sandbox(context.Background(), fmt.Sprint(i))
			if err == nil {
				got[i] = sb.ID()
			} else if !errors.Is(err, sandboxtool.ErrClosing) {
				t.Error(err)
			}
		}()
	}
	closed, err := reg.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	more, err := reg.Close(context.Background()) // the calls that came after the first Close
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]bool{}
	for _, c := range append(closed, more...) {
		reported[c.SandboxID] = true
	}
	for i, id := range got {
		if id != "" && !reported[id] {
			t.Errorf("thread %d's sandbox %s was not closed", i, id)
		}
	}
	if infos, err := b.List(context.Background(), sandbox.Filter{}); err != nil || len(infos) != 0 {
		t.Errorf("left in the backend: %v (%v)", infos, err)
	}
}

// A caller that gives up does not stop the lookup others wait for, and Close still cleans up its sandbox.
func TestCallerGivesUp(t *testing.T) {
	b := openBackend(t, t.TempDir())
	reg := sandboxtool.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reg.Sandbox(ctx, "gone"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	sb, err := reg.Sandbox(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := reg.Close(context.Background())
	if err != nil || len(closed) != 1 || closed[0].SandboxID != sb.ID() {
		t.Fatalf("Close = %v, %v; want %s deleted", closed, err, sb.ID())
	}
	if infos, _ := b.List(context.Background(), sandbox.Filter{}); len(infos) != 0 {
		t.Errorf("left in the backend: %v", infos)
	}
}

// TestRunPythonFullDisk fills a thread's disk, as a program gone wrong would, and checks that the answer says
// so, and that the model's next program, which deletes the file, still runs.
func TestRunPythonFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the kernel holds the quota only as root")
	}
	b, err := local.New(local.WithRoot(t.TempDir()), local.WithSizeLimits(sandbox.SizeSmall,
		sandbox.Limits{CPUs: 1, MemoryBytes: 256 << 20, DiskBytes: 32 << 20, Pids: 64}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg := sandboxtool.New(b, sandboxtool.WithTimeout(60*time.Second))
	closeAll(t, reg)
	tool := reg.RunPython()
	ctx := onThread("full")
	out := call(t, tool, ctx, "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))\n")
	if !strings.Contains(out, "No space left on device") || !strings.Contains(out, "disk (home and /tmp together) is full") {
		t.Errorf("filling the disk answered %q", out)
	}
	out = call(t, tool, ctx, "import os\nos.remove('big')\nprint('removed')\n")
	if !strings.HasSuffix(out, "exit code 0\nremoved") {
		t.Errorf("removing the file answered %q", out)
	}
}
