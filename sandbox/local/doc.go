// Package local runs sandboxes as isolated process trees on this Linux machine: every command starts in fresh
// user, mount, pid, network, ipc and uts namespaces on a read-only root built from an allow-list, with
// seccomp, landlock, resource limits and an environment built from nothing.
//
// Commands are forked by a zygote, this very program re-executed, so main (and TestMain) must call Init first thing;
// a sandbox's state lives on disk under a root directory, so another process can Get, Stop or Delete it.
package local
