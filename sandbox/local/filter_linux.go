package local

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM: debugging other processes, kernel keyrings, kernel attack surface that
// sandboxed Python never needs, and everything that changes mounts or namespaces. Names an architecture
// lacks (mknod on arm64) are skipped there.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr",
	"setns", "unshare",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "lookup_dcookie",
	"open_by_handle_at", "name_to_handle_at", "personality", "uselib", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"mknod", "mknodat",
}

const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Offsets into struct seccomp_data, as the filter sees it (native byte order, as the kernel loads it).
const (
	seccompNrOff   = 0
	seccompArchOff = 4
	seccompArgOff  = 16 // args[0]; each argument is 8 bytes, the low half first on little-endian machines
)

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// x32SyscallBit marks x86-64's x32 ABI, which shares the x86-64 audit arch: those calls are refused.
const x32SyscallBit = 0x40000000

// seccompArch is the architecture this program was built for: the only one whose system calls the filter
// lets through. A 32-bit entry (int 0x80 on x86-64, AArch32 on arm64) is another audit arch and is killed.
func seccompArch() (*arch.Info, error) {
	a, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		return nil, fmt.Errorf("seccomp: no system call table for %s: %w", runtime.GOARCH, err)
	}
	return a, nil
}

// seccompProgram assembles the filter for one architecture. Its shape: refuse foreign architectures (and
// x32), then compare the call number against the denied ones in a balanced search tree, so a permitted call
// leaves after about log2(n) comparisons; clone and ioctl, the only calls judged by argument, get a branch
// of their own. The kernel caches the verdict of every call the filter allows whatever its arguments, so
// most calls skip the filter entirely after their first use.
func seccompProgram(a *arch.Info) ([]bpf.Instruction, error) {
	verdict := map[uint32]uint32{} // call number -> fixed return value
	for _, name := range deniedSyscalls {
		if nr, ok := a.SyscallNames[name]; ok {
			verdict[uint32(nr)] = retEPERM
		}
	}
	// ENOSYS, not EPERM: clone3's flags live in memory the filter cannot read, and libc falls back to clone
	// on ENOSYS, whose flags the filter checks.
	if nr, ok := a.SyscallNames["clone3"]; ok {
		verdict[uint32(nr)] = retENOSYS
	}
	cloneNr, ok1 := a.SyscallNames["clone"]
	ioctlNr, ok2 := a.SyscallNames["ioctl"]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("seccomp: %s table lacks clone or ioctl", a.Name)
	}
	nrs := make([]uint32, 0, len(verdict))
	for nr := range verdict {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)

	var p prog
	p.emit(bpf.LoadAbsolute{Off: seccompArchOff, Size: 4})
	p.jumpIf(bpf.JumpEqual, uint32(a.ID), "native", "")
	p.emit(bpf.RetConstant{Val: retKill})
	p.label("native")
	p.emit(bpf.LoadAbsolute{Off: seccompNrOff, Size: 4})
	if a.ID == arch.X86_64.ID {
		p.jumpIf(bpf.JumpGreaterOrEqual, x32SyscallBit, "kill", "")
	}
	p.jumpIf(bpf.JumpEqual, uint32(cloneNr), "clone", "")
	p.jumpIf(bpf.JumpEqual, uint32(ioctlNr), "ioctl", "")
	p.search(nrs, verdict)

	// clone: any namespace flag in the low half of args[0] is refused.
	p.label("clone")
	p.emit(bpf.LoadAbsolute{Off: seccompArgOff + lowHalf(), Size: 4})
	p.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: namespaceFlags})
	p.jumpIf(bpf.JumpEqual, 0, "allow", "eperm")

	// ioctl: TIOCSTI and TIOCLINUX (args[1]; the command is 32 bits wide).
	p.label("ioctl")
	p.emit(bpf.LoadAbsolute{Off: seccompArgOff + 8 + lowHalf(), Size: 4})
	p.jumpIf(bpf.JumpEqual, unix.TIOCSTI, "eperm", "")
	p.jumpIf(bpf.JumpEqual, unix.TIOCLINUX, "eperm", "allow")

	p.label("allow")
	p.emit(bpf.RetConstant{Val: retAllow})
	p.label("eperm")
	p.emit(bpf.RetConstant{Val: retEPERM})
	p.label("kill")
	p.emit(bpf.RetConstant{Val: retKill})
	return p.resolve()
}

// lowHalf is the offset of the low 32 bits within a 64-bit argument.
func lowHalf() uint32 {
	var x uint16 = 1
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return 0
	}
	return 4
}

// prog collects instructions with symbolic jump targets; resolve turns them into offsets.
type prog struct {
	insts  []bpf.Instruction
	jumps  map[int][2]string // instruction index -> targets when true, false ("" = next)
	labels map[string]int
	n      int // unique label counter
}

func (p *prog) emit(i bpf.Instruction) { p.insts = append(p.insts, i) }

func (p *prog) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.insts)
}

func (p *prog) jumpIf(cond bpf.JumpTest, val uint32, ifTrue, ifFalse string) {
	if p.jumps == nil {
		p.jumps = map[int][2]string{}
	}
	p.jumps[len(p.insts)] = [2]string{ifTrue, ifFalse}
	p.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (p *prog) fresh() string {
	p.n++
	return fmt.Sprintf(".%d", p.n)
}

// search emits a binary search over the sorted call numbers: a match returns its verdict, anything else is
// allowed. The accumulator holds the call number.
func (p *prog) search(nrs []uint32, verdict map[uint32]uint32) {
	if len(nrs) <= 3 {
		for _, nr := range nrs {
			ret := p.fresh()
			next := p.fresh()
			p.jumpIf(bpf.JumpEqual, nr, ret, next)
			p.label(ret)
			p.emit(bpf.RetConstant{Val: verdict[nr]})
			p.label(next)
		}
		p.emit(bpf.RetConstant{Val: retAllow})
		return
	}
	mid := len(nrs) / 2
	upper := p.fresh()
	p.jumpIf(bpf.JumpGreaterOrEqual, nrs[mid], upper, "")
	p.search(nrs[:mid], verdict)
	p.label(upper)
	p.search(nrs[mid:], verdict)
}

func (p *prog) resolve() ([]bpf.Instruction, error) {
	out := slices.Clone(p.insts)
	for at, targets := range p.jumps {
		j := out[at].(bpf.JumpIf)
		for k, name := range targets {
			if name == "" {
				continue
			}
			to, ok := p.labels[name]
			if !ok {
				return nil, fmt.Errorf("seccomp: undefined label %q", name)
			}
			skip := to - at - 1
			if skip < 0 || skip > 255 {
				return nil, fmt.Errorf("seccomp: jump to %q out of range (%d)", name, skip)
			}
			if k == 0 {
				j.SkipTrue = uint8(skip)
			} else {
				j.SkipFalse = uint8(skip)
			}
		}
		out[at] = j
	}
	return out, nil
}
