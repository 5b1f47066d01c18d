package sandboxtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

func callArgs(t *testing.T, tool prebuilt.Tool, ctx context.Context, args map[string]string) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, err := tool.Call(ctx, raw)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool.Spec().Name, args, err)
	}
	return out.(string)
}

var started = regexp.MustCompile(`^\[(sb_[a-z0-9]+)\] started (\S+)\n`)

// statusUntil calls command_status until its answer satisfies done, failing after a minute.
func statusUntil(t *testing.T, status prebuilt.Tool, ctx context.Context, id string, done func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out := callArgs(t, status, ctx, map[string]string{"command_id": id})
		if done(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("command_status(%s) never got there; last answer %q", id, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartPythonAndCommandStatus(t *testing.T) {
	reg := sandboxtool.New(openBackend(t, t.TempDir()))
	closeAll(t, reg)
	start, status := reg.StartPython(), reg.CommandStatus()
	ctx := onThread("1")
	// The program waits for a file the test writes, so "running" is observed for certain, not by timing.
	out := callArgs(t, start, ctx, map[string]string{"code": `
import os, time
print("started", flush=True)
while not os.path.exists("go"):
    time.sleep(0.01)
print("done")
raise SystemExit(3)
`})
	m := started.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, sandboxtool.StatusToolName) {
		t.Fatalf("start_python answered %q; want [sb_…] started <id> and a pointer to command_status", out)
	}
	sbID, cmdID := m[1], m[2]
	running := statusUntil(t, status, ctx, cmdID, func(s string) bool { return strings.Contains(s, "started") })
	if want := "[" + sbID + "] " + cmdID + " running\nstarted"; running != want {
		t.Errorf("status while running = %q, want %q", running, want)
	}
	// run_python works meanwhile, in the same sandbox, and does not disturb the background program.
	if out := call(t, reg.RunPython(), ctx, "open('go', 'w').close(); print('released')"); sandboxOf(t, out) != sbID {
		t.Errorf("run_python ran in another sandbox: %q", out)
	}
	final := statusUntil(t, status, ctx, cmdID, func(s string) bool { return !strings.Contains(s, " running") })
	if want := "[" + sbID + "] " + cmdID + " exit code 3\nstarted\ndone"; final != want {
		t.Errorf("final status = %q, want %q", final, want)
	}
	// Another thread's sandbox does not know the command.
	other := callArgs(t, status, onThread("2"), map[string]string{"command_id": cmdID})
	if strings.Contains(other, sbID) || !strings.Contains(other, "no command") {
		t.Errorf("thread 2 asked about thread 1's command: %q", other)
	}
	if out := callArgs(t, status, ctx, map[string]string{"command_id": "cmd_nosuch"}); !strings.Contains(out, `no command "cmd_nosuch"`) {
		t.Errorf("unknown id: %q", out)
	}
}

func TestStartPythonTimesOutWithTheSandbox(t *testing.T) {
	reg := sandboxtool.New(openBackend(t, t.TempDir()))
	closeAll(t, reg)
	ctx := onThread("1")
	out := callArgs(t, reg.StartPython(), ctx, map[string]string{"code": "import time; print('up', flush=True); time.sleep(600)"})
	m := started.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("start_python answered %q", out)
	}
	statusUntil(t, reg.CommandStatus(), ctx, m[2], func(s string) bool { return strings.HasSuffix(s, "running\nup") })
	sb, err := reg.Sandbox(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	// Stopping the sandbox (as its TTL does) ends the program.
	if err := sb.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := callArgs(t, reg.CommandStatus(), ctx, map[string]string{"command_id": m[2]})
	if strings.Contains(after, " running") {
		t.Errorf("after Stop: %q", after)
	}
	// start_python resumes the stopped sandbox, as run_python does.
	if out := callArgs(t, reg.StartPython(), ctx, map[string]string{"code": "print(1)"}); !started.MatchString(out) {
		t.Errorf("start_python on a stopped sandbox: %q", out)
	}
}

// noStarter hides the detached-command methods of a backend's sandboxes.
type noStarter struct{ sandbox.Backend }

func (b noStarter) Create(ctx context.Context, o sandbox.CreateOptions) (sandbox.Sandbox, error) {
	s, err := b.Backend.Create(ctx, o)
	return struct{ sandbox.Sandbox }{s}, err
}

func (b noStarter) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	s, err := b.Backend.Get(ctx, id)
	return struct{ sandbox.Sandbox }{s}, err
}

func TestDetachedErrors(t *testing.T) {
	reg := sandboxtool.New(noStarter{openBackend(t, t.TempDir())})
	closeAll(t, reg)
	raw, _ := json.Marshal(map[string]string{"code": "print(1)"})
	if _, err := reg.StartPython().Call(onThread("1"), raw); !errors.Is(err, sandboxtool.ErrNoDetached) {
		t.Errorf("start_python on a backend without Starter: %v, want ErrNoDetached", err)
	}
	raw, _ = json.Marshal(map[string]string{"command_id": "cmd_x"})
	if _, err := reg.CommandStatus().Call(onThread("1"), raw); !errors.Is(err, sandboxtool.ErrNoDetached) {
		t.Errorf("command_status on a backend without Starter: %v, want ErrNoDetached", err)
	}
	if _, err := reg.CommandStatus().Call(context.Background(), raw); !errors.Is(err, graph.ErrNoThread) {
		t.Errorf("command_status without a thread: %v, want graph.ErrNoThread", err)
	}
	raw, _ = json.Marshal(map[string]string{"code": "print(1)"})
	if _, err := reg.StartPython().Call(context.Background(), raw); !errors.Is(err, graph.ErrNoThread) {
		t.Errorf("start_python without a thread: %v, want graph.ErrNoThread", err)
	}
}
