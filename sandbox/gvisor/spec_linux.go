package gvisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// The parts of the OCI runtime spec (config.json) that a container here uses.
type ociSpec struct {
	OCIVersion string     `json:"ociVersion"`
	Process    ociProcess `json:"process"`
	Root       ociRoot    `json:"root"`
	Hostname   string     `json:"hostname"`
	Mounts     []ociMount `json:"mounts"`
	Linux      ociLinux   `json:"linux"`
}

type ociProcess struct {
	User            ociUser         `json:"user"`
	Args            []string        `json:"args"`
	Env             []string        `json:"env"`
	Cwd             string          `json:"cwd"`
	Capabilities    ociCapabilities `json:"capabilities"`
	Rlimits         []ociRlimit     `json:"rlimits"`
	NoNewPrivileges bool            `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociCapabilities struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Inheritable []string `json:"inheritable"`
	Permitted   []string `json:"permitted"`
	Ambient     []string `json:"ambient"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces  []ociNamespace `json:"namespaces"`
	UIDMappings []ociIDMap     `json:"uidMappings"`
	GIDMappings []ociIDMap     `json:"gidMappings"`
	CgroupsPath string         `json:"cgroupsPath,omitempty"`
	Seccomp     *ociSeccomp    `json:"seccomp,omitempty"`
	MaskedPaths []string       `json:"maskedPaths,omitempty"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

type ociIDMap struct {
	ContainerID uint32 `json:"containerID"`
	HostID      uint32 `json:"hostID"`
	Size        uint32 `json:"size"`
}

type ociSeccomp struct {
	DefaultAction string           `json:"defaultAction"`
	Architectures []string         `json:"architectures"`
	Syscalls      []ociSyscallRule `json:"syscalls"`
}

type ociSyscallRule struct {
	Names  []string     `json:"names"`
	Action string       `json:"action"`
	Args   []ociArgRule `json:"args,omitempty"`
}

type ociArgRule struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// sandboxUID is the sandbox user inside, as in the local backend.
const sandboxUID = 1000

// seccompRules keep the local backend's system-call contract inside gVisor's kernel: these calls fail with
// EPERM there too, so code sees one behaviour on both backends, and gVisor's own kernel is reached through
// fewer doors. clone3 fails with ENOSYS (a traced call with no tracer) so that libc falls back to clone,
// whose namespace flags the filter can see.
func seccompRules() *ociSeccomp {
	deny := []string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
		"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
		"fspick", "mount_setattr", "setns", "unshare",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
		"swapon", "swapoff", "acct", "quotactl", "syslog", "name_to_handle_at", "open_by_handle_at",
		"personality", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "mknod", "mknodat"}
	rules := []ociSyscallRule{
		{Names: deny, Action: "SCMP_ACT_ERRNO"},
		{Names: []string{"clone3"}, Action: "SCMP_ACT_TRACE"},
	}
	const (
		cloneNewNS     = 0x00020000
		cloneNewCgroup = 0x02000000
		cloneNewUTS    = 0x04000000
		cloneNewIPC    = 0x08000000
		cloneNewUser   = 0x10000000
		cloneNewPID    = 0x20000000
		cloneNewNet    = 0x40000000
		tiocsti        = 0x5412
		tioclinux      = 0x541c
	)
	for _, f := range []uint64{cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet} {
		rules = append(rules, ociSyscallRule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO",
			Args: []ociArgRule{{Index: 0, Value: f, ValueTwo: f, Op: "SCMP_CMP_MASKED_EQ"}}})
	}
	for _, req := range []uint64{tiocsti, tioclinux} {
		rules = append(rules, ociSyscallRule{Names: []string{"ioctl"}, Action: "SCMP_ACT_ERRNO",
			Args: []ociArgRule{{Index: 1, Value: req, Op: "SCMP_CMP_EQ"}}})
	}
	return &ociSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Architectures: []string{"SCMP_ARCH_X86_64"}, Syscalls: rules}
}

// spec is the container for one command of sandbox s.
func (b *Backend) spec(s *sbx, m *meta, cid string, argv, env []string, cwd string, diskLeft int64, timeout time.Duration) *ociSpec {
	lim := m.Limits
	rl := func(name string, v uint64) ociRlimit { return ociRlimit{Type: name, Hard: v, Soft: v} }
	rlimits := []ociRlimit{
		rl("RLIMIT_NOFILE", 1024),
		rl("RLIMIT_CORE", 0),
		rl("RLIMIT_FSIZE", uint64(max(diskLeft, 1))),
		rl("RLIMIT_NPROC", uint64(max(lim.Pids, 1))),
	}
	if !b.cfg.cgroups {
		rlimits = append(rlimits, rl("RLIMIT_AS", uint64(lim.MemoryBytes)))
		if timeout > 0 {
			rlimits = append(rlimits, rl("RLIMIT_CPU", uint64(timeout/time.Second)*uint64(max(lim.CPUs, 1))+1))
		}
	}
	ro := []string{"rbind", "ro", "nosuid", "nodev"}
	mounts := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777"}},
	}
	for _, p := range b.rootfs.binds {
		mounts = append(mounts, ociMount{Destination: p, Type: "bind", Source: p, Options: ro})
	}
	rw := []string{"rbind", "rw", "nosuid", "nodev"}
	mounts = append(mounts,
		ociMount{Destination: sandbox.Home, Type: "bind", Source: s.home(), Options: rw},
		ociMount{Destination: sandbox.Tmp, Type: "bind", Source: s.tmp(), Options: rw})
	if m.HostNetwork {
		if _, err := os.Stat("/etc/resolv.conf"); err == nil {
			mounts = append(mounts, ociMount{Destination: "/etc/resolv.conf", Type: "bind", Source: "/etc/resolv.conf", Options: ro})
		}
	}
	idmap := []ociIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: sandboxUID, HostID: uint32(m.HostUID), Size: 1}}
	sp := &ociSpec{
		OCIVersion: "1.0.0",
		Process: ociProcess{
			User:            ociUser{UID: sandboxUID, GID: sandboxUID},
			Args:            argv,
			Env:             env,
			Cwd:             cwd,
			Capabilities:    ociCapabilities{Bounding: []string{}, Effective: []string{}, Inheritable: []string{}, Permitted: []string{}, Ambient: []string{}},
			Rlimits:         rlimits,
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: b.rootfs.dir, Readonly: true},
		Hostname: "sandbox",
		Mounts:   mounts,
		Linux: ociLinux{
			Namespaces:  []ociNamespace{{"pid"}, {"network"}, {"ipc"}, {"uts"}, {"mount"}, {"user"}},
			UIDMappings: idmap,
			GIDMappings: idmap,
			Seccomp:     seccompRules(),
		},
	}
	if b.cfg.cgroups {
		sp.Linux.CgroupsPath = cgroupsPath(s.id)
	}
	return sp
}

func writeSpec(bundle string, sp *ociSpec) error {
	data, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
}
