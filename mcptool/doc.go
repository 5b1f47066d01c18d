// Package mcptool offers the tools of a Model Context Protocol server as
// agentgraph tools. Connect starts a session with a server, over stdio with
// a command it runs or over streamable HTTP, and Client.Tools returns the
// server's tools as prebuilt.Tool values, with the server's schemas, to give
// a ToolNode or a ReAct agent.
//
// The client reconnects when the session drops, and lists the tools again
// when the server says they changed. It is built on the official Go SDK,
// github.com/modelcontextprotocol/go-sdk.
package mcptool
