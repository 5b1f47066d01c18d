package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/store"
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
	defers  bool
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
	defers  bool
}

// WithRetry retries the node's failures by p.
func WithRetry(p RetryPolicy) NodeOption { return func(o *nodeOptions) { o.retry = &p } }

// WithTimeout gives each attempt of the node at most d.
func WithTimeout(d time.Duration) NodeOption { return func(o *nodeOptions) { o.timeout = d } }

// WithDefer runs the node, once triggered, only when no other task is left
// to run: a join for map-reduce branches of unequal length (LangGraph's
// defer=True).
func WithDefer() NodeOption { return func(o *nodeOptions) { o.defers = true } }

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
	spec := &nodeSpec[S]{name: name, node: n, retry: o.retry, timeout: o.timeout, dests: o.dests, defers: o.defers}
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
type CompileOption interface{ applyCompile(*compileOptions) }

type compileOption func(*compileOptions)

func (f compileOption) applyCompile(o *compileOptions) { f(o) }

type compileOptions struct {
	saver           checkpoint.Saver
	store           store.Store
	codec           checkpoint.Codec
	interruptBefore []string
	interruptAfter  []string
	name            string
}

// WithSaver makes threads durable through s.
func WithSaver(s checkpoint.Saver) CompileOption {
	return compileOption(func(o *compileOptions) { o.saver = s })
}

// WithStore gives the graph's nodes and tools a long-term memory shared
// across threads, read with StoreFrom.
func WithStore(s store.Store) CompileOption {
	return compileOption(func(o *compileOptions) { o.store = s })
}

// WithCodec encodes state for the saver with c instead of checkpoint.JSON.
func WithCodec(c checkpoint.Codec) CompileOption {
	return compileOption(func(o *compileOptions) { o.codec = c })
}

// BreakpointOption is a static breakpoint: given to Compile it holds for
// every run of the graph; given to Invoke or Stream, for that run only (in
// addition to the graph's).
type BreakpointOption interface {
	CompileOption
	RunOption
}

type breakpoints struct {
	after bool
	nodes []string
}

func (b breakpoints) applyCompile(o *compileOptions) {
	if b.after {
		o.interruptAfter = append(o.interruptAfter, b.nodes...)
	} else {
		o.interruptBefore = append(o.interruptBefore, b.nodes...)
	}
}

func (b breakpoints) applyRun(r *runConfig) {
	if b.after {
		r.interruptAfter = append(r.interruptAfter, b.nodes...)
	} else {
		r.interruptBefore = append(r.interruptBefore, b.nodes...)
	}
}

// WithInterruptBefore pauses a run before any of the named nodes runs.
func WithInterruptBefore(nodes ...string) BreakpointOption {
	return breakpoints{nodes: slices.Clone(nodes)}
}

// WithInterruptAfter pauses a run after any of the named nodes ran.
func WithInterruptAfter(nodes ...string) BreakpointOption {
	return breakpoints{after: true, nodes: slices.Clone(nodes)}
}

// WithName names the compiled graph (Name returns it; a server shows it).
func WithName(name string) CompileOption {
	return compileOption(func(o *compileOptions) { o.name = name })
}

// Name is the name given with WithName, or "" when none was.
func (g *Graph[S]) Name() string { return g.opts.name }

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
