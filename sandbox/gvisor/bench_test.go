//go:build linux

package gvisor_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/gvisor"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// BenchmarkExecBesideLocal alternates one command bare, in a local sandbox and in a gVisor sandbox, so all
// three see the same machine load, and reports the median of each, of gVisor's cost over the local
// backend's, and the load average before and after. Sub-benchmarks name the command and runsc's platform.
func BenchmarkExecBesideLocal(b *testing.B) {
	for _, platform := range []string{"ptrace", "systrap"} {
		for _, c := range []struct{ name, command string }{{"true", "true"}, {"python", "python3 -c pass"}} {
			b.Run(c.name+"/"+platform, func(b *testing.B) { benchBeside(b, c.command, platform) })
		}
	}
}

func benchBeside(b *testing.B, command, platform string) {
	ctx := context.Background()
	gv := newBackend(b, gvisor.WithPlatform(platform))
	gs, err := gv.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer gs.Delete(ctx)
	if _, err := gs.Exec(ctx, "true", sandbox.ExecOptions{}); errors.Is(err, sandbox.ErrUnsupported) {
		b.Skipf("platform %s: %v", platform, err)
	} else if err != nil {
		b.Fatal(err)
	}
	lb, err := local.New(local.WithRoot(b.TempDir()), local.WithReapInterval(-1))
	if err != nil {
		b.Fatal(err)
	}
	defer lb.Close()
	ls, err := lb.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer ls.Delete(ctx)
	if _, err := ls.Exec(ctx, "true", sandbox.ExecOptions{}); err != nil { // starts its zygote
		b.Fatal(err)
	}
	bare := strings.Replace(command, "python3", "/usr/bin/python3 -I", 1)
	load0 := loadavg()
	var tBare, tLocal, tGvisor, tOver []float64
	run := func(s sandbox.Sandbox) float64 {
		t0 := time.Now()
		if r, err := s.Exec(ctx, command, sandbox.ExecOptions{}); err != nil || r.ExitCode != 0 {
			b.Fatalf("%+v, %v", r, err)
		}
		return float64(time.Since(t0)) / 1e6
	}
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command("/bin/sh", "-c", bare).Run(); err != nil {
			b.Fatal(err)
		}
		tBare = append(tBare, float64(time.Since(t0))/1e6)
		l, g := run(ls), run(gs)
		tLocal, tGvisor, tOver = append(tLocal, l), append(tGvisor, g), append(tOver, g-l)
	}
	b.ReportMetric(median(tBare), "bare-ms")
	b.ReportMetric(median(tLocal), "local-ms")
	b.ReportMetric(median(tGvisor), "gvisor-ms")
	b.ReportMetric(median(tOver), "gvisor-over-local-ms")
	b.ReportMetric(load0, "load-before")
	b.ReportMetric(loadavg(), "load-after")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// loadavg is the one-minute load average.
func loadavg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
