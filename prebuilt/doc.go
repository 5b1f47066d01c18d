// Package prebuilt joins the graph engine and chat models into the parts of a
// tool-calling agent: a conversation state with the add-messages reducer,
// typed tools made from Go functions, a ToolNode, a ModelNode and a ReAct
// agent built from them.
//
// Each part is ordinary graph code (a node, a router, a key, a compiled
// graph), so it can be used alone in a graph of your own.
package prebuilt
