package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// The virtual entry and exit of every graph.
const (
	START = "__start__"
	END   = "__end__"
)

// StateGraph builds a graph over state S. Its methods record mistakes instead
// of returning them one by one; Compile reports them all.
type StateGraph[S any] struct {
	keys     []AnyKey[S]
	nodes    []*nodeSpec[S]
	byName   map[string]*nodeSpec[S]
	edges    [][2]string
	joins    []joinSpec
	branches []*branchSpec[S]
	errs     []error
}

type nodeSpec[S any] struct {
	name    string
	node    Node[S]
	retry   *RetryPolicy
	timeout time.Duration
	dests   []string
	// compiled
	endEdge  bool
	idx      int
	rank     int // position in name order: tasks of a step run in this order
	next     []int
	branches []*branchSpec[S]
	joins    []int // the joins this node is a source of
	joinsIn  []int // the joins this node is the target of
}

type joinSpec struct {
	from []string
	to   string
	// compiled
	fromIdx []int
	toIdx   int
	channel string
}

type branchSpec[S any] struct {
	source  string
	name    string
	router  Router[S]
	pathMap map[string]string
	paths   []string // targets for drawing and validation, in order
}

// New starts a graph over state S with its keys. Every key a node writes must
// be declared here.
func New[S any](keys ...AnyKey[S]) *StateGraph[S] {
	g := &StateGraph[S]{byName: map[string]*nodeSpec[S]{}}
	seen := map[string]bool{}
	for _, k := range keys {
		k = k.self()
		if seen[k.Name()] {
			g.errs = append(g.errs, fmt.Errorf("key %q declared twice", k.Name()))
			continue
		}
		seen[k.Name()] = true
		g.keys = append(g.keys, k)
	}
	return g
}

// NodeOption configures one node.
type NodeOption func(*nodeOptions)

type nodeOptions struct {
	retry   *RetryPolicy
	timeout time.Duration
	dests   []string
}

// WithRetry retries the node's failures by p.
func WithRetry(p RetryPolicy) NodeOption { return func(o *nodeOptions) { o.retry = &p } }

// WithTimeout gives each attempt of the node at most d.
func WithTimeout(d time.Duration) NodeOption { return func(o *nodeOptions) { o.timeout = d } }

// Destinations declares the nodes a node may route to with Update.Goto or
// Update.Send, for validation and drawing.
func WithDestinations(nodes ...string) NodeOption {
	return func(o *nodeOptions) { o.dests = append(o.dests, nodes...) }
}

// AddNode adds a node.
func (g *StateGraph[S]) AddNode(name string, n Node[S], opts ...NodeOption) *StateGraph[S] {
	if err := checkName(name); err != nil {
		g.errs = append(g.errs, err)
		return g
	}
	if _, dup := g.byName[name]; dup {
		g.errs = append(g.errs, fmt.Errorf("node %q added twice", name))
		return g
	}
	if n == nil {
		g.errs = append(g.errs, fmt.Errorf("node %q is nil", name))
		return g
	}
	var o nodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	spec := &nodeSpec[S]{name: name, node: n, retry: o.retry, timeout: o.timeout, dests: o.dests}
	g.nodes = append(g.nodes, spec)
	g.byName[name] = spec
	return g
}

// AddNodeFunc adds a node from a function.
func (g *StateGraph[S]) AddNodeFunc(name string, f func(ctx context.Context, s S) (Update[S], error), opts ...NodeOption) *StateGraph[S] {
	return g.AddNode(name, NodeFunc[S](f), opts...)
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("node name is empty")
	case name == START || name == END:
		return fmt.Errorf("node name %q is reserved", name)
	case strings.ContainsAny(name, "|:/"):
		return fmt.Errorf("node name %q contains one of the separators | : /", name)
	}
	return nil
}

// AddEdge runs to after from. from may be START; to may be END.
func (g *StateGraph[S]) AddEdge(from, to string) *StateGraph[S] {
	g.edges = append(g.edges, [2]string{from, to})
	return g
}

// AddSequence adds nodes and chains them with edges, in order.
func (g *StateGraph[S]) AddSequence(names []string, nodes ...Node[S]) *StateGraph[S] {
	if len(names) != len(nodes) {
		g.errs = append(g.errs, fmt.Errorf("AddSequence: %d names for %d nodes", len(names), len(nodes)))
		return g
	}
	for i, n := range nodes {
		g.AddNode(names[i], n)
		if i > 0 {
			g.AddEdge(names[i-1], names[i])
		}
	}
	return g
}

// AddWaitingEdge runs to once after every node in from has run, even when
// they ran in different steps; then it waits for all of them again.
func (g *StateGraph[S]) AddWaitingEdge(from []string, to string) *StateGraph[S] {
	g.joins = append(g.joins, joinSpec{from: slices.Clone(from), to: to})
	return g
}

// BranchConfig configures a conditional edge: Name tells two branches of one
// source apart (default "condition"); PathMap maps what the router returns to
// node names; Paths lists the possible targets when there is no PathMap.
type BranchConfig struct {
	Name    string
	PathMap map[string]string
	Paths   []string
}

// AddConditionalEdges routes after source by router. A BranchConfig, when
// given, names the branch and lists or maps its targets; without one, the
// drawing shows an edge to every node.
func (g *StateGraph[S]) AddConditionalEdges(source string, router Router[S], cfg ...BranchConfig) *StateGraph[S] {
	b := &branchSpec[S]{source: source, router: router, name: "condition"}
	if len(cfg) > 0 {
		c := cfg[0]
		if c.Name != "" {
			b.name = c.Name
		}
		b.pathMap = c.PathMap
		b.paths = slices.Clone(c.Paths)
		if c.PathMap != nil {
			keys := make([]string, 0, len(c.PathMap))
			for k := range c.PathMap {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b.paths = b.paths[:0]
			for _, k := range keys {
				b.paths = append(b.paths, c.PathMap[k])
			}
		}
	}
	if router == nil {
		g.errs = append(g.errs, fmt.Errorf("conditional edge from %q has a nil router", source))
		return g
	}
	g.branches = append(g.branches, b)
	return g
}

// CompileOption configures Compile.
type CompileOption func(*compileOptions)

type compileOptions struct {
	saver           checkpoint.Saver
	codec           checkpoint.Codec
	interruptBefore []string
	interruptAfter  []string
	name            string
}

// WithSaver makes threads durable through s.
func WithSaver(s checkpoint.Saver) CompileOption { return func(o *compileOptions) { o.saver = s } }

// WithCodec encodes state for the saver with c instead of checkpoint.JSON.
func WithCodec(c checkpoint.Codec) CompileOption { return func(o *compileOptions) { o.codec = c } }

// InterruptBefore pauses a run before any of the named nodes runs.
func WithInterruptBefore(nodes ...string) CompileOption {
	return func(o *compileOptions) { o.interruptBefore = append(o.interruptBefore, nodes...) }
}

// InterruptAfter pauses a run after any of the named nodes ran.
func WithInterruptAfter(nodes ...string) CompileOption {
	return func(o *compileOptions) { o.interruptAfter = append(o.interruptAfter, nodes...) }
}

// WithName names the compiled graph (used when drawing and as a subgraph).
func WithName(name string) CompileOption { return func(o *compileOptions) { o.name = name } }

// Compile validates the graph and returns a runnable Graph. Its error lists
// every problem found.
func (g *StateGraph[S]) Compile(opts ...CompileOption) (*Graph[S], error) {
	o := compileOptions{codec: checkpoint.JSON}
	for _, opt := range opts {
		opt(&o)
	}
	errs := slices.Clone(g.errs)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	c := &Graph[S]{keys: g.keys, nodes: g.nodes, opts: o, keyIndex: map[AnyKey[S]]int{}}
	for i, k := range g.keys {
		c.keyIndex[k] = i
	}
	for i, n := range g.nodes {
		n.idx = i
		n.next, n.branches, n.joins, n.joinsIn, n.endEdge = nil, nil, nil, nil, false
	}
	names := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		names[i] = n.name
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for r, name := range sorted {
		g.byName[name].rank = r
	}
	c.byName = g.byName

	known := func(name string, asTarget bool) bool {
		if asTarget && name == END {
			return true
		}
		if !asTarget && name == START {
			return true
		}
		_, ok := g.byName[name]
		return ok
	}
	reached := map[string]bool{}
	hasEntry := false
	for _, e := range g.edges {
		from, to := e[0], e[1]
		switch {
		case from == END:
			bad("edge %s -> %s: END cannot be a source", from, to)
			continue
		case to == START:
			bad("edge %s -> %s: START cannot be a target", from, to)
			continue
		}
		if !known(from, false) {
			bad("edge %s -> %s: unknown node %q", from, to, from)
			continue
		}
		if !known(to, true) {
			bad("edge %s -> %s: unknown node %q", from, to, to)
			continue
		}
		reached[to] = true
		if from == START {
			hasEntry = true
			if to == END {
				continue
			}
			c.startNext = append(c.startNext, g.byName[to].idx)
			continue
		}
		if to == END {
			g.byName[from].endEdge = true
			continue
		}
		src := g.byName[from]
		if !slices.Contains(src.next, g.byName[to].idx) {
			src.next = append(src.next, g.byName[to].idx)
		}
	}
	for ji := range g.joins {
		j := &g.joins[ji]
		ok := true
		if len(j.from) == 0 {
			bad("waiting edge to %q has no sources", j.to)
			ok = false
		}
		for _, f := range j.from {
			if f == END || f == START || !known(f, false) {
				bad("waiting edge to %q: %q cannot be a source", j.to, f)
				ok = false
			}
		}
		if j.to == START || !known(j.to, true) {
			bad("waiting edge from %v: unknown target %q", j.from, j.to)
			ok = false
		}
		if !ok {
			continue
		}
		reached[j.to] = true
		j.fromIdx = j.fromIdx[:0]
		for _, f := range j.from {
			j.fromIdx = append(j.fromIdx, g.byName[f].idx)
		}
		j.toIdx = -1
		if j.to != END {
			j.toIdx = g.byName[j.to].idx
		}
		j.channel = "join:" + strings.Join(j.from, "+") + ":" + j.to
		for _, f := range j.fromIdx {
			g.nodes[f].joins = append(g.nodes[f].joins, ji)
		}
		if j.toIdx >= 0 {
			g.nodes[j.toIdx].joinsIn = append(g.nodes[j.toIdx].joinsIn, ji)
		}
	}
	c.joins = g.joins
	branchNames := map[string]bool{}
	for _, b := range g.branches {
		if b.source == END {
			bad("conditional edge from END: END cannot be a source")
			continue
		}
		if !known(b.source, false) {
			bad("conditional edge from unknown node %q", b.source)
			continue
		}
		id := b.source + "\x00" + b.name
		if branchNames[id] {
			bad("node %q has two conditional edges named %q: give each a distinct BranchConfig.Name", b.source, b.name)
			continue
		}
		branchNames[id] = true
		targets := b.paths
		if len(targets) == 0 {
			targets = append(slices.Clone(names), END)
		}
		for _, t := range targets {
			if t == START {
				bad("conditional edge from %q: START cannot be a target", b.source)
			} else if !known(t, true) {
				bad("conditional edge from %q: unknown node %q", b.source, t)
			}
			reached[t] = true
		}
		if b.source == START {
			hasEntry = true
			c.startBranches = append(c.startBranches, b)
		} else {
			src := g.byName[b.source]
			src.branches = append(src.branches, b)
		}
	}
	for _, n := range g.nodes {
		for _, d := range n.dests {
			if !known(d, true) || d == START {
				bad("node %q: unknown destination %q", n.name, d)
			}
			reached[d] = true
		}
	}
	if !hasEntry {
		bad("graph has no entry point: add an edge from graph.START")
	}
	for _, n := range g.nodes {
		if !reached[n.name] {
			bad("node %q is not reached by any edge: add an edge to it, or declare it with graph.Destinations on the node that routes to it", n.name)
		}
	}
	check := func(list []string, what string) {
		for _, n := range list {
			if _, ok := g.byName[n]; !ok {
				bad("%s: unknown node %q", what, n)
			}
		}
	}
	check(o.interruptBefore, "InterruptBefore")
	check(o.interruptAfter, "InterruptAfter")
	if o.saver != nil {
		for _, k := range g.keys {
			if err := checkCodec(o.codec, k.valueType()); err != nil {
				bad("key %q cannot be saved by the checkpoint codec: %v", k.Name(), err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, &CompileError{Errs: errs}
	}
	c.interruptBefore = nodeSet(g.byName, o.interruptBefore)
	c.interruptAfter = nodeSet(g.byName, o.interruptAfter)
	c.build()
	return c, nil
}

func nodeSet[S any](byName map[string]*nodeSpec[S], names []string) []bool {
	if len(names) == 0 {
		return nil
	}
	set := make([]bool, len(byName))
	for _, n := range names {
		set[byName[n].idx] = true
	}
	return set
}

// CompileError lists every problem Compile found.
type CompileError struct{ Errs []error }

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return "graph: compile: " + strings.Join(parts, "; ")
}

// Unwrap returns the problems.
func (e *CompileError) Unwrap() []error { return e.Errs }
