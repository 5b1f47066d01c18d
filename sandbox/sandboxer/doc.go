// Package sandboxer is a sandbox.Backend that speaks the Sandboxer API v1 over HTTP: the hosted service at
// DefaultBaseURL, or any agentgraph-sandboxd server, which serves the same API from machines of your own.
//
// New takes its settings from options only; OptionsFromEnv reads SANDBOXER_API_KEY (else SANDBOXER_TOKEN),
// SANDBOXER_API_URL and SANDBOXER_ORG when a program wants them. The API key goes into the Authorization
// header and nowhere else: not into errors, logs, or what fmt prints of a Backend or a Sandbox.
//
// Calls that are safe to repeat (reads, and creates, which always carry an Idempotency-Key) are retried with
// jittered exponential backoff after a 429, a 503 or a broken connection; nothing else is. Errors from the API
// are *APIError values that errors.Is the matching sentinels of package sandbox (ErrNotFound, ErrStopped,
// ErrInvalidPath, ...) and of this package (ErrUnauthorized, ErrRateLimited, ...).
package sandboxer
