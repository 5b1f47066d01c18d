//go:build linux

package local_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	be := newBackend(b)
	var made []sandbox.Sandbox
	for b.Loop() {
		s, err := be.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		made = append(made, s)
	}
	b.StopTimer()
	for _, s := range made {
		s.Delete(ctx)
	}
}

func benchExec(b *testing.B, command string, opts ...local.Option) {
	ctx := context.Background()
	s, err := newBackend(b, opts...).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Delete(ctx)
	// The backend's first command starts its zygote (tens of milliseconds); the loop measures the others.
	if _, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); err != nil {
		b.Fatal(err)
	}
	var each []float64
	for b.Loop() {
		t0 := time.Now()
		r, err := s.Exec(ctx, command, sandbox.ExecOptions{})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%+v, %v", r, err)
		}
		each = append(each, float64(time.Since(t0))/1e6)
	}
	// The mean (ns/op) takes in the slowest execs of a shared machine; the median is the typical one.
	b.ReportMetric(median(each), "median-ms")
}

// BenchmarkExecPythonPass is the hardened path; BenchmarkBarePythonPass the same interpreter run bare.
func BenchmarkExecPythonPass(b *testing.B) { benchExec(b, "python3 -c pass") }

func BenchmarkExecPythonPassRlimits(b *testing.B) {
	benchExec(b, "python3 -c pass", local.WithoutCgroups())
}

func BenchmarkExecTrue(b *testing.B) { benchExec(b, "true") }

func BenchmarkBarePythonPass(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/usr/bin/python3", "-I", "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrent100x10 runs 10 commands in each of 100 sandboxes, all 1000 at once, checks every
// result, deletes the sandboxes and checks nothing of theirs is left.
func BenchmarkConcurrent100x10(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	be := newBackend(b, local.WithRoot(root))
	boxes := make([]sandbox.Sandbox, 100)
	for i := range boxes {
		s, err := be.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		boxes[i] = s
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for i, s := range boxes {
			for j := range 10 {
				wg.Go(func() {
					want := fmt.Sprintf("%d.%d", i, j)
					r, err := s.Exec(ctx, "python3 -c 'import sys; print(sys.argv[1])' "+want, sandbox.ExecOptions{Timeout: 600e9})
					if err != nil || r.ExitCode != 0 || r.Stdout != want+"\n" {
						b.Errorf("%+v, %v", r, err)
					}
				})
			}
		}
		wg.Wait()
	}
	b.StopTimer()
	for _, s := range boxes {
		if err := s.Delete(ctx); err != nil {
			b.Error(err)
		}
	}
	be.Close()
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		b.Errorf("root still holds %d entries", len(entries))
	}
	if l := loopDevicesUnder(root); len(l) != 0 {
		b.Errorf("loop devices remain: %v", l)
	}
	if m := mountsUnder(b, root); len(m) != 0 {
		b.Errorf("mounts remain: %v", m)
	}
	if procs := helperProcesses(b); len(procs) > 0 {
		b.Errorf("processes remain: %v", procs)
	}
}

// BenchmarkPythonOverhead alternates a bare and a sandboxed `python3 -c pass`, so both see the same machine
// load, and reports the medians and the median of the per-pair difference, plus the mean CPU time of each.
func BenchmarkPythonOverhead(b *testing.B) {
	ctx := context.Background()
	s, err := newBackend(b).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Delete(ctx)
	if _, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); err != nil { // starts the zygote
		b.Fatal(err)
	}
	zyg := zygotePid(b)
	var bare, boxed, diff []float64
	var cpuBare, cpuBoxed time.Duration
	for b.Loop() {
		c0, z0 := childCPU(), procChildCPU(zyg)
		t0 := time.Now()
		if err := exec.Command("/usr/bin/python3", "-I", "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if r, err := s.Exec(ctx, "python3 -c pass", sandbox.ExecOptions{}); err != nil || r.ExitCode != 0 {
			b.Fatalf("%+v, %v", r, err)
		}
		t2 := time.Now()
		cpuBare += childCPU() - c0
		cpuBoxed += procChildCPU(zyg) - z0
		bare = append(bare, float64(t1.Sub(t0))/1e6)
		boxed = append(boxed, float64(t2.Sub(t1))/1e6)
		diff = append(diff, float64(t2.Sub(t1)-t1.Sub(t0))/1e6)
	}
	b.ReportMetric(median(bare), "bare-ms")
	b.ReportMetric(median(boxed), "sandboxed-ms")
	b.ReportMetric(median(diff), "overhead-ms")
	// CPU time of the child processes, which a loaded machine inflates far less than wall time.
	b.ReportMetric(float64(cpuBare)/1e6/float64(len(bare)), "bare-cpu-ms")
	b.ReportMetric(float64(cpuBoxed)/1e6/float64(len(bare)), "sandboxed-cpu-ms")
}

// childCPU is the user+system CPU time of all reaped children so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// zygotePid finds the backend's zygote among this process's children.
func zygotePid(b *testing.B) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(cmdline), "agentgraph-sandbox-zygote") && ppid(pid) == os.Getpid() {
			return pid
		}
	}
	b.Fatal("no zygote process")
	return 0
}

func ppid(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// statFields returns /proc/<pid>/stat after the command name: state, ppid, ...
func statFields(pid int) []string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(data)
	i := strings.LastIndex(s, ") ")
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+2:])
}

// procChildCPU is the CPU time of pid's reaped children (cutime + cstime, in 100 Hz ticks).
func procChildCPU(pid int) time.Duration {
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	cu, _ := strconv.Atoi(f[13])
	cs, _ := strconv.Atoi(f[14])
	return time.Duration(cu+cs) * 10 * time.Millisecond
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
