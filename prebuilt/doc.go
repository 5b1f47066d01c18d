// Package prebuilt joins the graph engine and chat models into the parts of a
// tool-calling agent: a conversation state with the add-messages reducer,
// tools (the Tool interface; typed tools made from Go functions, tools made
// from a JSON schema, and middleware wrapping either), a ToolNode, a
// ModelNode and a ReAct agent built from them.
//
// Each part is ordinary graph code (a node, a router, a key, a compiled
// graph), so it can be used alone in a graph of your own.
//
// Tool arguments are parsed, checked against the tool's schema and assigned
// to its Args struct by this package's own code (args.go, schema.go), not by
// a JSON Schema library with a fast decoder. Measured against
// github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 for validation, decoding
// with github.com/bytedance/sonic v1.15.5 or github.com/goccy/go-json
// v0.12.0, on the react_agent_100x workload (BenchmarkReactAgent100Turns, no
// saver, median CPU time of 6 interleaved runs): 3.09 ms per run here, 3.60
// ms (+16%) with sonic and 4.24 ms (+37%) with go-json; one 3.6 KB argument
// object (BenchmarkToolArguments) takes 3.9 µs here, 11.6 µs with sonic. The
// libraries parse the text twice (once into values to validate, once into
// the struct), where this package parses it once and assigns from the
// parsed values, and their messages would need translating to name the field
// and the type it expects, as ArgumentError does.
package prebuilt
