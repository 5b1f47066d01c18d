package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// report is what results.json holds.
type report struct {
	Machine map[string]string `json:"machine"`
	Started string            `json:"started"`
	Plan    map[string]any    `json:"plan"`
	Results []Result          `json:"results"`
	Growth  []GrowthResult    `json:"growth"`
	GoBench []GoBenchResult   `json:"go_benchmarks,omitempty"`
	Server  *ServerResult     `json:"agent_server,omitempty"`
	Cluster *ClusterResult    `json:"agent_server_processes,omitempty"`
	Errors  []string          `json:"errors,omitempty"`
}

// goPeers are the Go frameworks a user would pick instead of agentgraph.
var goPeers = []string{"eino", "langgraphgo"}

func (r *report) find(framework, workload string, v Variant) (Result, bool) {
	for _, c := range r.Results {
		if c.Framework == framework && c.Workload == workload && c.Variant == v {
			return c, true
		}
	}
	return Result{}, false
}

// markdown renders the table: one row per workload and saver, one column per
// framework, then LangGraph.js and the best Go peer as multiples of agentgraph.
// Rows no framework could run are left out.
func (r *report) markdown(p plan, names []string) string {
	var b strings.Builder
	if len(names) == 0 {
		fmt.Fprintf(&b, "\n%s, %s CPUs, %s. Load average at start %s, at end %s.\n", r.Machine["cpu"], r.Machine["cpus"], r.Machine["go"],
			r.Machine["loadavg_start"], r.Machine["loadavg_end"])
		return b.String()
	}
	fmt.Fprintf(&b, "\n## Median time per run (%s, %s CPUs, %s, node %s)\n\n", r.Machine["cpu"], r.Machine["cpus"], r.Machine["go"], r.Machine["node"])
	fmt.Fprintf(&b, "Load average at start %s, at end %s.\n\n", r.Machine["loadavg_start"], r.Machine["loadavg_end"])
	b.WriteString("A Go framework's cell reads \"time (overhead)\": the overhead is the median difference between the time of a run of the cell and of a run of the plain Go loop timed beside it (the same node, model and tool work with no framework, `plain.go`), both timed in alternating blocks of runs of about 10 ms.\n\n")
	b.WriteString("| workload | saver | plain Go |")
	for _, n := range names {
		b.WriteString(" " + n + " |")
	}
	b.WriteString(" langgraphjs / agentgraph | best Go peer / agentgraph | best Go peer's overhead / agentgraph's |\n|---|---|---:|")
	for range names {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|\n")
	var notes footnotes
	for _, w := range p.Workloads {
		for _, v := range p.Variants {
			ran := false
			plain := 0.0
			for _, n := range names {
				if c, ok := r.find(n, w.Name, v); ok && (c.Status == statusOK || c.Status == statusError) {
					ran = true
					if c.PlainMS > 0 && (plain == 0 || n == "agentgraph") {
						plain = c.PlainMS
					}
				}
			}
			if !ran {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", w.Name, v)
			if plain > 0 {
				b.WriteString(" " + durText(plain) + " |")
			} else {
				b.WriteString(" |")
			}
			for _, n := range names {
				c, ok := r.find(n, w.Name, v)
				switch {
				case !ok:
					b.WriteString(" |")
				case c.Status == statusNA:
					b.WriteString(" " + notes.mark(c.Reason) + " |")
				case c.Status == statusOK && c.PlainMS > 0:
					b.WriteString(" " + cellText(c) + " (" + durText(c.OverheadMS) + ") |")
				default:
					b.WriteString(" " + cellText(c) + " |")
				}
			}
			ag, agOK := r.find("agentgraph", w.Name, v)
			agOK = agOK && ag.Status == statusOK
			js, jsOK := r.find("langgraphjs", w.Name, v)
			if agOK && jsOK && js.Status == statusOK {
				fmt.Fprintf(&b, " %s |", ratio(js.MedianMS/ag.MedianMS))
			} else {
				b.WriteString(" |")
			}
			best, bestOver := math.Inf(1), math.Inf(1)
			for _, peer := range goPeers {
				if c, ok := r.find(peer, w.Name, v); ok && c.Status == statusOK {
					best = min(best, c.MedianMS)
					if c.PlainMS > 0 {
						bestOver = min(bestOver, c.OverheadMS)
					}
				}
			}
			if agOK && !math.IsInf(best, 1) {
				fmt.Fprintf(&b, " %s |", ratio(best/ag.MedianMS))
			} else {
				b.WriteString(" |")
			}
			switch {
			case !agOK || math.IsInf(bestOver, 1) || ag.PlainMS == 0:
				b.WriteString(" |")
			case ag.OverheadMS <= 0 || bestOver <= 0:
				// Within the noise of the loop beside it: no ratio to take.
				b.WriteString(" — |")
			default:
				fmt.Fprintf(&b, " %s |", ratio(bestOver/ag.OverheadMS))
			}
			b.WriteString("\n")
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%s %s  \n", notes.sign(i), n)
		}
	}
	if len(r.Growth) > 0 {
		b.WriteString("\n## Growth check: agent loop with a saver at every step, mean time per turn\n\n")
		b.WriteString("A Go framework's loop runs up to five times; the figure is its run of median total time.\n\n")
		b.WriteString("| framework |")
		for _, t := range p.Growth {
			fmt.Fprintf(&b, " %d turns |", t)
		}
		b.WriteString(" longest / shortest |\n|---|")
		for range p.Growth {
			b.WriteString("---:|")
		}
		b.WriteString("---:|\n")
		for _, n := range names {
			var row []GrowthResult
			for _, g := range r.Growth {
				if g.Framework == n {
					row = append(row, g)
				}
			}
			if len(row) == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s |", n)
			var first, last float64
			for _, t := range p.Growth {
				i := slices.IndexFunc(row, func(g GrowthResult) bool { return g.Turns == t })
				if i < 0 {
					b.WriteString(" |")
					continue
				}
				g := row[i]
				if g.Status != statusOK {
					b.WriteString(" " + cellText(Result{Status: g.Status, Reason: g.Reason}) + " |")
					continue
				}
				if first == 0 {
					first = g.PerTurnMS()
				}
				last = g.PerTurnMS()
				if g.Stopped != "" {
					fmt.Fprintf(&b, " %s (%s at turn %d) |", durText(g.PerTurnMS()), g.Stopped, g.Reached)
				} else {
					b.WriteString(" " + durText(g.PerTurnMS()) + " |")
				}
			}
			if first > 0 {
				fmt.Fprintf(&b, " %s |\n", ratio(last/first))
			} else {
				b.WriteString(" |\n")
			}
		}
	}
	return b.String()
}

// errorsMarkdown lists what failed, after every table.
func (r *report) errorsMarkdown() string {
	var b strings.Builder
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "\nerror: %s\n", e)
	}
	return b.String()
}

func cellText(c Result) string {
	switch c.Status {
	case statusOK:
		return durText(c.MedianMS)
	case statusNA:
		return "n/a: " + c.Reason
	case statusNotYet:
		return "not yet"
	default:
		msg := c.Reason
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if len(msg) > 80 {
			msg = msg[:80] + "…"
		}
		return "error: " + strings.ReplaceAll(msg, "|", "/")
	}
}

// durText prints milliseconds with three significant digits and a fitting unit.
func durText(msv float64) string {
	switch {
	case msv < 0:
		return "-" + durText(-msv)
	case msv >= 1000:
		return fmt.Sprintf("%.3g s", msv/1000)
	case msv >= 1:
		return fmt.Sprintf("%.3g ms", msv)
	case msv < 0.001:
		return fmt.Sprintf("%.3g ns", msv*1e6)
	default:
		return fmt.Sprintf("%.3g µs", msv*1000)
	}
}

func ratio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.2g×", x)
}

// growthSVG draws time per turn against thread length, one line per framework,
// from each framework's longest growth run, with a logarithmic time axis so a
// flat line means constant cost per turn and a rising one means the saver
// rewrites the growing thread.
func growthSVG(grows []GrowthResult, names []string) string {
	const (
		width, height            = 880, 470
		left, right, top, bottom = 80, 240, 60, 60
		windows                  = 20
	)
	type series struct {
		name string
		note string
		xs   []float64 // turns so far
		ys   []float64 // µs per turn in the window ending there
	}
	var all []series
	for _, n := range names {
		var longest *GrowthResult
		for i := range grows {
			g := &grows[i]
			if g.Framework == n && g.Status == statusOK && (longest == nil || g.Turns > longest.Turns) {
				longest = g
			}
		}
		if longest == nil || len(longest.CallMS) < 2 {
			continue
		}
		s := series{name: n}
		if longest.Stopped != "" {
			s.note = fmt.Sprintf("%s, at turn %d", longest.Stopped, longest.Reached)
		}
		step := max(1, longest.Turns/windows)
		if longest.Reached < longest.Turns {
			step = max(1, longest.Reached/windows)
		}
		for a := 0; a+step <= longest.Reached; a += step {
			b := a + step
			s.xs = append(s.xs, float64(b))
			s.ys = append(s.ys, (longest.CallMS[b]-longest.CallMS[a])/float64(step)*1000)
		}
		all = append(all, s)
	}
	maxX, minY, maxY := 1.0, math.Inf(1), math.Inf(-1)
	for _, s := range all {
		for i := range s.xs {
			maxX = max(maxX, s.xs[i])
			minY = min(minY, max(s.ys[i], 0.001))
			maxY = max(maxY, s.ys[i])
		}
	}
	if len(all) == 0 {
		minY, maxY = 1, 10
	}
	lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if hi <= lo {
		hi = lo + 1
	}
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	px := func(x float64) float64 { return float64(left) + x/maxX*pw }
	py := func(y float64) float64 {
		return float64(top) + ph - (math.Log10(max(y, 0.001))-lo)/(hi-lo)*ph
	}
	colors := map[string]string{"agentgraph": "#d62728", "eino": "#2ca02c", "langgraphgo": "#1f77b4", "langgraphjs": "#ff7f0e"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">Time per agent turn as the thread grows (saver on every step)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="42" font-size="11" fill="#555">ReAct loop, scripted model, 3.6 KB tool arguments, in-memory saver; each point is the mean of a window of turns</text>`+"\n", left)
	// y grid: decades
	for e := lo; e <= hi; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, width-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, durText(math.Pow(10, e)/1000))
	}
	// x ticks: five
	for i := 0; i <= 5; i++ {
		x := maxX * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", px(x), height-bottom, px(x), height-bottom+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", px(x), height-bottom+18, x)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top, left, height-bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">thread length (model-and-tool turns so far)</text>`+"\n", float64(left)+pw/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">time per turn (log scale)</text>`+"\n", float64(top)+ph/2)
	for i, s := range all {
		c := colors[s.name]
		if c == "" {
			c = "#7f7f7f"
		}
		var pts []string
		for j := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.xs[j]), py(s.ys[j])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := top + 10 + i*44
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", width-right+16, ly, width-right+40, ly, c)
		last := s.ys[len(s.ys)-1]
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", width-right+46, ly, s.name)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#555">%s/turn at turn %.0f</text>`+"\n", width-right+46, ly+12, durText(last/1000), s.xs[len(s.xs)-1])
		if s.note != "" {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#555">%s</text>`+"\n", width-right+46, ly+24, s.note)
			// mark where the run was cut short
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", px(s.xs[len(s.xs)-1]), py(last), c)
		}
	}
	if len(all) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">no framework ran the growth check</text>`+"\n", float64(left)+pw/2, float64(top)+ph/2)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// footnotes collects the reasons cells are n/a, so the table shows a short
// mark and the reason is written once under it.
type footnotes []string

func (f footnotes) sign(i int) string { return fmt.Sprintf("n/a (%d)", i+1) }

// mark returns the cell text for an n/a reason, adding the note if new.
func (f *footnotes) mark(reason string) string {
	note := reason
	i := slices.Index(*f, note)
	if i < 0 {
		*f = append(*f, note)
		i = len(*f) - 1
	}
	return f.sign(i)
}
