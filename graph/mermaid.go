package graph

import (
	"fmt"
	"slices"
	"strings"
)

// Drawing is the shape of a compiled graph: its nodes and edges, as the
// Agent Server's graph endpoint and Mermaid show it.
type Drawing struct {
	// Nodes lists START, the graph's nodes in the order they were added,
	// and END.
	Nodes []string
	Edges []Edge
}

// Edge is one arrow of a Drawing. Conditional is set for conditional edges
// (Label holds the path-map key, if any) and for declared destinations.
type Edge struct {
	From, To    string
	Conditional bool
	Label       string
}

// Drawing returns the graph's nodes and edges.
func (g *Graph[S]) Drawing() Drawing {
	d := Drawing{Nodes: []string{START}}
	for _, n := range g.nodes {
		d.Nodes = append(d.Nodes, n.name)
	}
	d.Nodes = append(d.Nodes, END)
	name := func(i int) string { return g.nodes[i].name }
	edge := func(from, to string) { d.Edges = append(d.Edges, Edge{From: from, To: to}) }
	dashed := func(from, to, label string) {
		d.Edges = append(d.Edges, Edge{From: from, To: to, Conditional: true, Label: label})
	}
	branches := func(from string, bs []*branchSpec[S]) {
		for _, br := range bs {
			switch {
			case br.pathMap != nil:
				keys := make([]string, 0, len(br.pathMap))
				for k := range br.pathMap {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					dashed(from, br.pathMap[k], k)
				}
			case len(br.paths) > 0:
				for _, t := range br.paths {
					dashed(from, t, "")
				}
			default:
				for _, n := range g.nodes {
					dashed(from, n.name, "")
				}
				dashed(from, END, "")
			}
		}
	}
	for _, i := range g.startNext {
		edge(START, name(i))
	}
	branches(START, g.startBranches)
	for _, n := range g.nodes {
		for _, i := range n.next {
			edge(n.name, name(i))
		}
		if n.endEdge {
			edge(n.name, END)
		}
		branches(n.name, n.branches)
		for _, dst := range n.dests {
			dashed(n.name, dst, "")
		}
	}
	for _, j := range g.joins {
		for _, f := range j.from {
			edge(f, j.to)
		}
	}
	return d
}

// Mermaid draws the graph as Mermaid flowchart text: solid arrows for
// edges, dashed ones for conditional edges (labelled with their path-map
// keys) and for declared destinations.
func (g *Graph[S]) Mermaid() string {
	d := g.Drawing()
	var b strings.Builder
	b.WriteString("graph TD;\n")
	for _, n := range d.Nodes {
		switch n {
		case START:
			fmt.Fprintf(&b, "\t%s([%s]):::first\n", n, n)
		case END:
			fmt.Fprintf(&b, "\t%s([%s]):::last\n", n, n)
		default:
			fmt.Fprintf(&b, "\t%s(%s)\n", n, n)
		}
	}
	for _, e := range d.Edges {
		switch {
		case !e.Conditional:
			fmt.Fprintf(&b, "\t%s --> %s;\n", e.From, e.To)
		case e.Label == "":
			fmt.Fprintf(&b, "\t%s -.-> %s;\n", e.From, e.To)
		default:
			fmt.Fprintf(&b, "\t%s -. &nbsp;%s&nbsp; .-> %s;\n", e.From, e.Label, e.To)
		}
	}
	b.WriteString("\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n")
	return b.String()
}
