// Package sandboxtool gives an agent graph the run_python tool: each graph thread gets a sandbox of its own,
// found by name or created on first use, in which the model's programs run under a timeout.
// A Registry owns that thread-to-sandbox mapping over any sandbox.Backend and deletes or stops, on Close,
// every sandbox it handed out.
package sandboxtool
