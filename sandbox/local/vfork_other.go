//go:build linux && !amd64 && !arm64

package local

import "syscall"

// vforkable is false where rawVfork has no assembly: the child is a copy of the zygote.
const vforkable = false

//go:nosplit
//go:norace
func rawVfork(flags, ptid uintptr) (pid uintptr, errno syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, flags, 0, ptid, 0, 0, 0)
	return r, e
}
