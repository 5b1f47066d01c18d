//go:build linux

package local_test

import (
	"context"
	"os/exec"
	"slices"
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
	for b.Loop() {
		r, err := s.Exec(ctx, command, sandbox.ExecOptions{})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%+v, %v", r, err)
		}
	}
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

// BenchmarkConcurrent100x10 runs 10 commands in each of 100 sandboxes, all 1000 at once.
func BenchmarkConcurrent100x10(b *testing.B) {
	ctx := context.Background()
	be := newBackend(b)
	boxes := make([]sandbox.Sandbox, 100)
	for i := range boxes {
		s, err := be.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		boxes[i] = s
		defer s.Delete(ctx)
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for _, s := range boxes {
			for range 10 {
				wg.Go(func() {
					r, err := s.Exec(ctx, "python3 -c pass", sandbox.ExecOptions{Timeout: 600e9})
					if err != nil || r.ExitCode != 0 {
						b.Errorf("%+v, %v", r, err)
					}
				})
			}
		}
		wg.Wait()
	}
}

// BenchmarkPythonOverhead alternates a bare and a sandboxed `python3 -c pass`, so both see the same machine
// load, and reports the medians and the median of the per-pair difference.
func BenchmarkPythonOverhead(b *testing.B) {
	ctx := context.Background()
	s, err := newBackend(b).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Delete(ctx)
	var bare, boxed, diff, cpuBare, cpuBoxed []float64
	for b.Loop() {
		c0 := childCPU()
		t0 := time.Now()
		if err := exec.Command("/usr/bin/python3", "-I", "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		c1 := childCPU()
		if r, err := s.Exec(ctx, "python3 -c pass", sandbox.ExecOptions{}); err != nil || r.ExitCode != 0 {
			b.Fatalf("%+v, %v", r, err)
		}
		t2 := time.Now()
		c2 := childCPU()
		bare = append(bare, float64(t1.Sub(t0))/1e6)
		boxed = append(boxed, float64(t2.Sub(t1))/1e6)
		diff = append(diff, float64(t2.Sub(t1)-t1.Sub(t0))/1e6)
		cpuBare = append(cpuBare, float64(c1-c0)/1e6)
		cpuBoxed = append(cpuBoxed, float64(c2-c1)/1e6)
	}
	b.ReportMetric(median(bare), "bare-ms")
	b.ReportMetric(median(boxed), "sandboxed-ms")
	b.ReportMetric(median(diff), "overhead-ms")
	// CPU time of the child processes, which a loaded machine inflates far less than wall time.
	b.ReportMetric(median(cpuBare), "bare-cpu-ms")
	b.ReportMetric(median(cpuBoxed), "sandboxed-cpu-ms")
}

// childCPU is the user+system CPU time of all reaped children so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
