package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// goBench is one `go test -bench` command over a package of this
// repository: the benchmarks behind the engine's, the savers', the prebuilt
// agents', PostgreSQL's and the sandbox's figures in docs/performance.md.
type goBench struct {
	Group     string // a name for -gobench: engine, savers, prebuilt, postgres, sandbox
	Package   string // relative to the repository root
	Pattern   string
	Benchtime string // "" for go test's default, or 0.2 s with -quick
	// Rounds caps how many of the rounds the command runs in, for
	// benchmarks long enough that one run is the figure; 0 for all.
	Rounds int
}

var goBenches = []goBench{
	{"engine", "./graph/", "Chain1000|Fanout100|AgentLoop100$|Wide100|Pairs100", "", 0},
	{"savers", "./graph/", "AgentLoopSaver", "", 0},
	{"savers", "./graph/", "Growth|ResumeCold", "3x", 0},
	{"savers", "./graph/", "BoltFileSize", "1x", 0},
	{"savers", "./checkpoint/", ".", "", 0},
	{"savers", "./checkpoint/bolt/", ".", "", 0},
	{"prebuilt", "./prebuilt/", ".", "", 0},
	// They start a throwaway server of their own (internal/pgtest) unless
	// AGENTGRAPH_TEST_POSTGRES names one, and skip without PostgreSQL.
	{"postgres", "./checkpoint/postgres/", ".", "", 0},
	// As root only; the gVisor one also needs runsc (AGENTGRAPH_RUNSC may
	// name a newer one than $PATH's). Both skip otherwise.
	{"sandbox", "./sandbox/local/", "PythonOverhead|ExecTrue$|ExecPythonPass$|Create$", "30x", 0},
	{"sandbox", "./sandbox/gvisor/", "ExecBesideLocal", "20x", 1},
	// Last: a thousand commands at once leave the machine loaded for a while.
	{"sandbox", "./sandbox/local/", "Concurrent100x10", "1x", 1},
}

// goBenchGroups are the groups of goBenches, in order.
func goBenchGroups() []string {
	var gs []string
	for _, gb := range goBenches {
		if !slices.Contains(gs, gb.Group) {
			gs = append(gs, gb.Group)
		}
	}
	return gs
}

// rounds is how many of n rounds the command runs in.
func (gb goBench) rounds(n int) int {
	if gb.Rounds > 0 {
		return min(gb.Rounds, n)
	}
	return n
}

func (gb goBench) benchtime(quick bool) string {
	if gb.Benchtime == "" && quick {
		return "200ms"
	}
	return gb.Benchtime
}

// command is the go test command line, run from the repository root, that
// reproduces the command's figures in one go: count is the number of rounds.
func (gb goBench) command(count int, quick bool) string {
	c := "go test -run '^$' -bench '" + gb.Pattern + "' -benchmem"
	if bt := gb.benchtime(quick); bt != "" {
		c += " -benchtime " + bt
	}
	if count > 1 {
		c += " -count " + strconv.Itoa(count)
	}
	return c + " " + gb.Package
}

// GoBenchResult is the median of each metric of one benchmark over the
// rounds it ran in.
type GoBenchResult struct {
	Group   string             `json:"group"`
	Command string             `json:"command"` // reproduces the figures, from the repository root
	Package string             `json:"package"`
	Name    string             `json:"name"`
	Runs    int                `json:"n"`
	Metrics map[string]float64 `json:"metrics"` // unit → median, e.g. "ns/op"
	// Skipped is why the benchmark skipped itself, in the rounds it did
	// (without PostgreSQL, as non-root, without runsc).
	Skipped string `json:"skipped,omitempty"`
}

// runGoBenches runs the chosen commands rounds times, one round after the
// other (so every benchmark's runs are spread over the whole measurement,
// as the table's cells are), and returns the medians. A command that fails
// is reported and left out of the later rounds, with the figures of what it
// finished; the others go on.
func runGoBenches(ctx context.Context, groups []string, rounds int, quick bool) ([]GoBenchResult, []error) {
	type key struct {
		entry int
		name  string
	}
	samples := map[key][]map[string]float64{}
	skipped := map[key]string{}
	var order []key
	var errs []error
	failed := map[int]bool{}
	for round := range rounds {
		for i, gb := range goBenches {
			if !slices.Contains(groups, gb.Group) || round >= gb.rounds(rounds) || failed[i] {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			progress("go test", gb.Package+" "+gb.Pattern, fmt.Sprintf("round %d of %d", round+1, gb.rounds(rounds)))
			// -v, for the reasons of benchmarks that skip.
			args := []string{"test", "-v", "-run", "^$", "-bench", gb.Pattern, "-benchmem", "-count", "1"}
			if bt := gb.benchtime(quick); bt != "" {
				args = append(args, "-benchtime", bt)
			}
			cmd := exec.CommandContext(ctx, "go", append(args, gb.Package)...)
			cmd.Dir = ".."
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				// The benchmarks that finished before the failure still count.
				failed[i] = true
				errs = append(errs, fmt.Errorf("go %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, lastLines(out, 30)))
			}
			bo := readBenchOutput(out)
			for _, name := range bo.Names {
				k := key{i, name}
				_, ran := samples[k]
				_, skip := skipped[k]
				if !ran && !skip {
					order = append(order, k)
				}
				if m, ok := bo.Metrics[name]; ok {
					samples[k] = append(samples[k], m)
				}
				if why, ok := bo.Skipped[name]; ok {
					skipped[k] = why
				}
			}
		}
	}
	var res []GoBenchResult
	for _, k := range order {
		gb := goBenches[k.entry]
		r := GoBenchResult{Group: gb.Group, Command: gb.command(gb.rounds(rounds), quick), Package: gb.Package, Name: k.name,
			Runs: len(samples[k]), Metrics: map[string]float64{}, Skipped: skipped[k]}
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
	return res, errs
}

// parseBenchOutput reads the result lines of go test -bench: a name with
// its -GOMAXPROCS suffix, the iteration count, then value and unit pairs.
func parseBenchOutput(out []byte) map[string]map[string]float64 {
	return readBenchOutput(out).Metrics
}

// benchOutput is what the output of go test -v -bench says.
type benchOutput struct {
	Names   []string                      // benchmarks that ran or skipped, in order
	Metrics map[string]map[string]float64 // name → unit → value
	Skipped map[string]string             // name → the reason it logged
}

// readBenchOutput reads result lines and, from -v output, the benchmarks
// that skipped: the lines a benchmark logs come after its name and before
// its "--- SKIP: name".
func readBenchOutput(out []byte) benchOutput {
	bo := benchOutput{Metrics: map[string]map[string]float64{}, Skipped: map[string]string{}}
	add := func(name string) {
		if !slices.Contains(bo.Names, name) {
			bo.Names = append(bo.Names, name)
		}
	}
	var logged []string // since the last benchmark's name
	skip := ""          // the benchmark whose SKIP line came last
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "--- SKIP: Benchmark"); ok && rest != "" {
			skip = strings.Fields(rest)[0]
			add(skip)
			bo.Skipped[skip] = strings.Join(logged, "; ")
			logged = nil
			continue
		}
		if strings.HasPrefix(line, "    ") {
			// "    file_test.go:12: message"
			msg := strings.TrimSpace(line)
			if file, after, ok := strings.Cut(msg, ": "); ok && strings.Contains(file, ".go:") {
				msg = after
			}
			if skip != "" {
				// The message under the SKIP line, as older releases print it.
				bo.Skipped[skip] = strings.TrimPrefix(bo.Skipped[skip]+"; "+msg, "; ")
			} else {
				logged = append(logged, msg)
			}
			continue
		}
		skip = ""
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		logged = nil
		if len(f) < 4 {
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
		add(name)
		bo.Metrics[name] = m
	}
	return bo
}

// reportSkips says on stderr which benchmarks skipped and why, once per
// package and reason.
func reportSkips(rs []GoBenchResult) {
	type key struct{ pkg, why string }
	var order []key
	names := map[key][]string{}
	for _, r := range rs {
		if r.Skipped == "" {
			continue
		}
		k := key{r.Package, r.Skipped}
		if names[k] == nil {
			order = append(order, k)
		}
		names[k] = append(names[k], r.Name)
	}
	for _, k := range order {
		fmt.Fprintf(os.Stderr, "bench: %s %s skipped: %s\n", k.pkg, strings.Join(names[k], ", "), k.why)
	}
}

// lastLines is the end of a command's output, enough to show why it failed.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// goBenchMarkdown renders the go test figures: a table per command, under
// the command that reproduces it.
func goBenchMarkdown(rs []GoBenchResult) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## go test benchmarks (median of each metric over the rounds)\n")
	group, command, lastSkip := "", "", ""
	for _, r := range rs {
		if r.Group != group {
			group = r.Group
			fmt.Fprintf(&b, "\n### %s\n", group)
		}
		if r.Command != command {
			command, lastSkip = r.Command, ""
			fmt.Fprintf(&b, "\n    %s\n\n| benchmark | runs | time | other metrics |\n|---|---:|---:|---|\n", command)
		}
		if r.Runs == 0 {
			why := strings.ReplaceAll(r.Skipped, "|", "/")
			if r.Skipped == lastSkip {
				why = "as above"
			}
			lastSkip = r.Skipped
			fmt.Fprintf(&b, "| %s | 0 | skipped | %s |\n", r.Name, why)
			continue
		}
		lastSkip = ""
		var units []string
		for u := range r.Metrics {
			if u != "ns/op" {
				units = append(units, u)
			}
		}
		slices.Sort(units)
		var other []string
		for _, u := range units {
			other = append(other, metricText(r.Metrics[u])+" "+u)
		}
		if r.Skipped != "" {
			other = append(other, "skipped in some rounds: "+strings.ReplaceAll(r.Skipped, "|", "/"))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", r.Name, r.Runs, durText(r.Metrics["ns/op"]/1e6), strings.Join(other, ", "))
	}
	return b.String()
}

// metricText prints whole numbers (bytes, allocations) in full and others
// with four significant digits.
func metricText(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
