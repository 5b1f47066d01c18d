package local

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM: debugging other processes, kernel keyrings, kernel attack surface that
// sandboxed Python never needs, and everything that changes mounts or namespaces.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr",
	"setns", "unshare",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "lookup_dcookie",
	"open_by_handle_at", "name_to_handle_at", "personality", "uselib", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"mknod", "mknodat",
}

const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

func seccompPolicy() seccomp.Policy {
	var cloneNS []seccomp.NameWithConditions
	for bit := uint64(1); bit != 0; bit <<= 1 {
		if namespaceFlags&bit != 0 {
			cloneNS = append(cloneNS, seccomp.NameWithConditions{Name: "clone",
				Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: bit}}})
		}
	}
	ioctls := []seccomp.NameWithConditions{
		{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.Equal, Value: unix.TIOCSTI}}},
		{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.Equal, Value: unix.TIOCLINUX}}},
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			{Action: seccomp.ActionErrno, NamesWithCondtions: append(cloneNS, ioctls...)},
			// ENOSYS, not EPERM: clone3's flags live in memory the filter cannot read, and libc falls back to
			// clone on ENOSYS, whose flags the rule above checks.
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// loadSeccomp installs the deny-list on the calling thread, which then execs. The library's program lets any
// other architecture through to its default action, so a guard in front refuses non-native system calls
// (the 32-bit int 0x80 entry would otherwise bypass every rule).
func loadSeccomp() error {
	policy := seccompPolicy()
	insts, err := policy.Assemble()
	if err != nil {
		return fmt.Errorf("assemble seccomp policy: %w", err)
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}
	raw, err := bpf.Assemble(append(guard, insts...))
	if err != nil {
		return fmt.Errorf("assemble seccomp program: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("load seccomp filter: %w", e)
	}
	return nil
}

// applyLandlock confines file access to reading the new root and writing home, /tmp and /dev/shm, scopes
// abstract unix sockets and signals to the sandbox, and without host network forbids TCP entirely. It
// restricts only the calling thread, the one that execs.
func applyLandlock(hostNetwork bool) bool {
	cfg := landlock.V9.BestEffort()
	if hostNetwork {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWDirs("/home/user", "/tmp", "/dev/shm"),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty"),
	)
	if err != nil || fd < 0 {
		return false
	}
	defer unix.Close(fd)
	_, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), uintptr(flags), 0)
	return e == 0
}
