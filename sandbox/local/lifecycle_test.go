//go:build linux

package local_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// A second Backend on the same root stands for another process: it shares nothing but the disk.
func TestAnotherProcessSeesAndStops(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	a, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Create(ctx, sandbox.CreateOptions{Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	done := make(chan sandbox.ExecResult, 1)
	go func() {
		r, err := s.Exec(ctx, "echo started > started; sleep 120", sandbox.ExecOptions{Timeout: 200 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := s.ReadFile(ctx, "started"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}

	b, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Get(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if infos, _ := b.List(ctx, sandbox.Filter{Name: "shared"}); len(infos) != 1 || infos[0].ID != s.ID() {
		t.Errorf("List from the other backend = %+v", infos)
	}
	if err := got.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("command stopped from elsewhere: %+v, want killed", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop from another backend did not kill the running command")
	}
	if _, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec after Stop from elsewhere: %v, want ErrStopped", err)
	}
}

func TestTTLReapedByNewProcess(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(t time.Time) local.Option { return local.WithClock(func() time.Time { return t }) }
	a, err := local.New(local.WithRoot(root), local.WithReapInterval(0), at(created))
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Create(ctx, sandbox.CreateOptions{TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	live, err := a.Create(ctx, sandbox.CreateOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Delete(ctx)
	if in, err := s.Info(ctx); err != nil || !in.CreatedAt.Equal(created) || !in.ExpiresAt.Equal(created.Add(300*time.Millisecond)) {
		t.Fatalf("Info = %+v, %v; want created at the clock's time and expiring 300ms later", in, err)
	}
	a.Close() // the creator "dies"

	// At the last instant of the short TTL nothing has expired.
	early, err := local.New(local.WithRoot(root), local.WithReapInterval(-1), at(created.Add(300*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := early.Reap(ctx)
	early.Close()
	if err != nil || len(stopped) != 0 {
		t.Errorf("Reap as the TTL ends: stopped %v, %v; want none", stopped, err)
	}

	b, err := local.New(local.WithRoot(root), at(created.Add(301*time.Millisecond))) // reaps at start-up
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if in, _ := s.Info(ctx); in.State != sandbox.StateStopped {
		t.Errorf("expired sandbox state = %q, want stopped", in.State)
	}
	if in, _ := live.Info(ctx); in.State != sandbox.StateRunning {
		t.Errorf("live sandbox state = %q, want running", in.State)
	}
	// Resume starts the TTL afresh from the resuming backend's clock.
	again, err := b.Get(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := again.Info(ctx); in.State != sandbox.StateRunning || !in.ExpiresAt.Equal(created.Add(601*time.Millisecond)) {
		t.Errorf("after Resume: %s, expires %v after creation; want running, 601ms", in.State, in.ExpiresAt.Sub(created))
	}
}

func TestTTLReapedPeriodically(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, local.WithReapInterval(50*time.Millisecond))
	s, err := b.Create(ctx, sandbox.CreateOptions{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, "sleep 30", sandbox.ExecOptions{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 128+int(syscall.SIGKILL) || r.Duration > 20*time.Second {
		t.Errorf("a command running past the TTL: %+v, want killed by the reaper", r)
	}
	if in, _ := s.Info(ctx); in.State != sandbox.StateStopped {
		t.Errorf("state = %q, want stopped", in.State)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := s.Info(ctx); in.State != sandbox.StateRunning || !in.ExpiresAt.After(time.Now()) {
		t.Errorf("after Resume: %+v, want running with a fresh TTL", in)
	}
}

func TestHostNetwork(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello from the host")
	}))
	defer srv.Close()
	ctx := context.Background()
	b := newBackend(t)
	s, err := b.Create(ctx, sandbox.CreateOptions{HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, fmt.Sprintf(`python3 -c 'import urllib.request; print(urllib.request.urlopen("%s").read().decode())'`, srv.URL), sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "hello from the host\n" || hits.Load() != 1 {
		t.Errorf("with host network: %+v, %d requests", r, hits.Load())
	}
}

// TestNetworkPerSandbox: the commands of one sandbox share its loopback, as the processes of a container
// do, and another sandbox's loopback is a different one. Sandbox b sends to the port a's listener holds
// before a's second command does; the listener must get a's datagram first.
func TestNetworkPerSandbox(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	var boxes [2]sandbox.Sandbox
	for i := range boxes {
		s, err := b.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Delete(ctx)
		boxes[i] = s
	}
	a, other := boxes[0], boxes[1]
	listened := make(chan sandbox.ExecResult, 1)
	go func() {
		r, err := a.Exec(ctx, `python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 9999))
open("ready", "w").close()
s.settimeout(20)
print(s.recv(100).decode())
'`, sandbox.ExecOptions{Timeout: 30 * time.Second})
		if err != nil {
			r.Stderr += err.Error()
		}
		listened <- r
	}()
	send := func(s sandbox.Sandbox, what string) {
		t.Helper()
		r, err := s.Exec(ctx, fmt.Sprintf(`python3 -c '
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"%s", ("127.0.0.1", 9999))
'`, what), sandbox.ExecOptions{})
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("send from %s: %+v, %v", s.ID(), r, err)
		}
	}
	if r, err := a.Exec(ctx, `for i in $(seq 400); do [ -e ready ] && exit 0; sleep 0.05; done; exit 1`, sandbox.ExecOptions{}); err != nil || r.ExitCode != 0 {
		t.Fatalf("the listener did not start: %+v, %v, %+v", r, err, <-listened)
	}
	send(other, "from another sandbox")
	send(a, "from the same sandbox")
	if r := <-listened; r.ExitCode != 0 || r.Stdout != "from the same sandbox\n" {
		t.Errorf("the listener got %+v", r)
	}
}

func TestPythonIsolatedByDefault(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, `python3 -c 'import sys; print(sys.flags.isolated, sys.executable)'; python -c 'print("python too")'`, sandbox.ExecOptions{Env: map[string]string{"PYTHONPATH": "/evil"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "1 /usr/bin/python3\npython too\n" {
		t.Errorf("interpreter: %+v", r)
	}
}

func TestWithUnsafeNoIsolation(t *testing.T) {
	ctx := context.Background()
	var logged strings.Builder
	b := newBackend(t, local.WithUnsafeNoIsolation(), local.WithLogger(slogTo(&logged)))
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, "echo $HOME", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.TrimSpace(r.Stdout), "/home") || !strings.Contains(logged.String(), "WithUnsafeNoIsolation") {
		t.Errorf("unsafe run: %+v; log %q", r, logged.String())
	}
}

// TestInitMissing re-runs this test binary without Init: Create must fail at once with ErrInitMissing.
func TestInitMissing(t *testing.T) {
	if os.Getenv("AGENTGRAPH_TEST_SKIP_INIT") == "1" {
		_, err := newBackend(t).Create(context.Background(), sandbox.CreateOptions{})
		if !errors.Is(err, local.ErrInitMissing) || !errors.Is(err, sandbox.ErrUnsupported) {
			t.Fatalf("Create without Init: %v, want ErrInitMissing", err)
		}
		fmt.Println("INIT-MISSING-OK:", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInitMissing$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTGRAPH_TEST_SKIP_INIT=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "INIT-MISSING-OK: ") || !strings.Contains(string(out), "call local.Init()") {
		t.Fatalf("child run: %v\n%s", err, out)
	}
}

// TestNothingLeftBehind runs commands of every kind, deletes the sandboxes, and checks that no process,
// mount, cgroup or file of theirs remains.
func TestNothingLeftBehind(t *testing.T) {
	ctx := context.Background()
	mountsBefore := countMounts(t)
	root := t.TempDir()
	b, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		s, err := b.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
		if _, err := s.Exec(ctx, "sleep 100 & python3 -c pass", sandbox.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Exec(ctx, "sleep 100", sandbox.ExecOptions{Timeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.(sandbox.Starter).Start(ctx, "sleep 100", sandbox.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("root %s still holds %v", root, entries)
	}
	for _, id := range ids {
		for _, c := range []string{"memory", "pids", "cpu"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "agentgraph", id)); err == nil {
				t.Errorf("cgroup %s/%s remains", c, id)
			}
		}
	}
	if l := loopDevicesUnder(root); len(l) != 0 {
		t.Errorf("loop devices remain: %v", l)
	}
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("mounts remain: %v", m)
	}
	if n := countMounts(t); n != mountsBefore {
		t.Errorf("mount table had %d entries, now %d", mountsBefore, n)
	}
	if procs := helperProcesses(t); len(procs) > 0 {
		t.Errorf("processes of ours remain: %v", procs)
	}
}

// countMounts counts the host's mounts other than sandbox disks, which tests of other packages running at
// the same time add and remove.
func countMounts(t *testing.T) int {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		// Sandboxes' disks, and anything in the temporary directory, where the tests of other packages
		// running at the same time mount theirs: mountsUnder checks this test's own root.
		if f := strings.Fields(line); len(f) > 4 && !strings.Contains(line, " - ext4 /dev/loop") &&
			!strings.HasPrefix(f[4], os.TempDir()+"/") {
			n++
		}
	}
	return n
}

// helperProcesses lists live children of this process (helpers and what they exec become those).
func helperProcesses(t testing.TB) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	self := fmt.Sprint(os.Getpid())
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndex(s, ") ")
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) > 1 && f[1] == self && f[0] != "Z" {
			out = append(out, s[:i+1])
		}
	}
	return out
}

func slogTo(w *strings.Builder) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
