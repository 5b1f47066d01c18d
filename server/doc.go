// Package server serves compiled graphs over LangGraph's Agent Server API, so
// that @langchain/langgraph-sdk, the Python langgraph_sdk, agent-chat-ui and
// LangGraph Studio talk to a Go agent unchanged. A Server is an http.Handler:
// assistants (one per registered graph), threads and their state, runs on a
// bounded pool of workers with streaming over server-sent events, the
// cross-thread store, and (WithThreadFiles) the files each thread's runs left
// in its sandbox.
//
// State crosses the wire as JSON, each key by its name; keys holding
// []model.Message use LangChain's serialized messages (type human, ai, tool
// or system), and accept {role, content} on input.
package server
