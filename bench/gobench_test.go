package main

import (
	"slices"
	"strings"
	"testing"
)

func TestReadBenchOutputSkips(t *testing.T) {
	out := []byte(strings.Join([]string{
		"goos: linux",
		"BenchmarkPut",
		"    pgtest.go:95: pgtest: no PostgreSQL: initdb not found",
		"--- SKIP: BenchmarkPut",
		"BenchmarkPythonOverhead",
		"BenchmarkPythonOverhead-2 \t      30\t  41000000 ns/op\t        11.30 bare-ms\t         6.500 overhead-ms\t        17.40 sandboxed-ms",
		"BenchmarkExecBesideLocal",
		"BenchmarkExecBesideLocal/true/systrap",
		"    bench_test.go:40: platform systrap: sandbox: unsupported",
		"--- SKIP: BenchmarkExecBesideLocal/true/systrap",
		"--- SKIP: BenchmarkOld",
		"    old_test.go:3: as root only",
		"PASS",
	}, "\n"))
	bo := readBenchOutput(out)
	if want := []string{"Put", "PythonOverhead", "ExecBesideLocal/true/systrap", "Old"}; !slices.Equal(bo.Names, want) {
		t.Errorf("names %q, want %q", bo.Names, want)
	}
	for name, want := range map[string]string{
		"Put":                          "pgtest: no PostgreSQL: initdb not found",
		"ExecBesideLocal/true/systrap": "platform systrap: sandbox: unsupported",
		"Old":                          "as root only",
	} {
		if got := bo.Skipped[name]; got != want {
			t.Errorf("%s skipped for %q, want %q", name, got, want)
		}
	}
	if m := bo.Metrics["PythonOverhead"]; m["overhead-ms"] != 6.5 || m["bare-ms"] != 11.3 || m["sandboxed-ms"] != 17.4 || m["ns/op"] != 41e6 {
		t.Errorf("custom metrics: %v", m)
	}
	if len(bo.Metrics) != 1 {
		t.Errorf("metrics of %d benchmarks, want 1: %v", len(bo.Metrics), bo.Metrics)
	}
}
