// Package gvisor is a sandbox.Backend that runs every command under gVisor's runsc, so the model's code talks
// to a kernel of its own (gVisor's Sentry) instead of the host's. Sandboxes keep the local backend's shape —
// a home per sandbox kept across commands, sizes, timeouts, TTL, files read and written from the host
// without following symlinks — and each command is a fresh gVisor container that ends with it.
package gvisor
