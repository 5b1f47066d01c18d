package graph

import (
	"fmt"
	"slices"
	"strings"
)

// Mermaid draws the graph as Mermaid flowchart text: solid arrows for
// edges, dashed ones for conditional edges (labelled with their path-map
// keys) and for declared Destinations.
func (g *Graph[S]) Mermaid() string {
	var b strings.Builder
	b.WriteString("graph TD;\n")
	fmt.Fprintf(&b, "\t%s([%s]):::first\n", START, START)
	for _, n := range g.nodes {
		fmt.Fprintf(&b, "\t%s(%s)\n", n.name, n.name)
	}
	fmt.Fprintf(&b, "\t%s([%s]):::last\n", END, END)
	name := func(i int) string { return g.nodes[i].name }
	edge := func(from, to string) { fmt.Fprintf(&b, "\t%s --> %s;\n", from, to) }
	dashed := func(from, to, label string) {
		if label == "" {
			fmt.Fprintf(&b, "\t%s -.-> %s;\n", from, to)
		} else {
			fmt.Fprintf(&b, "\t%s -. &nbsp;%s&nbsp; .-> %s;\n", from, label, to)
		}
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
		for _, d := range n.dests {
			dashed(n.name, d, "")
		}
	}
	for _, j := range g.joins {
		for _, f := range j.from {
			edge(f, j.to)
		}
	}
	b.WriteString("\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n")
	return b.String()
}
