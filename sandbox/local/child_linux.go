package local

import (
	"runtime"
	"syscall"
	"unsafe" // and go:linkname

	"golang.org/x/sys/unix"
)

// A command's process is cloned by the zygote without an exec of this program in between: the zygote
// assembles, before it clones, the exact list of system calls that turn the child into the sandbox (mounts,
// pivot_root, hostname, landlock, credentials, capabilities, seccomp, limits, descriptors), and the child
// only replays that list and execs /bin/sh. Re-executing a Go program to do the same work would cost a
// process image and a Go runtime start per command, several milliseconds. Between clone and exec the child
// may not allocate, grow its stack, take a lock or write anything but its program's results (it runs on
// the cloning thread's stack, in the zygote's memory where vforkable, beside the zygote's other threads),
// so the replay is a nosplit loop over plain data and raw system calls, as the syscall package's own
// vfork child is. Its signal handlers are reset before its signals are unblocked, so no handler of the
// zygote's ever runs in it.

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

// forkChild starts a child in new namespaces that runs prog and never returns, and returns its pid. The
// kernel stores the pid at tid before the child runs, so another goroutine can learn it as soon as the
// child says it runs: where vforkable, the child shares the zygote's memory, and forkChild returns only once
// the child has exec'd its command or died. Meanwhile the calling goroutine counts as in a system call, so
// the zygote's other goroutines (the one mapping the child's ids among them) and its garbage collector go
// on. Signals are blocked across the clone so that no Go signal handler runs in the child.
//
//go:norace
func forkChild(cloneflags uintptr, prog *childProgram, errFD int, tid *int32) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	flags := cloneflags | unix.CLONE_PARENT_SETTID | uintptr(syscall.SIGCHLD)
	if vforkable {
		flags |= unix.CLONE_VM | unix.CLONE_VFORK
	}
	all := ^uint64(0)
	var old uint64
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)),
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return 0, e
	}
	if vforkable {
		entersyscall()
	}
	pid, e := rawFork(flags, prog, uintptr(errFD), tid)
	if vforkable {
		exitsyscall()
	}
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	runtime.KeepAlive(prog)
	if e != 0 {
		return 0, e
	}
	return int(pid), nil
}

// entersyscall and exitsyscall bracket a system call that blocks without the runtime's knowledge, as the
// syscall package's do.
//
//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// rawFork is the clone itself; in the child it runs the program. With a shared memory the child runs on
// this very stack, so the parent, once it resumes, uses nothing but the clone's results here.
//
//go:nosplit
//go:norace
func rawFork(flags uintptr, prog *childProgram, errFD uintptr, tid *int32) (uintptr, syscall.Errno) {
	pid, e := rawVfork(flags, uintptr(unsafe.Pointer(tid)))
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
