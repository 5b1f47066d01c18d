package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// goBench is one `go test -bench` command over a package of this
// repository: the benchmarks behind the engine's, the savers' and the
// prebuilt agents' figures in docs/performance.md.
type goBench struct {
	Group     string // a name for -gobench: engine, savers, prebuilt
	Package   string // relative to the repository root
	Pattern   string
	Benchtime string // "" for go test's default
}

var goBenches = []goBench{
	{"engine", "./graph/", "Chain1000|Fanout100|AgentLoop100$|Wide100", ""},
	{"savers", "./graph/", "AgentLoopSaver", ""},
	{"savers", "./graph/", "Growth|ResumeCold", "3x"},
	{"savers", "./graph/", "BoltFileSize", "1x"},
	{"savers", "./checkpoint/", ".", ""},
	{"savers", "./checkpoint/bolt/", ".", ""},
	{"prebuilt", "./prebuilt/", ".", ""},
}

// GoBenchResult is the median of each metric of one benchmark over the
// rounds it ran in.
type GoBenchResult struct {
	Package string             `json:"package"`
	Name    string             `json:"name"`
	Runs    int                `json:"n"`
	Metrics map[string]float64 `json:"metrics"` // unit → median, e.g. "ns/op"
}

// runGoBenches runs the chosen commands rounds times, one round after the
// other (so every benchmark's runs are spread over the whole measurement,
// as the table's cells are), and returns the medians.
func runGoBenches(ctx context.Context, groups []string, rounds int) ([]GoBenchResult, error) {
	type key struct{ pkg, name string }
	samples := map[key][]map[string]float64{}
	var order []key
	for round := range rounds {
		for _, gb := range goBenches {
			if !slices.Contains(groups, gb.Group) {
				continue
			}
			progress("go test", gb.Package+" "+gb.Pattern, fmt.Sprintf("round %d of %d", round+1, rounds))
			args := []string{"test", "-run", "^$", "-bench", gb.Pattern, "-benchmem", "-count", "1"}
			if gb.Benchtime != "" {
				args = append(args, "-benchtime", gb.Benchtime)
			}
			cmd := exec.CommandContext(ctx, "go", append(args, gb.Package)...)
			cmd.Dir = ".."
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, out)
			}
			for name, m := range parseBenchOutput(out) {
				k := key{gb.Package, name}
				if samples[k] == nil {
					order = append(order, k)
				}
				samples[k] = append(samples[k], m)
			}
		}
	}
	var res []GoBenchResult
	for _, k := range order {
		r := GoBenchResult{Package: k.pkg, Name: k.name, Runs: len(samples[k]), Metrics: map[string]float64{}}
		units := map[string]bool{}
		for _, m := range samples[k] {
			for u := range m {
				units[u] = true
			}
		}
		for u := range units {
			var vs []float64
			for _, m := range samples[k] {
				if v, ok := m[u]; ok {
					vs = append(vs, v)
				}
			}
			r.Metrics[u] = median(vs)
		}
		res = append(res, r)
	}
	return res, nil
}

// parseBenchOutput reads the result lines of go test -bench: a name with
// its -GOMAXPROCS suffix, the iteration count, then value and unit pairs.
func parseBenchOutput(out []byte) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			m[f[i+1]] = v
		}
		res[name] = m
	}
	return res
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// goBenchMarkdown renders the go test figures: one table per package.
func goBenchMarkdown(rs []GoBenchResult) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## go test benchmarks (median of each metric over the rounds)\n")
	pkg := ""
	for _, r := range rs {
		if r.Package != pkg {
			pkg = r.Package
			fmt.Fprintf(&b, "\n%s\n\n| benchmark | runs | time | other metrics |\n|---|---:|---:|---|\n", pkg)
		}
		var other []string
		var units []string
		for u := range r.Metrics {
			if u != "ns/op" {
				units = append(units, u)
			}
		}
		slices.Sort(units)
		for _, u := range units {
			other = append(other, strconv.FormatFloat(r.Metrics[u], 'g', 4, 64)+" "+u)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", r.Name, r.Runs, durText(r.Metrics["ns/op"]/1e6), strings.Join(other, ", "))
	}
	return b.String()
}
