// Package prebuilt joins the graph engine and chat models into the usual agent
// parts: a messages state with the add-messages reducer, typed tools built
// from Go functions, a ToolNode that runs a model's tool calls, and a ReAct
// agent.
//
// Everything here is ordinary graph code: a ToolNode is a graph.Node, the
// agent is a compiled *graph.Graph, so each part can be used on its own in a
// graph of your own.
package prebuilt
