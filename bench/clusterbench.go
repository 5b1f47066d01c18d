package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// clusterGroup is the -gobench group that measures the Agent Server on
// several processes sharing one PostgreSQL (server/clustertest).
const clusterGroup = "cluster"

// ClusterResult is the runs per second of 1, 2 and 4 server processes.
type ClusterResult struct {
	Command string       `json:"command"` // reproduces the figures, from the repository root
	Rows    []ClusterRow `json:"rows,omitempty"`
	Skipped string       `json:"skipped,omitempty"`
}

// ClusterRow is one number of server processes: runs per second of each
// run of the test, and their median.
type ClusterRow struct {
	Processes int       `json:"processes"`
	RunsPerS  []float64 `json:"runs_per_s"`
	Median    float64   `json:"median_runs_per_s"`
}

// clusterLine is what TestRunsPerSecond logs for each number of processes.
var clusterLine = regexp.MustCompile(`(\d+) server processes: .* ([0-9.]+) runs/s$`)

// runClusterBench runs TestRunsPerSecond count times. It starts a throwaway
// PostgreSQL as the go test benchmarks do, and skips without one.
func runClusterBench(ctx context.Context, count int) (ClusterResult, error) {
	args := []string{"test", "-count", strconv.Itoa(count), "-run", "^TestRunsPerSecond$", "-v", "./server/clustertest/"}
	res := ClusterResult{Command: fmt.Sprintf("AGENTGRAPH_CLUSTERTEST_FIGURES=1 go test -count %d -run '^TestRunsPerSecond$' -v ./server/clustertest/", count)}
	progress("go test", "./server/clustertest/", fmt.Sprintf("TestRunsPerSecond, %d runs", count))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "AGENTGRAPH_CLUSTERTEST_FIGURES=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, lastLines(out, 30))
	}
	var logged []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=== RUN"):
			logged = nil
		case strings.HasPrefix(line, "--- SKIP: TestRunsPerSecond"):
			res.Skipped = strings.Join(logged, "; ")
		case strings.HasPrefix(line, "    "):
			msg := strings.TrimSpace(line)
			if file, after, ok := strings.Cut(msg, ": "); ok && strings.Contains(file, ".go:") {
				msg = after
			}
			logged = append(logged, msg)
			m := clusterLine.FindStringSubmatch(msg)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseFloat(m[2], 64)
			i := slices.IndexFunc(res.Rows, func(r ClusterRow) bool { return r.Processes == n })
			if i < 0 {
				res.Rows = append(res.Rows, ClusterRow{Processes: n})
				i = len(res.Rows) - 1
			}
			res.Rows[i].RunsPerS = append(res.Rows[i].RunsPerS, v)
		}
	}
	for i := range res.Rows {
		res.Rows[i].Median = median(res.Rows[i].RunsPerS)
	}
	if len(res.Rows) == 0 && res.Skipped == "" {
		return res, fmt.Errorf("go %s reported no runs per second", strings.Join(args, " "))
	}
	return res, nil
}

func clusterMarkdown(r *ClusterResult) string {
	if r == nil {
		return ""
	}
	b := section("The Agent Server on several processes sharing one PostgreSQL", r.Command, r.Skipped)
	if r.Skipped != "" {
		return b.String()
	}
	b.WriteString("| server processes | runs/s, each run | median |\n|---:|---|---:|\n")
	for _, row := range r.Rows {
		var each []string
		for _, v := range row.RunsPerS {
			each = append(each, strconv.FormatFloat(v, 'f', 0, 64))
		}
		fmt.Fprintf(b, "| %d | %s | %.0f |\n", row.Processes, strings.Join(each, ", "), row.Median)
	}
	return b.String()
}
