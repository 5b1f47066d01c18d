//go:build linux

package local_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// TestEndings checks that a result says why its command ended, for every way it can end.
func TestEndings(t *testing.T) {
	ctx := context.Background()
	small := sandbox.Limits{CPUs: 1, MemoryBytes: 128 << 20, DiskBytes: 64 << 20, Pids: 64}
	b := newBackend(t, local.WithSizeLimits(sandbox.SizeSmall, small))
	s, err := b.Create(ctx, sandbox.CreateOptions{Size: sandbox.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	cgroups := os.Geteuid() == 0
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		cgroups = false
	}

	cases := []struct {
		name    string
		command string
		timeout time.Duration
		want    sandbox.Ending
		code    int
		signal  int
		skip    bool
	}{
		{"exit", "exit 3", 0, sandbox.EndExited, 3, 0, false},
		{"segfault", `exec python3 -c 'import ctypes; ctypes.string_at(0)'`, 0, sandbox.EndSignaled, 128 + 11, 11, false},
		{"timeout", "sleep 60", time.Second, sandbox.EndTimedOut, -1, 9, false},
		{"oom", `exec python3 -c 'x = b"x" * (1 << 30)'`, 0, sandbox.EndOOM, 128 + 9, 9, !cgroups},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip {
				t.Skip("needs cgroups (root)")
			}
			r, err := s.Exec(ctx, c.command, sandbox.ExecOptions{Timeout: c.timeout})
			if err != nil {
				t.Fatal(err)
			}
			if r.Ending != c.want || r.ExitCode != c.code || r.Signal != c.signal {
				t.Errorf("%q = ending %q, exit %d, signal %d, want %q, %d, %d (%+v)", c.command, r.Ending,
					r.ExitCode, r.Signal, c.want, c.code, c.signal, r)
			}
			if r.OOMKilled != (c.want == sandbox.EndOOM) {
				t.Errorf("OOMKilled = %v", r.OOMKilled)
			}
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		go func() { waitStarted(s); cancel() }()
		r, err := s.Exec(cctx, "touch started; sleep 60", sandbox.ExecOptions{})
		if err == nil || r.Ending != sandbox.EndCancelled {
			t.Errorf("cancelled Exec = %+v, %v, want ending cancelled and an error", r, err)
		}
	})

	// Stop and Delete from another Backend, standing for another process.
	other, err := local.New(local.WithRoot(b.Root()), local.WithReapInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, how := range []sandbox.Ending{sandbox.EndStopped, sandbox.EndDeleted} {
		t.Run(string(how), func(t *testing.T) {
			s2, err := b.Create(ctx, sandbox.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Delete(ctx)
			go func() {
				waitStarted(s2)
				o, err := other.Get(ctx, s2.ID())
				if err != nil {
					t.Error(err)
					return
				}
				if how == sandbox.EndStopped {
					err = o.Stop(ctx)
				} else {
					err = o.Delete(ctx)
				}
				if err != nil {
					t.Error(err)
				}
			}()
			r, err := s2.Exec(ctx, "touch started; sleep 60", sandbox.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Ending != how || r.Signal != int(syscall.SIGKILL) {
				t.Errorf("ending %q, signal %d, want %q, 9", r.Ending, r.Signal, how)
			}
		})
	}
}

// waitStarted waits until the command under test has written "started" in home. Nothing outside the
// sandbox can see the command reach that point but its files, so this polls them.
func waitStarted(s sandbox.Sandbox) {
	for {
		if _, err := s.ReadFile(context.Background(), "started"); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOOMKillerPrefersTheSandbox: a sandbox's processes are the OOM killer's first choice and cannot make
// themselves less so, so when the host runs out of memory they go before the graph process and the zygote.
func TestOOMKillerPrefersTheSandbox(t *testing.T) {
	ctx := context.Background()
	s, err := newBackend(t).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, `cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'; echo 0 > /proc/self/oom_score_adj && echo lowered`, sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "1000\n1000\n" {
		t.Errorf("oom_score_adj in the sandbox: %+v, want 1000 for every process and no way down", r)
	}
}
