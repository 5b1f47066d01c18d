package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// langgraphjs is the LangGraph.js column: node/run.mjs builds the same
// workloads with @langchain/langgraph and times them itself, one JSON line per
// cell, so this file only runs it and reads its output.
type langgraphjs struct {
	script string // path of run.mjs
}

func init() { register(&langgraphjs{script: filepath.Join("node", "run.mjs")}) }

func (*langgraphjs) Name() string { return "langgraphjs" }

func (*langgraphjs) Prepare(context.Context, Cell) (Runner, error) {
	return nil, errors.New("langgraphjs is measured in its own process")
}

// jsLine is one line printed by run.mjs.
type jsLine struct {
	Workload   string    `json:"workload"`
	Variant    Variant   `json:"variant"`
	Durability string    `json:"durability"`
	N          int       `json:"n"`
	MedianMS   float64   `json:"median_ms"`
	MinMS      float64   `json:"min_ms"`
	Check      int       `json:"check"`
	NA         string    `json:"na"`
	Error      string    `json:"error"`
	Turns      int       `json:"turns"`
	Reached    int       `json:"reached"`
	Stopped    string    `json:"stopped"`
	TotalMS    float64   `json:"total_ms"`
	CallMS     []float64 `json:"call_ms"`
}

func (j *langgraphjs) measure(ctx context.Context, p plan) ([]Result, []GrowthResult, error) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(j.script), "node_modules")); err != nil {
		return nil, nil, fmt.Errorf("LangGraph.js is not installed: run npm ci in %s (bench/run.sh does): %w", filepath.Dir(j.script), err)
	}
	var names, variants, growth []string
	for _, w := range p.Workloads {
		names = append(names, w.Name)
	}
	for _, v := range p.Variants {
		if v == NoSaver || v == MemorySaver {
			variants = append(variants, string(v))
		}
	}
	for _, t := range p.Growth {
		growth = append(growth, strconv.Itoa(t))
	}
	args := []string{j.script,
		"-target-ms", strconv.FormatInt(p.Target.Milliseconds(), 10),
		"-min-runs", strconv.Itoa(p.MinRuns),
		"-growth-budget-ms", strconv.FormatInt(p.GrowthBudget.Milliseconds(), 10)}
	if len(names) > 0 && len(variants) > 0 {
		args = append(args, "-workloads", strings.Join(names, ","), "-variants", strings.Join(variants, ","))
	} else {
		args = append(args, "-workloads", ",")
	}
	if len(growth) > 0 {
		args = append(args, "-growth", strings.Join(growth, ","))
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("langgraphjs: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("langgraphjs: starting node (is Node 20 on PATH?): %w", err)
	}
	var results []Result
	var grows []GrowthResult
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l jsLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // not a result line
		}
		progress("langgraphjs", l.Workload, string(l.Variant))
		if l.Workload == "growth" {
			g := GrowthResult{Framework: j.Name(), Turns: l.Turns, Status: statusOK,
				Reached: l.Reached, Stopped: l.Stopped, TotalMS: l.TotalMS, CallMS: l.CallMS}
			if l.Error != "" {
				g.Status, g.Reason, g.CallMS = statusError, l.Error, nil
			}
			grows = append(grows, g)
			continue
		}
		r := Result{Framework: j.Name(), Workload: l.Workload, Variant: l.Variant, Status: statusOK,
			Runs: l.N, MedianMS: l.MedianMS, MinMS: l.MinMS, Check: l.Check, Durability: l.Durability}
		switch {
		case l.Error != "":
			r = Result{Framework: r.Framework, Workload: r.Workload, Variant: r.Variant, Status: statusError, Reason: l.Error}
		case l.NA != "":
			r = Result{Framework: r.Framework, Workload: r.Workload, Variant: r.Variant, Status: statusNA, Reason: l.NA}
		}
		results = append(results, r)
	}
	scanErr := sc.Err()
	if err := cmd.Wait(); err != nil {
		return results, grows, fmt.Errorf("langgraphjs: node %s: %w", j.script, err)
	}
	if scanErr != nil {
		return results, grows, fmt.Errorf("langgraphjs: reading results: %w", scanErr)
	}
	return results, grows, nil
}
