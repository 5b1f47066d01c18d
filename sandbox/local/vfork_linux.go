//go:build linux && (amd64 || arm64)

package local

import "syscall"

// vforkable says rawVfork may share the zygote's memory with the child (CLONE_VM|CLONE_VFORK): the child
// then copies no page tables and the zygote takes no copy-on-write faults afterwards.
const vforkable = true

// rawVfork is clone(flags, 0, ptid), written so that a child sharing the caller's stack cannot break the
// caller's return.
//
//go:noescape
func rawVfork(flags, ptid uintptr) (pid uintptr, errno syscall.Errno)
