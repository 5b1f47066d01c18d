// Package modeltest checks that a model.ChatModel keeps the contract the
// model package documents. Run drives the implementation against a stand-in
// backend that gives scripted answers, so the same suite holds a wire
// adapter (pointed at a test server speaking its API) and an in-process
// model to one behaviour: messages and tools arrive intact, answers come
// back whole, streaming assembles to what Generate returns, usage is
// reported, cancellation stops work, and failures fall into the documented
// error classes.
package modeltest
