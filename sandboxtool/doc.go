// Package sandboxtool gives an agent graph a run_python tool backed by sandboxes: each thread of the graph
// gets its own sandbox, found or created on first use, in which the model's programs run with a timeout.
//
// A Registry owns the thread-to-sandbox mapping over any sandbox.Backend, and Close deletes (or stops) what it
// used, so a conversation's files last as long as the caller wants and no longer.
package sandboxtool
