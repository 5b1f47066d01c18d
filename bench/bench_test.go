package main

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inProcess are the frameworks measured in this process.
func inProcess(t testing.TB) []Framework {
	t.Helper()
	var fs []Framework
	for _, n := range frameworkNames() {
		if _, self := frameworks[n].(selfMeasurer); !self {
			fs = append(fs, frameworks[n])
		}
	}
	return fs
}

// Every cell a Go framework accepts must do what the workload asks: run each
// once and compare its check value with the workload's.
func TestCellsComputeTheWorkload(t *testing.T) {
	ctx := context.Background()
	for _, f := range inProcess(t) {
		for _, w := range allWorkloads {
			for _, v := range allVariants {
				t.Run(f.Name()+"/"+w.Name+"/"+string(v), func(t *testing.T) {
					run, err := f.Prepare(t.Context(), Cell{Workload: w, Variant: v, Dir: t.TempDir()})
					switch {
					case errors.Is(err, ErrNotApplicable):
						if strings.TrimPrefix(err.Error(), "n/a: ") == "" {
							t.Fatalf("n/a without a reason")
						}
						t.Skip(err)
					case errors.Is(err, ErrNotYet):
						t.Skip(err)
					case err != nil:
						t.Fatalf("Prepare: %v", err)
					}
					for range 2 { // a second run must start afresh
						got, err := run(ctx)
						if err != nil {
							t.Fatalf("run: %v", err)
						}
						if got != w.Expect {
							t.Fatalf("check = %d, want %d", got, w.Expect)
						}
					}
				})
			}
		}
	}
}

func TestWideExpect(t *testing.T) {
	for n, want := range map[int]int{300: 595, 600: 1873, 1200: 1873, 1: 2} {
		if got := wideExpect(n); got != want {
			t.Errorf("wideExpect(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestReactScriptArgumentSize(t *testing.T) {
	s := newReactScript(3)
	if len(s.Queries) != 3 || len(s.CallIDs) != 3 || len(s.MsgIDs) != 4 {
		t.Fatalf("script has %d queries, %d calls, %d messages", len(s.Queries), len(s.CallIDs), len(s.MsgIDs))
	}
	if n := len(s.Queries[0]); n != 3600 {
		t.Errorf("query is %d bytes, want 3600 (a UUID repeated 100 times)", n)
	}
}

func TestGrowthReportsEveryTurn(t *testing.T) {
	f := langgraphgoFramework{}
	p := plan{GrowthBudget: time.Minute}
	g := measureGrowth(context.Background(), f, 20, p)
	if g.Status != statusOK || g.Reached != 20 || len(g.CallMS) != 21 {
		t.Fatalf("growth = %+v, want 20 turns and 21 model calls", g)
	}
	for i := 1; i < len(g.CallMS); i++ {
		if g.CallMS[i] < g.CallMS[i-1] {
			t.Fatalf("call %d starts before call %d", i, i-1)
		}
	}
}

// A short loop runs five times and the report keeps the run of median
// total time; a loop cut short by its budget runs once.
func TestGrowthMedianOfRuns(t *testing.T) {
	g := measureGrowthMedian(context.Background(), langgraphgoFramework{}, 5, plan{GrowthBudget: time.Minute})
	if g.Status != statusOK || g.Runs != growthRuns || g.Reached != 5 || len(g.CallMS) != 6 {
		t.Fatalf("growth = status %s (%s), %d runs, reached %d, %d call times; want %d runs of 5 turns", g.Status, g.Reason, g.Runs, g.Reached, len(g.CallMS), growthRuns)
	}
	g = measureGrowthMedian(context.Background(), langgraphgoFramework{}, 5000, plan{GrowthBudget: 200 * time.Millisecond})
	if g.Stopped == "" || g.Runs != 0 {
		t.Fatalf("growth cut short = stopped %q, %d runs; want one run, reported as is", g.Stopped, g.Runs)
	}
}

func TestGrowthStopsAtTheBudget(t *testing.T) {
	p := plan{GrowthBudget: 300 * time.Millisecond}
	g := measureGrowth(context.Background(), langgraphgoFramework{}, 5000, p)
	if g.Status != statusOK || g.Stopped == "" || g.Reached < 1 || g.Reached >= g.Turns {
		t.Fatalf("growth = status %s (%s), stopped %q, reached %d of %d; want a run cut short", g.Status, g.Reason, g.Stopped, g.Reached, g.Turns)
	}
	if len(g.CallMS) != g.Reached+1 {
		t.Fatalf("%d call times for %d turns", len(g.CallMS), g.Reached)
	}
}

func TestPickWorkloads(t *testing.T) {
	ws, err := pickWorkloads("react,wide_state_9x1200")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.Name)
	}
	if got := strings.Join(names, " "); got != "react_agent_10x react_agent_100x wide_state_9x1200" {
		t.Errorf("picked %s", got)
	}
	if _, err := pickWorkloads("nope"); err == nil || !strings.Contains(err.Error(), "pick from") {
		t.Errorf("unknown workload: err = %v, want one that lists the choices", err)
	}
}

func TestReportAndChart(t *testing.T) {
	p := plan{Workloads: allWorkloads[:1], Variants: []Variant{NoSaver, MemorySaver}, Growth: []int{4}}
	rep := report{
		Machine: map[string]string{"cpu": "test"},
		Results: []Result{
			{Framework: "agentgraph", Workload: "sequential_10", Variant: NoSaver, Status: statusOK, MedianMS: 0.01, PlainMS: 0.002, OverheadMS: 0.008},
			{Framework: "eino", Workload: "sequential_10", Variant: NoSaver, Status: statusOK, MedianMS: 0.05, PlainMS: 0.002, OverheadMS: 0.048},
			{Framework: "langgraphjs", Workload: "sequential_10", Variant: NoSaver, Status: statusOK, MedianMS: 2},
			{Framework: "eino", Workload: "sequential_10", Variant: MemorySaver, Status: statusNA, Reason: "no saver"},
		},
		Growth: []GrowthResult{
			{Framework: "langgraphgo", Turns: 4, Reached: 4, Status: statusOK, TotalMS: 4, CallMS: []float64{0, 1, 2, 3, 4}},
			{Framework: "langgraphjs", Turns: 4, Reached: 2, Stopped: "stopped after 1s", Status: statusOK, TotalMS: 30, CallMS: []float64{0, 10, 30}},
		},
	}
	md := rep.markdown(p, []string{"agentgraph", "eino", "langgraphgo", "langgraphjs"})
	for _, want := range []string{"| sequential_10 | none | 2 µs | 10 µs (8 µs) | 50 µs (48 µs) | | 2 ms | 200× | 5× | 6× |", "| langgraphgo | 1 ms | 1× |", "stopped after 1s at turn 2"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| sequential_10 | memory |") || strings.Contains(md, "no saver") {
		t.Errorf("a row no framework ran is shown:\n%s", md)
	}
	svg := growthSVG(rep.Growth, []string{"langgraphgo", "langgraphjs"})
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("chart has %d lines, want 2", n)
	}
}

// The Node harness, run for real on the smallest cell, must print a result
// line the Go side understands.
func TestLangGraphJSHarness(t *testing.T) {
	if _, err := os.Stat(filepath.Join("node", "node_modules")); err != nil {
		t.Skip("LangGraph.js not installed: run npm ci in bench/node")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	js := frameworks["langgraphjs"].(selfMeasurer)
	w, _ := pickWorkloads("sequential_10")
	res, grows, err := js.measure(context.Background(), plan{Workloads: w, Variants: []Variant{NoSaver, MemorySaver}, Target: time.Millisecond, MinRuns: 1, Growth: []int{2}, GrowthBudget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("got %d cells, want 2: %+v", len(res), res)
	}
	for _, r := range res {
		if r.Status != statusOK || r.Check != 10 || r.Runs < 1 || r.MedianMS <= 0 {
			t.Errorf("cell %+v, want ok with check 10", r)
		}
	}
	if len(grows) != 1 || grows[0].Reached != 2 || len(grows[0].CallMS) != 3 {
		t.Errorf("growth %+v, want 2 turns and 3 model calls", grows)
	}
}

// BenchmarkCells times every in-process cell with the testing package, for
// profiling: go test -bench 'Cells/langgraphgo/react' -cpuprofile cpu.out
// (Cells/plain/... are the plain Go loops the overheads are taken against)
func BenchmarkCells(b *testing.B) {
	ctx := context.Background()
	for _, w := range allWorkloads {
		run, err := plainGo(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("plain/"+w.Name, func(b *testing.B) {
			for b.Loop() {
				if got, err := run(ctx); err != nil || got != w.Expect {
					b.Fatalf("check %d, err %v; want %d", got, err, w.Expect)
				}
			}
		})
	}
	for _, f := range inProcess(b) {
		for _, w := range allWorkloads {
			for _, v := range allVariants {
				run, err := f.Prepare(ctx, Cell{Workload: w, Variant: v, Dir: b.TempDir()})
				if err != nil {
					continue
				}
				b.Run(f.Name()+"/"+w.Name+"/"+string(v), func(b *testing.B) {
					for b.Loop() {
						if got, err := run(ctx); err != nil || got != w.Expect {
							b.Fatalf("check %d, err %v; want %d", got, err, w.Expect)
						}
					}
				})
			}
		}
	}
}

// The plain Go loop of every workload must compute what the workload asks,
// or the overheads taken against it mean nothing.
func TestPlainGoComputesTheWorkload(t *testing.T) {
	for _, w := range allWorkloads {
		run, err := plainGo(w)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		for range 2 {
			if got, err := run(context.Background()); err != nil || got != w.Expect {
				t.Fatalf("%s: check %d, err %v; want %d", w.Name, got, err, w.Expect)
			}
		}
	}
}

func TestDurText(t *testing.T) {
	for ms, want := range map[float64]string{2500: "2.5 s", 3.09: "3.09 ms", 0.177: "177 µs", 0.0004: "400 ns", -0.25: "-250 µs", 0: "0 ns"} {
		if got := durText(ms); got != want {
			t.Errorf("durText(%v) = %q, want %q", ms, got, want)
		}
	}
}

func TestParseBenchOutput(t *testing.T) {
	out := []byte("goos: linux\nBenchmarkGrowth/bolt/sync/turns=100-2   \t       3\t 577400 ns/op\t        577.4 µs/turn\t  922005 B/op\t    5921 allocs/op\nBenchmarkBoltFileSize-2 1 4.5e+09 ns/op 2.097 MB 5.167 file/state\nPASS\n")
	got := parseBenchOutput(out)
	if m := got["Growth/bolt/sync/turns=100"]; m["ns/op"] != 577400 || m["µs/turn"] != 577.4 || m["allocs/op"] != 5921 {
		t.Errorf("growth line: %v", m)
	}
	if m := got["BoltFileSize"]; m["file/state"] != 5.167 || m["ns/op"] != 4.5e9 {
		t.Errorf("file size line: %v", m)
	}
	if len(got) != 2 {
		t.Errorf("parsed %d lines, want 2: %v", len(got), got)
	}
}
