//go:build linux

package gvisor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/gvisor"
)

// TestAnotherBackendStops: a second backend on the same root (as another process would open it) sees the
// sandbox, and its Stop kills the command the first one runs.
func TestAnotherBackendStops(t *testing.T) {
	ctx := context.Background()
	a := newBackend(t)
	s, err := a.Create(ctx, sandbox.CreateOptions{Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	id, err := s.(sandbox.Starter).Start(ctx, "echo up; sleep 300", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		st, err := s.(sandbox.Starter).Status(ctx, id)
		return err == nil && st.Stdout == "up\n"
	})
	b, err := gvisor.New(gvisor.WithRoot(a.Root()), gvisor.WithRunsc(a.Runsc()), gvisor.WithReapInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	infos, err := b.List(ctx, sandbox.Filter{Name: "shared"})
	if err != nil || len(infos) != 1 || infos[0].ID != s.ID() {
		t.Fatalf("List from the second backend = %+v, %v", infos, err)
	}
	other, err := b.Get(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The first backend notices the Stop on disk within a tick of its watch and ends the command.
	waitFor(t, func() bool {
		st, err := s.(sandbox.Starter).Status(ctx, id)
		return err == nil && st.State == sandbox.CommandExited
	})
}

// TestTTLReaped: Reap stops a sandbox past its TTL, killing what it runs, and leaves others alone.
func TestTTLReaped(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, gvisor.WithReapInterval(-1))
	short, err := b.Create(ctx, sandbox.CreateOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Delete(ctx)
	long, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer long.Delete(ctx)
	id, err := short.(sandbox.Starter).Start(ctx, "sleep 300", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stopped []string
	waitFor(t, func() bool {
		stopped, err = b.Reap(ctx)
		return err == nil && len(stopped) > 0
	})
	if !slices.Equal(stopped, []string{short.ID()}) {
		t.Errorf("Reap stopped %v, want [%s]", stopped, short.ID())
	}
	if st, err := short.(sandbox.Starter).Status(ctx, id); err != nil || st.State != sandbox.CommandExited {
		t.Errorf("the expired sandbox's command: %+v, %v; want exited", st, err)
	}
	if _, err := short.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec on the reaped sandbox: %v, want ErrStopped", err)
	}
	if r, err := long.Exec(ctx, "echo alive", sandbox.ExecOptions{}); err != nil || r.Stdout != "alive\n" {
		t.Errorf("the other sandbox: %+v, %v", r, err)
	}
}

// TestNothingLeftBehind: after commands of every kind and Delete, no container, mount, cgroup, process or
// file of the sandbox remains.
func TestNothingLeftBehind(t *testing.T) {
	ctx := context.Background()
	mountsBefore := mounts(t)
	b := newBackend(t)
	s, err := b.Create(ctx, sandbox.CreateOptions{Size: sandbox.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Exec(ctx, "echo hi > f; (sleep 300 &); echo done", sandbox.ExecOptions{}); err != nil || r.Stdout != "done\n" {
		t.Fatalf("Exec: %+v, %v", r, err)
	}
	if r, err := s.Exec(ctx, "sleep 300", sandbox.ExecOptions{Timeout: time.Second}); err != nil || !r.TimedOut {
		t.Fatalf("Exec with a timeout: %+v, %v", r, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		waitFor(t, func() bool { return len(containers(t, b)) > 0 })
		cancel()
	}()
	if _, err := s.Exec(cctx, "sleep 300", sandbox.ExecOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Exec: %v", err)
	}
	if _, err := s.(sandbox.Starter).Start(ctx, "sleep 300", sandbox.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if left := containers(t, b); len(left) > 0 {
		t.Errorf("containers left after Delete: %v", left)
	}
	if _, err := os.Stat(filepath.Join(b.Root(), s.ID())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sandbox directory after Delete: %v", err)
	}
	for _, c := range []string{"memory", "cpu", "pids", "cpuset"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "agentgraph-gvisor", s.ID())); err == nil {
			t.Errorf("cgroup %s of the sandbox is left", c)
		}
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left: %v", kids)
	}
	b.Close()
	for _, m := range mounts(t) {
		if !slices.Contains(mountsBefore, m) && (strings.Contains(m, b.Root()) || !underTemp(m)) {
			t.Errorf("mount added: %s", m)
		}
	}
}

// underTemp says whether the mount point of a /proc/self/mounts line lies in the temporary directory,
// where the tests of other packages, running at the same time, mount their own sandboxes' disks.
func underTemp(line string) bool {
	f := strings.Fields(line)
	return len(f) > 1 && strings.HasPrefix(f[1], os.TempDir()+"/")
}

func mounts(t *testing.T) []string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// children lists this process's child processes (by scanning every process's parent).
func children(t *testing.T) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); i > 0 && len(f) > 1 && f[1] == self {
			out = append(out, e.Name()+" "+s[strings.IndexByte(s, '(')+1:i])
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMissingRunsc: a runsc that is not there is ErrUnsupported from New, naming the path, not a failure at
// the first command.
func TestMissingRunsc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("New refuses non-root callers before it looks at runsc")
	}
	missing := filepath.Join(t.TempDir(), "runsc")
	_, err := gvisor.New(gvisor.WithRoot(t.TempDir()), gvisor.WithRunsc(missing))
	if !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), missing) {
		t.Errorf("New with a missing runsc: %v, want ErrUnsupported naming %s", err, missing)
	}
}
