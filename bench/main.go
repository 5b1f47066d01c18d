// Command bench builds LangGraph's benchmark workloads in agentgraph and in
// the frameworks a user would pick instead (eino, langgraphgo, LangGraph.js),
// and prints one Markdown table of medians and ratios; then it runs the
// repository's own go test benchmarks, the Agent Server comparison
// (./agentserver) and the Agent Server on several processes, and prints their
// tables: every figure docs/performance.md quotes.
//
// Run it from bench/ (bench/run.sh does): go run . [flags]. It writes the raw
// figures to results.json and the growth check's chart to growth.svg.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		workloadsFlag  = flag.String("workloads", "all", "comma-separated workload names or prefixes (sequential, fanout, react, wide, react_agent_10x, ...)")
		variantsFlag   = flag.String("variants", "none,memory,bolt", "comma-separated savers: none, memory, bolt")
		frameworksFlag = flag.String("frameworks", "all", "comma-separated columns to measure: "+strings.Join(frameworkNames(), ", ")+"; empty to skip the table and the growth check")
		growthFlag     = flag.String("growth", "100,1000", "agent-loop lengths for the growth check; empty to skip")
		quick          = flag.Bool("quick", false, "short runs (0.2 s or 3 runs a cell) and a 100/300-turn growth check")
		target         = flag.Duration("target", time.Second, "repeat each cell until this much time has passed...")
		minRuns        = flag.Int("min-runs", 5, "...and at least this many runs")
		growthBudget   = flag.Duration("growth-budget", 90*time.Second, "stop a growth run still going after this long and report the turns it finished")
		jsonOut        = flag.String("json", "results.json", "where to write the raw results")
		svgOut         = flag.String("svg", "growth.svg", "where to write the growth chart")
		goBenchFlag    = flag.String("gobench", strings.Join(append(goBenchGroups(), serverGroup, clusterGroup), ","), "groups of the repository's go test benchmarks to run too ("+strings.Join(goBenchGroups(), ", ")+"), "+serverGroup+" for the Agent Server beside LangGraph's, "+clusterGroup+" for the Agent Server on several processes; empty to skip")
		goBenchRounds  = flag.Int("gobench-rounds", 5, "how many times to run each go test benchmark (the figure is the median; the longest run once)")
	)
	flag.Parse()

	p := plan{Target: *target, MinRuns: *minRuns, GrowthBudget: *growthBudget}
	if *quick {
		p.Target, p.MinRuns = min(p.Target, 200*time.Millisecond), min(p.MinRuns, 3)
		if !flagSet("growth") {
			*growthFlag = "100,300"
		}
		if !flagSet("growth-budget") {
			p.GrowthBudget = 20 * time.Second
		}
		if !flagSet("gobench-rounds") {
			*goBenchRounds = 1
		}
	}
	var err error
	if p.Workloads, err = pickWorkloads(*workloadsFlag); err != nil {
		return err
	}
	for _, v := range splitList(*variantsFlag) {
		switch Variant(v) {
		case NoSaver, MemorySaver, BoltSaver:
			p.Variants = append(p.Variants, Variant(v))
		default:
			return fmt.Errorf("unknown variant %q: use none, memory or bolt", v)
		}
	}
	for _, s := range splitList(*growthFlag) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-growth %q: want positive turn counts like 100,1000", *growthFlag)
		}
		p.Growth = append(p.Growth, n)
	}
	groups := splitList(*goBenchFlag)
	known := append(goBenchGroups(), serverGroup, clusterGroup)
	for _, g := range groups {
		if !slices.Contains(known, g) {
			return fmt.Errorf("unknown -gobench group %q: pick from %s", g, strings.Join(known, ", "))
		}
	}
	names := frameworkNames()
	if *frameworksFlag != "all" {
		names = splitList(*frameworksFlag)
		for _, n := range names {
			if _, ok := frameworks[n]; !ok {
				return fmt.Errorf("unknown framework %q: pick from %s", n, strings.Join(frameworkNames(), ", "))
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	rep := report{Machine: machine(), Started: time.Now().UTC().Format(time.RFC3339), Plan: planInfo(p, *quick)}
	rep.Machine["loadavg_start"] = loadavg()
	for _, name := range names {
		f := frameworks[name]
		if sm, ok := f.(selfMeasurer); ok {
			res, grows, err := sm.measure(ctx, p)
			rep.Results = append(rep.Results, res...)
			rep.Growth = append(rep.Growth, grows...)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				rep.Errors = append(rep.Errors, err.Error())
			}
			continue
		}
		for _, w := range p.Workloads {
			for _, v := range p.Variants {
				progress(name, w.Name, string(v))
				rep.Results = append(rep.Results, measureCell(ctx, f, w, v, p))
			}
		}
		for _, turns := range p.Growth {
			progress(name, "growth", strconv.Itoa(turns))
			rep.Growth = append(rep.Growth, measureGrowthMedian(ctx, f, turns, p))
		}
	}
	if slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(goBenchGroups(), g) }) && ctx.Err() == nil {
		res, errs := runGoBenches(ctx, groups, max(1, *goBenchRounds), *quick)
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, "bench:", err)
			rep.Errors = append(rep.Errors, err.Error())
		}
		rep.GoBench = res
		reportSkips(res)
	}
	if slices.Contains(groups, serverGroup) && ctx.Err() == nil {
		res, err := runServerBench(ctx, *quick)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			rep.Errors = append(rep.Errors, err.Error())
		}
		if res.Skipped != "" {
			fmt.Fprintln(os.Stderr, "bench: the Agent Server comparison skipped:", res.Skipped)
		}
		if err == nil {
			rep.Server = &res
		}
	}
	if slices.Contains(groups, clusterGroup) && ctx.Err() == nil {
		count := 3
		if *quick {
			count = 1
		}
		res, err := runClusterBench(ctx, count)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			rep.Errors = append(rep.Errors, err.Error())
		}
		if res.Skipped != "" {
			fmt.Fprintln(os.Stderr, "bench: the Agent Server on several processes skipped:", res.Skipped)
		}
		if err == nil {
			rep.Cluster = &res
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}

	rep.Machine["loadavg_end"] = loadavg()
	fmt.Print(rep.markdown(p, names))
	fmt.Print(goBenchMarkdown(rep.GoBench))
	fmt.Print(serverMarkdown(rep.Server))
	fmt.Print(clusterMarkdown(rep.Cluster))
	fmt.Print(rep.errorsMarkdown())
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if len(rep.Growth) > 0 {
		if err := os.WriteFile(*svgOut, []byte(growthSVG(rep.Growth, names)), 0o644); err != nil {
			return fmt.Errorf("writing growth chart: %w", err)
		}
	}
	return nil
}

// pickWorkloads resolves -workloads: "all", or names and name prefixes.
func pickWorkloads(s string) ([]Workload, error) {
	if s == "all" {
		return allWorkloads, nil
	}
	var out []Workload
	seen := map[string]bool{}
	for _, want := range splitList(s) {
		exact := slices.ContainsFunc(allWorkloads, func(w Workload) bool { return w.Name == want })
		found := false
		for _, w := range allWorkloads {
			if w.Name == want || !exact && strings.HasPrefix(w.Name, want) {
				found = true
				if !seen[w.Name] {
					seen[w.Name] = true
					out = append(out, w)
				}
			}
		}
		if !found {
			var all []string
			for _, w := range allWorkloads {
				all = append(all, w.Name)
			}
			return nil, fmt.Errorf("no workload matches %q: pick from %s", want, strings.Join(all, ", "))
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func progress(framework, workload, variant string) {
	fmt.Fprintf(os.Stderr, "  %-12s %-26s %s\n", framework, workload, variant)
}

// machine describes where the figures were taken.
func machine() map[string]string {
	m := map[string]string{
		"go":         runtime.Version(),
		"os":         runtime.GOOS + "/" + runtime.GOARCH,
		"cpus":       strconv.Itoa(runtime.NumCPU()),
		"gomaxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)),
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m["node"] = strings.TrimSpace(string(out))
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadavg is the 1-, 5- and 15-minute load average: figures taken while other
// work kept the CPUs busy are not comparable with quiet ones.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func planInfo(p plan, quick bool) map[string]any {
	return map[string]any{"target_ms": p.Target.Milliseconds(), "min_runs": p.MinRuns, "growth_turns": p.Growth,
		"growth_budget_ms": p.GrowthBudget.Milliseconds(), "quick": quick}
}
