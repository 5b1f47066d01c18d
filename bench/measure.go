package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// plan is what one invocation of the harness measures.
type plan struct {
	Workloads []Workload
	Variants  []Variant
	Target    time.Duration // keep repeating a cell until this much time passed...
	MinRuns   int           // ...and at least this many runs
	Growth    []int         // agent-loop lengths for the growth check
	// GrowthBudget stops a growth run that is still going after this long;
	// the turns it finished are reported.
	GrowthBudget time.Duration
}

// Status of a cell.
const (
	statusOK     = "ok"
	statusNA     = "n/a"
	statusNotYet = "not yet"
	statusError  = "error"
)

// Result is one cell of the table.
type Result struct {
	Framework  string  `json:"framework"`
	Workload   string  `json:"workload"`
	Variant    Variant `json:"variant"`
	Status     string  `json:"status"`
	Reason     string  `json:"reason,omitempty"` // why n/a, or the error
	Runs       int     `json:"n,omitempty"`
	MedianMS   float64 `json:"median_ms,omitempty"`
	MinMS      float64 `json:"min_ms,omitempty"`
	Check      int     `json:"check,omitempty"`
	Durability string  `json:"durability,omitempty"`
	// PlainMS is the median of the workload's plain Go loop (plain.go),
	// timed alternately with the cell (in blocks, see measureCell);
	// OverheadMS is the median of the differences between a block's time
	// of one cell run and the loop's block beside it: what the
	// framework costs beyond the work itself. Cells measured outside this
	// process (LangGraph.js) have neither.
	PlainMS    float64 `json:"plain_go_ms,omitempty"`
	OverheadMS float64 `json:"overhead_ms,omitempty"`
}

// GrowthResult is one agent loop of the growth check.
type GrowthResult struct {
	Framework string    `json:"framework"`
	Turns     int       `json:"turns"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	Reached   int       `json:"reached"`            // turns finished (fewer than Turns when stopped)
	Stopped   string    `json:"stopped,omitempty"`  // why the run was cut short
	TotalMS   float64   `json:"total_ms,omitempty"` // first model call to last
	CallMS    []float64 `json:"call_ms,omitempty"`  // start of each model call, ms after the run began
	Runs      int       `json:"runs,omitempty"`     // loops run; this is the one of median total time
}

// PerTurnMS is the mean time of one model-and-tool round.
func (g GrowthResult) PerTurnMS() float64 {
	if g.Reached == 0 {
		return 0
	}
	return g.TotalMS / float64(g.Reached)
}

// failed turns an error from Prepare or a run into a non-ok result.
func failed(r Result, err error) Result {
	switch {
	case errors.Is(err, ErrNotApplicable):
		r.Status, r.Reason = statusNA, strings.TrimPrefix(err.Error(), ErrNotApplicable.Error()+": ")
	case errors.Is(err, ErrNotYet):
		r.Status = statusNotYet
	default:
		r.Status, r.Reason = statusError, err.Error()
	}
	return r
}

// warmup is how long a cell runs before it is timed (at least five times).
const warmup = 300 * time.Millisecond

// blockTime is about how long a block of timed runs of one kind lasts (see
// measureCell).
const blockTime = 10 * time.Millisecond

// measureCell prepares one cell and the workload's plain Go loop, warms both
// up while checking their results, then runs them alternately until p.Target
// has passed and at least p.MinRuns pairs of blocks were timed.
func measureCell(ctx context.Context, f Framework, w Workload, v Variant, p plan) Result {
	r := Result{Framework: f.Name(), Workload: w.Name, Variant: v}
	dir, err := os.MkdirTemp("", "bench-cell-")
	if err != nil {
		return failed(r, fmt.Errorf("cell directory: %w", err))
	}
	defer os.RemoveAll(dir)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel() // before RemoveAll: tells the cell to close its files
	run, err := f.Prepare(cctx, Cell{Workload: w, Variant: v, Dir: dir})
	if err != nil {
		return failed(r, err)
	}
	plain, err := plainGo(w)
	if err != nil {
		return failed(r, err)
	}
	check := func(run Runner) error {
		got, err := run(ctx)
		if err != nil {
			return err
		}
		if got != w.Expect {
			return fmt.Errorf("wrong result: check %d, want %d", got, w.Expect)
		}
		r.Check = got
		return nil
	}
	// Warm up: five runs, then more until warmup has passed, so that the
	// heap has grown to its steady size before the timing starts.
	var longest time.Duration
	for i, t0 := 0, time.Now(); i < 5 || time.Since(t0) < warmup; i++ {
		t1 := time.Now()
		if err := check(plain); err != nil {
			return failed(r, fmt.Errorf("plain Go loop: %w", err))
		}
		if err := check(run); err != nil {
			return failed(r, fmt.Errorf("warm-up: %w", err))
		}
		longest = time.Since(t1)
	}
	// Runs are timed in blocks of k runs of one kind, the loop's and the
	// cell's taking turns, and each block gives the time of one run. A block
	// lasts about blockTime, so that it pays for collecting its own garbage
	// rather than mostly the block's before it, as single runs of a workload
	// that leaves megabytes of garbage would.
	k := max(1, int(blockTime/max(longest, time.Microsecond)))
	block := func(run Runner) (time.Duration, error) {
		t0 := time.Now()
		for range k {
			if err := check(run); err != nil {
				return 0, err
			}
		}
		return time.Since(t0) / time.Duration(k), nil
	}
	runtime.GC()
	var times, plains, over []time.Duration
	start := time.Now()
	for len(times) < p.MinRuns || time.Since(start) < p.Target {
		if err := ctx.Err(); err != nil {
			return failed(r, err)
		}
		pt, err := block(plain)
		if err != nil {
			return failed(r, fmt.Errorf("plain Go loop: %w", err))
		}
		ct, err := block(run)
		if err != nil {
			return failed(r, err)
		}
		times, plains, over = append(times, ct), append(plains, pt), append(over, ct-pt)
	}
	r.Status, r.Runs = statusOK, len(times)*k
	r.MedianMS, r.MinMS = medianMS(times), ms(slices.Min(times))
	r.PlainMS, r.OverheadMS = medianMS(plains), medianMS(over)
	return r
}

// Growth loops of a framework measured in this process are run again, up to
// growthRuns times while growthRepeat has not passed: a loop of 100 turns
// takes some 20 ms, and one run of it depends on where the collector
// happens to be.
const (
	growthRuns   = 5
	growthRepeat = 10 * time.Second
)

// measureGrowthMedian runs the agent loop of turns up to growthRuns times
// (once if it was cut short or failed) and returns the run of median total
// time.
func measureGrowthMedian(ctx context.Context, f Framework, turns int, p plan) GrowthResult {
	var runs []GrowthResult
	for start := time.Now(); len(runs) < growthRuns && (len(runs) == 0 || time.Since(start) < growthRepeat); {
		g := measureGrowth(ctx, f, turns, p)
		if g.Status != statusOK || g.Stopped != "" {
			if len(runs) == 0 {
				return g
			}
			break
		}
		runs = append(runs, g)
	}
	slices.SortFunc(runs, func(a, b GrowthResult) int { return cmp.Compare(a.TotalMS, b.TotalMS) })
	g := runs[(len(runs)-1)/2]
	g.Runs = len(runs)
	return g
}

// measureGrowth runs one agent loop of the growth check and records when each
// model call started.
func measureGrowth(ctx context.Context, f Framework, turns int, p plan) GrowthResult {
	g := GrowthResult{Framework: f.Name(), Turns: turns}
	gr, ok := f.(Grower)
	if !ok {
		g.Status, g.Reason = statusNA, "does not save a checkpoint per step"
		return g
	}
	runtime.GC()
	calls := make([]float64, 0, turns+1)
	// The budget starts with the first model call: building the graph and
	// the script is not part of the loop.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var budget *time.Timer
	defer func() {
		if budget != nil {
			budget.Stop()
		}
	}()
	start := time.Now()
	err := gr.Growth(gctx, turns, func() {
		if budget == nil {
			budget = time.AfterFunc(p.GrowthBudget, cancel)
		}
		calls = append(calls, ms(time.Since(start)))
	})
	switch {
	case err != nil && gctx.Err() != nil && ctx.Err() == nil && len(calls) > 1:
		// Out of time: report the turns that finished.
		g.Reached = len(calls) - 1
		g.Stopped = fmt.Sprintf("stopped after %s", p.GrowthBudget)
		g.Status, g.CallMS, g.TotalMS = statusOK, calls, calls[g.Reached]-calls[0]
		return g
	case err != nil:
		r := failed(Result{}, err)
		g.Status, g.Reason = r.Status, r.Reason
		return g
	case len(calls) != turns+1:
		g.Status, g.Reason = statusError, fmt.Sprintf("model called %d times, want %d", len(calls), turns+1)
		return g
	}
	// From the first model call to the last: building the graph and the
	// script is not a turn.
	g.Status, g.CallMS, g.Reached, g.TotalMS = statusOK, calls, turns, calls[turns]-calls[0]
	return g
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medianMS(ts []time.Duration) float64 {
	s := slices.Clone(ts)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return ms(s[n/2])
	}
	return (ms(s[n/2-1]) + ms(s[n/2])) / 2
}
