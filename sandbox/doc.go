// Package sandbox defines the contract between agent code and a place where untrusted Python runs: a Backend
// creates and finds sandboxes, a Sandbox runs shell commands and moves files, and optional interfaces add more.
//
// Backends live in subpackages (sandbox/local runs isolated processes on this machine); sandbox/sandboxtest
// holds the conformance suite every backend must pass.
package sandbox
