package local

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A command's process is forked by the zygote without an exec of this program in between: the zygote
// assembles, before it forks, the exact list of system calls that turn the child into the sandbox (mounts,
// pivot_root, hostname, landlock, credentials, capabilities, seccomp, limits, descriptors), and the child
// only replays that list and execs /bin/sh. Re-executing a Go program to do the same work would cost a
// process image and a Go runtime start per command, several milliseconds. Between fork and exec the child
// may not allocate, grow its stack or take a lock (the other threads of the zygote do not exist in it), so
// the replay is a nosplit loop over plain data and raw system calls, as the syscall package's own fork is.

// sysOp is one system call of the child's program.
type sysOp struct {
	nr   uintptr
	args [6]uintptr
	// from[i] > 0 replaces args[i] with the result of op from[i]-1 (a descriptor it returned).
	from [6]int16
	// okErrno is an error that counts as success (EEXIST for a directory that is there already).
	okErrno syscall.Errno
	// want, when not wantAny, is the only result that counts as success (the one byte read of the go-ahead).
	want uintptr
	// store, when set, makes this no system call: it writes args[1] (the result of op from[1]-1) there.
	store *int32
}

const wantAny = ^uintptr(0)

// childProgram is an assembled list of operations plus the memory their pointer arguments refer to, which
// must stay alive until the fork.
type childProgram struct {
	ops     []sysOp
	results []uintptr
	what    []string // what each op does, for error messages
	keep    []any
}

// childFailure is what the child writes to its error pipe when an op fails: the op's index and the errno.
type childFailure struct {
	Index uint32
	Errno uint32
}

// forkChild forks a child in new namespaces that runs prog and never returns; the parent gets its pid.
// Signals are blocked across the fork so that no Go signal handler runs in the child.
//
//go:norace
func forkChild(cloneflags uintptr, prog *childProgram, errFD int) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	all := ^uint64(0)
	var old uint64
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)),
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return 0, e
	}
	pid, e := rawFork(cloneflags, prog, uintptr(errFD))
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	runtime.KeepAlive(prog)
	if e != 0 {
		return 0, e
	}
	return int(pid), nil
}

// rawFork is the fork itself; in the child it runs the program.
//
//go:nosplit
//go:norace
func rawFork(cloneflags uintptr, prog *childProgram, errFD uintptr) (uintptr, syscall.Errno) {
	pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, cloneflags|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 || pid != 0 {
		return pid, e
	}
	runChild(prog.ops, prog.results, errFD)
	return 0, 0 // not reached
}

// runChild replays ops. On the first failure it writes the op's index and errno to errFD and exits 127;
// the last op is the execve, which does not return when it works.
//
//go:nosplit
//go:norace
func runChild(ops []sysOp, results []uintptr, errFD uintptr) {
	for i := 0; i < len(ops); i++ {
		o := &ops[i]
		a := o.args
		for j := 0; j < 6; j++ {
			if o.from[j] > 0 {
				a[j] = results[o.from[j]-1]
			}
		}
		if o.store != nil {
			*o.store = int32(a[1])
			continue
		}
		r, _, e := syscall.RawSyscall6(o.nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if e != 0 && e != o.okErrno || e == 0 && o.want != wantAny && r != o.want {
			if e == 0 {
				e = syscall.EIO
			}
			f := childFailure{Index: uint32(i), Errno: uint32(e)}
			syscall.RawSyscall(syscall.SYS_WRITE, errFD, uintptr(unsafe.Pointer(&f)), unsafe.Sizeof(f))
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
		}
		results[i] = r
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
}

// Building programs: each method appends one op and returns its index, so later ops can use its result.

func (p *childProgram) bytes(s string) uintptr {
	b := append([]byte(s), 0)
	p.keep = append(p.keep, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

func (p *childProgram) ptr(v any, addr unsafe.Pointer) uintptr {
	p.keep = append(p.keep, v)
	return uintptr(addr)
}

func (p *childProgram) add(what string, o sysOp) int {
	if o.want == 0 {
		o.want = wantAny
	}
	p.ops = append(p.ops, o)
	p.what = append(p.what, what)
	return len(p.ops) - 1
}

func (p *childProgram) call(what string, nr uintptr, args ...uintptr) int {
	var o sysOp
	o.nr = nr
	copy(o.args[:], args)
	return p.add(what, o)
}

// callFrom is call with argument i taken from the result of op ref.
func (p *childProgram) callFrom(what string, nr uintptr, i int, ref int, args ...uintptr) int {
	var o sysOp
	o.nr = nr
	copy(o.args[:], args)
	o.from[i] = int16(ref + 1)
	return p.add(what, o)
}
