// Package model defines the conversation a graph carries and the interface a
// chat model implements: messages with stable ids and a JSON form that is a
// compatibility promise, tool specs, requests, responses and streamed chunks.
//
// Backends (model/openai, model/scripted) implement ChatModel; this package
// knows nothing of graphs, tool implementations or sandboxes.
package model
