package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// compiler turns a StateGraph into a Graph. It works on copies of the
// builder's nodes and joins, so the compiled graph shares nothing mutable
// with its builder: compiling again, or adding nodes after Compile, leaves
// earlier graphs as they were.
type compiler[S any] struct {
	src      *StateGraph[S]
	out      *Graph[S]
	errs     []error
	names    []string // node names in the order they were added
	reached  map[string]bool
	hasEntry bool
}

func (c *compiler[S]) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Compile validates the graph and returns a runnable Graph. Its error lists
// every problem found.
func (g *StateGraph[S]) Compile(opts ...CompileOption) (*Graph[S], error) {
	o := compileOptions{codec: checkpoint.JSON}
	for _, opt := range opts {
		opt.applyCompile(&o)
	}
	c := &compiler[S]{src: g, errs: slices.Clone(g.errs), reached: map[string]bool{}, out: &Graph[S]{opts: o}}
	c.copyNodes()
	c.addEdges()
	c.addJoins()
	c.addBranches()
	c.checkReached()
	c.checkOptions()
	if len(c.errs) > 0 {
		return nil, &CompileError{Errs: c.errs}
	}
	out := c.out
	out.interruptBefore = nodeSet(out.byName, o.interruptBefore)
	out.interruptAfter = nodeSet(out.byName, o.interruptAfter)
	out.build()
	return out, nil
}

// copyNodes gives the compiled graph its own keys and nodes, numbered in
// the order they were added and ranked by name.
func (c *compiler[S]) copyNodes() {
	g, out := c.src, c.out
	out.keys = slices.Clone(g.keys)
	out.keyIndex = make(map[AnyKey[S]]int, len(out.keys))
	for i, k := range out.keys {
		out.keyIndex[k] = i
	}
	out.nodes = make([]*nodeSpec[S], len(g.nodes))
	out.byName = make(map[string]*nodeSpec[S], len(g.nodes))
	c.names = make([]string, len(g.nodes))
	for i, n := range g.nodes {
		cp := &nodeSpec[S]{name: n.name, node: n.node, retry: n.retry, timeout: n.timeout, dests: slices.Clone(n.dests), defers: n.defers, idx: i}
		out.nodes[i] = cp
		out.byName[n.name] = cp
		c.names[i] = n.name
	}
	sorted := slices.Sorted(slices.Values(c.names))
	for r, name := range sorted {
		out.byName[name].rank = r
	}
}

// known reports whether name is a node, or START as a source, or END as a
// target.
func (c *compiler[S]) known(name string, asTarget bool) bool {
	if asTarget && name == END || !asTarget && name == START {
		return true
	}
	_, ok := c.out.byName[name]
	return ok
}

func (c *compiler[S]) addEdges() {
	out := c.out
	for _, e := range c.src.edges {
		from, to := e[0], e[1]
		switch {
		case from == END:
			c.bad("edge %s -> %s: END cannot be a source", from, to)
			continue
		case to == START:
			c.bad("edge %s -> %s: START cannot be a target", from, to)
			continue
		case !c.known(from, false):
			c.bad("edge %s -> %s: unknown node %q", from, to, from)
			continue
		case !c.known(to, true):
			c.bad("edge %s -> %s: unknown node %q", from, to, to)
			continue
		}
		c.reached[to] = true
		switch {
		case from == START:
			c.hasEntry = true
			if to != END {
				out.startNext = append(out.startNext, out.byName[to].idx)
			}
		case to == END:
			out.byName[from].endEdge = true
		default:
			src := out.byName[from]
			if !slices.Contains(src.next, out.byName[to].idx) {
				src.next = append(src.next, out.byName[to].idx)
			}
		}
	}
}

func (c *compiler[S]) addJoins() {
	out := c.out
	for _, j := range c.src.joins {
		ok := true
		if len(j.from) == 0 {
			c.bad("waiting edge to %q has no sources", j.to)
			ok = false
		}
		for _, f := range j.from {
			if f == END || f == START || !c.known(f, false) {
				c.bad("waiting edge to %q: %q cannot be a source", j.to, f)
				ok = false
			}
		}
		if j.to == START || !c.known(j.to, true) {
			c.bad("waiting edge from %v: unknown target %q", j.from, j.to)
			ok = false
		}
		if !ok {
			continue
		}
		c.reached[j.to] = true
		js := joinSpec{from: slices.Clone(j.from), to: j.to, toIdx: -1, channel: barrierPrefix + strings.Join(j.from, "+") + ":" + j.to}
		for _, f := range j.from {
			js.fromIdx = append(js.fromIdx, out.byName[f].idx)
		}
		if j.to != END {
			js.toIdx = out.byName[j.to].idx
		}
		ji := len(out.joins)
		out.joins = append(out.joins, js)
		for _, f := range js.fromIdx {
			out.nodes[f].joins = append(out.nodes[f].joins, ji)
		}
		if js.toIdx >= 0 {
			out.nodes[js.toIdx].joinsIn = append(out.nodes[js.toIdx].joinsIn, ji)
		}
	}
}

func (c *compiler[S]) addBranches() {
	out := c.out
	seen := map[string]bool{}
	for _, b := range c.src.branches {
		if b.source == END {
			c.bad("conditional edge from END: END cannot be a source")
			continue
		}
		if !c.known(b.source, false) {
			c.bad("conditional edge from unknown node %q", b.source)
			continue
		}
		id := b.source + "\x00" + b.name
		if seen[id] {
			c.bad("node %q has two conditional edges named %q: give each a distinct BranchConfig.Name", b.source, b.name)
			continue
		}
		seen[id] = true
		targets := b.paths
		if len(targets) == 0 {
			targets = append(slices.Clone(c.names), END)
		}
		for _, t := range targets {
			if t == START {
				c.bad("conditional edge from %q: START cannot be a target", b.source)
			} else if !c.known(t, true) {
				c.bad("conditional edge from %q: unknown node %q", b.source, t)
			}
			c.reached[t] = true
		}
		if b.source == START {
			c.hasEntry = true
			out.startBranches = append(out.startBranches, b)
		} else {
			src := out.byName[b.source]
			src.branches = append(src.branches, b)
		}
	}
}

// checkReached checks that the graph has an entry and every node a way in.
func (c *compiler[S]) checkReached() {
	for _, n := range c.out.nodes {
		for _, d := range n.dests {
			if !c.known(d, true) || d == START {
				c.bad("node %q: unknown destination %q", n.name, d)
			}
			c.reached[d] = true
		}
	}
	if !c.hasEntry {
		c.bad("graph has no entry point: add an edge from graph.START")
	}
	for _, n := range c.out.nodes {
		if !c.reached[n.name] {
			c.bad("node %q is not reached by any edge: add an edge to it, or declare it with graph.WithDestinations on the node that routes to it", n.name)
		}
	}
}

// checkOptions checks the compile options against the graph.
func (c *compiler[S]) checkOptions() {
	o := &c.out.opts
	for _, n := range o.interruptBefore {
		if _, ok := c.out.byName[n]; !ok {
			c.bad("WithInterruptBefore: unknown node %q", n)
		}
	}
	for _, n := range o.interruptAfter {
		if _, ok := c.out.byName[n]; !ok {
			c.bad("WithInterruptAfter: unknown node %q", n)
		}
	}
	if o.saver == nil {
		return
	}
	for _, k := range c.out.keys {
		if err := checkCodec(o.codec, k.valueType()); err != nil {
			c.bad("key %q cannot be saved by the checkpoint codec: %v", k.Name(), err)
		}
	}
}
