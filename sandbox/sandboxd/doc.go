// Package sandboxd serves any sandbox.Backend over the Sandboxer API v1, so that graphs on other machines
// reach the sandboxes of this one through package sandboxer (or any client of that API).
//
// A Server is an http.Handler under Prefix. Every request carries an API key from a key file that holds only
// hashes; each key sees and deletes only the sandboxes it created, and may hold only so many running
// sandboxes and running commands at once (429 limit_reached past that). Answers use the API's status codes
// and envelopes. cmd/agentgraph-sandboxd runs a Server with TLS, key management and graceful shutdown.
package sandboxd
