package local

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// childFDs are the zygote's descriptor numbers of what a spawn request brought; the child inherits them.
type childFDs struct {
	stdout, stderr int
	mapped         int // read end: one byte from the zygote once the child's ids are mapped
	goAhead        int // read end: one byte from the parent once the child is in its cgroups and recorded
	errW           int // write end, close-on-exec: a childFailure, or EOF when the final execve succeeded
	alive          int // write end, close-on-exec: one byte as soon as the child runs
	home, tmp      int // detached mounts (root) or O_PATH directories of home and /tmp
	template       int // a clone of the zygote's ready-made root (see rootTemplate), or -1
}

const newRoot = "/tmp" // mount point of the new root's tmpfs in the child; the host's /tmp is never bound

// inRoot returns where path p of the sandbox lies while the new root is built.
func inRoot(p string) string { return newRoot + p }

// childProgramFor assembles the system calls that make a forked child into the sandbox cfg describes and
// exec its command: the same steps, in the same order, as docs/security.md lists.
func childProgramFor(cfg *childConfig, fds childFDs, sec *sandboxStatics) (*childProgram, error) {
	p := &childProgram{}
	b := rootOps{p}
	sys, str, mkdir, mkdirAll, mount := b.sys, p.bytes, b.mkdir, b.mkdirAll, b.mount

	one := make([]byte, 1)
	p.keep = append(p.keep, one)
	sys("say the process runs", unix.SYS_WRITE, uintptr(fds.alive), uintptr(unsafe.Pointer(&one[0])), 1)
	sys("set the parent-death signal", unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL))
	// The OOM killer's first choice: when the host runs out of memory, sandboxed code goes before the
	// graph process and the zygote (whose death would end every sandbox's commands).
	adj := sys("open oom_score_adj", unix.SYS_OPENAT, atFDCWD, str("/proc/self/oom_score_adj"),
		uintptr(unix.O_WRONLY|unix.O_CLOEXEC))
	p.callFrom("set oom_score_adj", unix.SYS_WRITE, 0, adj, 0, str("1000"), 4)
	p.callFrom("close oom_score_adj", unix.SYS_CLOSE, 0, adj)
	sys("setsid", unix.SYS_SETSID)
	r := sys("wait for the id mapping", unix.SYS_READ, uintptr(fds.mapped), uintptr(unsafe.Pointer(&one[0])), 1)
	p.ops[r].want = 1
	sys("close the id mapping pipe", unix.SYS_CLOSE, uintptr(fds.mapped))
	// The sandbox user from here on (its ids are mapped now), keeping the namespace's capabilities: no id
	// was 0 inside, so the kernel does not drop them. Files made while the root is built must belong to a
	// mapped user.
	sys("setresgid", unix.SYS_SETRESGID, sandboxUID, sandboxUID, sandboxUID)
	sys("setresuid", unix.SYS_SETRESUID, sandboxUID, sandboxUID, sandboxUID)

	// The new root.
	mount("make / private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	// Without detached mounts from the parent, home and /tmp are cloned here, in this mount namespace,
	// before the new root's tmpfs covers /tmp, where they may lie.
	homeTree, tmpTree := -1, -1
	if !cfg.MountFDs {
		flags := uintptr(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_SYMLINK_NOFOLLOW)
		homeTree = sys("clone home "+cfg.HomeSrc, unix.SYS_OPEN_TREE, atFDCWD, str(cfg.HomeSrc), flags)
		tmpTree = sys("clone /tmp "+cfg.TmpSrc, unix.SYS_OPEN_TREE, atFDCWD, str(cfg.TmpSrc), flags)
	}
	if fds.template >= 0 {
		sys("attach the root", unix.SYS_MOVE_MOUNT, uintptr(fds.template), str(""), atFDCWD, str(newRoot),
			unix.MOVE_MOUNT_F_EMPTY_PATH)
		mount("mount /dev/shm", "tmpfs", inRoot("/dev/shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			fmt.Sprintf("size=%d,mode=1777", cfg.TmpfsBytes))
	} else if err := buildRootOps(p, cfg); err != nil {
		return nil, err
	}

	// Home and /tmp, read-write, nosuid, nodev.
	for _, m := range []struct {
		fd, tree int
		dst      string
	}{{fds.home, homeTree, inRoot("/home/user")}, {fds.tmp, tmpTree, inRoot("/tmp")}} {
		if fds.template < 0 {
			mkdirAll(m.dst)
		}
		if cfg.MountFDs {
			sys("attach "+m.dst, unix.SYS_MOVE_MOUNT, uintptr(m.fd), str(""), atFDCWD, str(m.dst),
				unix.MOVE_MOUNT_F_EMPTY_PATH)
			continue
		}
		p.callFrom("attach "+m.dst, unix.SYS_MOVE_MOUNT, 0, m.tree, 0, str(""), atFDCWD, str(m.dst),
			unix.MOVE_MOUNT_F_EMPTY_PATH)
		mount("restrict "+m.dst, "", m.dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, "")
	}

	// A fresh /proc for the new pid namespace; the keyring files masked, /proc/sys read-only.
	if fds.template < 0 {
		mkdir(inRoot("/proc"), 0o555)
	}
	mount("mount /proc", "proc", inRoot("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	for _, f := range []string{"/proc/keys", "/proc/key-users"} {
		i := mount("mask "+f, inRoot("/dev/null"), inRoot(f), "", unix.MS_BIND, "")
		p.ops[i].okErrno = syscall.ENOENT
	}
	mount("bind /proc/sys", inRoot("/proc/sys"), inRoot("/proc/sys"), "", unix.MS_BIND|unix.MS_REC, "")
	mount("make /proc/sys read-only", "", inRoot("/proc/sys"), "",
		unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")

	// Into the new root; the old one is detached, the new one made read-only.
	sys("chdir to the new root", unix.SYS_CHDIR, str(newRoot))
	sys("pivot_root", unix.SYS_PIVOT_ROOT, str("."), str("."))
	sys("detach the old root", unix.SYS_UMOUNT2, str("."), unix.MNT_DETACH)
	sys("chdir /", unix.SYS_CHDIR, str("/"))
	if fds.template < 0 { // a template is read-only already
		mount("make / read-only", "", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	}

	host := []byte(cfg.Hostname)
	p.keep = append(p.keep, host)
	sys("sethostname", unix.SYS_SETHOSTNAME, uintptr(unsafe.Pointer(&host[0])), uintptr(len(host)))
	if !cfg.HostNetwork && !cfg.SandboxNetwork {
		ifr := &ifreqFlags{flags: unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING}
		copy(ifr.name[:], "lo")
		sock := sys("socket for lo", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		p.callFrom("bring lo up", unix.SYS_IOCTL, 0, sock, 0, unix.SIOCSIFFLAGS, p.ptr(ifr, unsafe.Pointer(ifr)))
		p.callFrom("close the lo socket", unix.SYS_CLOSE, 0, sock)
	}
	sys("umask", unix.SYS_UMASK, 0o022)
	sys("chdir "+cfg.Cwd, unix.SYS_CHDIR, str(cfg.Cwd))
	sys("join a new session keyring", unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0)

	// Capabilities: the bounding set first (dropping it needs CAP_SETPCAP), the other sets after landlock.
	for c := 0; c <= sec.lastCap; c++ {
		sys("drop capability "+strconv.Itoa(c), unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c))
	}
	sys("no_new_privs", unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1)
	if cfg.Landlock && sec.landlockABI > 0 {
		landlockOps(p, sec.landlockABI, cfg.HostNetwork, cfg.EgressPort)
	}
	sys("clear ambient capabilities", unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL)
	capHdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	capData := &[2]unix.CapUserData{}
	sys("capset", unix.SYS_CAPSET, p.ptr(capHdr, unsafe.Pointer(capHdr)), p.ptr(capData, unsafe.Pointer(capData)))
	sys("load the seccomp filter", unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0,
		p.ptr(sec.seccomp, unsafe.Pointer(sec.seccomp)))

	// Descriptors: the output pipes become 1 and 2, /dev/null 0; everything else closes at exec.
	null := sys("open /dev/null", unix.SYS_OPENAT, atFDCWD, str("/dev/null"), uintptr(unix.O_RDONLY), 0)
	p.callFrom("stdin", unix.SYS_DUP3, 0, null, 0, 0)
	sys("stdout", unix.SYS_DUP3, uintptr(fds.stdout), 1, 0)
	sys("stderr", unix.SYS_DUP3, uintptr(fds.stderr), 2, 0)
	sys("close_range", unix.SYS_CLOSE_RANGE, 3, ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC)
	for _, r := range cfg.Rlimits {
		lim := &unix.Rlimit{Cur: r.Cur, Max: r.Max}
		sys("setrlimit "+strconv.Itoa(r.Resource), unix.SYS_PRLIMIT64, 0, uintptr(r.Resource), p.ptr(lim, unsafe.Pointer(lim)), 0)
	}
	// Signal handlers of the zygote reset, and the mask it blocked for the fork cleared, just before exec.
	dfl := &sigaction{}
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		i := sys("reset signal "+strconv.Itoa(sig), unix.SYS_RT_SIGACTION, uintptr(sig), p.ptr(dfl, unsafe.Pointer(dfl)), 0, 8)
		p.ops[i].okErrno = syscall.EINVAL
	}
	empty := new(uint64)
	sys("unblock signals", unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, p.ptr(empty, unsafe.Pointer(empty)), 0, 8)
	// The setup above ran while the parent put this process into the sandbox's cgroups and recorded it;
	// the command itself starts only once both are done.
	r = sys("wait for the go-ahead", unix.SYS_READ, uintptr(fds.goAhead), uintptr(unsafe.Pointer(&one[0])), 1)
	p.ops[r].want = 1
	argv, err := syscall.SlicePtrFromStrings(cfg.Argv)
	if err != nil {
		return nil, err
	}
	envp, err := syscall.SlicePtrFromStrings(cfg.Env)
	if err != nil {
		return nil, err
	}
	p.keep = append(p.keep, argv, envp)
	sys("exec "+cfg.Argv[0], unix.SYS_EXECVE, str(cfg.Argv[0]), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envp[0])))
	p.results = make([]uintptr, len(p.ops))
	return p, nil
}

// ifreqFlags is struct ifreq with its flags member.
type ifreqFlags struct {
	name  [unix.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// sigaction is the kernel's struct sigaction with SIG_DFL and no flags.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// remountFlags are the flags of a read-only remount of a bind: want plus those of the source mount that
// the kernel will not let a user namespace clear.
func remountFlags(stFlags int64, want uintptr) uintptr {
	flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT) | want
	for _, f := range []struct {
		st int64
		ms uintptr
	}{{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}} {
		if stFlags&f.st != 0 {
			flags |= f.ms
		}
	}
	return flags
}

// Landlock access rights (include/uapi/linux/landlock.h).
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llTruncate   = 1 << 14
	llFSWrite    = llWriteFile | 0x1ff0 | llTruncate // remove dir/file, make char/dir/reg/sock/fifo/block/sym
	llFSRead     = llExecute | llReadFile | llReadDir
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate
)

// landlockOps confines file access to reading the new root and writing home, /tmp and /dev/shm, scopes
// abstract unix sockets and signals to the sandbox, and without host network forbids TCP entirely.
func landlockOps(p *childProgram, abi int, hostNetwork bool, egressPort int) {
	fsBits := map[int]uint64{1: 1<<13 - 1, 2: 1<<14 - 1, 3: 1<<15 - 1, 4: 1<<15 - 1, 5: 1<<16 - 1, 6: 1<<16 - 1,
		7: 1<<16 - 1, 8: 1<<16 - 1}[min(abi, 9)]
	if abi >= 9 {
		fsBits = 1<<17 - 1
	}
	attr := &[3]uint64{fsBits}
	size := uintptr(8)
	if abi >= 4 {
		if !hostNetwork {
			attr[1] = 1<<2 - 1 // bind and connect TCP
		}
		size = 16
	}
	if abi >= 6 {
		attr[2] = 1<<2 - 1 // abstract unix sockets, signals
		size = 24
	}
	rs := p.call("landlock ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, p.ptr(attr, unsafe.Pointer(attr)), size, 0)
	rule := func(path string, access uint64) {
		// struct landlock_path_beneath_attr is packed: a u64 then an s32.
		buf := make([]byte, 12)
		*(*uint64)(unsafe.Pointer(&buf[0])) = access & fsBits
		addr := p.ptr(buf, unsafe.Pointer(&buf[0]))
		fd := p.call("open "+path+" for landlock", unix.SYS_OPENAT, atFDCWD, p.bytes(path),
			uintptr(unix.O_PATH|unix.O_CLOEXEC), 0)
		st := p.add("note "+path, sysOp{store: (*int32)(unsafe.Pointer(&buf[8]))})
		p.ops[st].from[1] = int16(fd + 1)
		var o sysOp
		o.nr = unix.SYS_LANDLOCK_ADD_RULE
		o.args = [6]uintptr{0, unix.LANDLOCK_RULE_PATH_BENEATH, addr, 0}
		o.from[0] = int16(rs + 1)
		p.add("landlock rule for "+path, o)
		p.callFrom("close "+path, unix.SYS_CLOSE, 0, fd)
	}
	rule("/", llFSRead)
	for _, d := range []string{"/home/user", "/tmp", "/dev/shm"} {
		rule(d, llFSRead|llFSWrite)
	}
	for _, f := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		rule(f, (llFSRead|llFSWrite)&llFileRights)
	}
	if egressPort != 0 && abi >= 4 && !hostNetwork {
		// struct landlock_net_port_attr: allowed access, then the port, both u64.
		attr := &[2]uint64{1 << 1, uint64(egressPort)} // connect TCP
		var o sysOp
		o.nr = unix.SYS_LANDLOCK_ADD_RULE
		o.args = [6]uintptr{0, 2 /* LANDLOCK_RULE_NET_PORT */, p.ptr(attr, unsafe.Pointer(attr)), 0}
		o.from[0] = int16(rs + 1)
		p.add("landlock rule for the egress proxy", o)
	}
	p.callFrom("landlock_restrict_self", unix.SYS_LANDLOCK_RESTRICT_SELF, 0, rs, 0)
	p.callFrom("close the ruleset", unix.SYS_CLOSE, 0, rs)
}

// sandboxStatics are what every child program shares, found once per zygote.
type sandboxStatics struct {
	seccomp     *unix.SockFprog
	filter      []unix.SockFilter
	lastCap     int
	landlockABI int
}

func loadStatics() (*sandboxStatics, error) {
	a, err := seccompArch()
	if err != nil {
		return nil, err
	}
	insts, err := seccompProgram(a)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp program: %w", err)
	}
	s := &sandboxStatics{filter: make([]unix.SockFilter, len(raw)), lastCap: 40}
	for i, r := range raw {
		s.filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	s.seccomp = &unix.SockFprog{Len: uint16(len(s.filter)), Filter: &s.filter[0]}
	if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			s.lastCap = n
		}
	}
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e == 0 {
		s.landlockABI = int(abi)
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

// buildRootOps appends the ops that build the new root by hand: a tmpfs filled with read-only binds of the
// allow-list, /etc, the wrappers and /dev. The zygote's template (rootTemplate) does the same once.
func buildRootOps(p *childProgram, cfg *childConfig) error {
	b := rootOps{p}
	b.mount("mount the root tmpfs", "tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=16m,mode=0755")
	for _, d := range cfg.Binds {
		if err := b.bindRO(d, inRoot(d), true); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(cfg.Symlinks) {
		b.sys("symlink /"+name, unix.SYS_SYMLINKAT, p.bytes(cfg.Symlinks[name]), atFDCWD, p.bytes(inRoot("/"+name)))
	}
	b.mkdir(inRoot("/etc"), 0o755)
	for _, name := range sortedKeys(cfg.EtcFiles) {
		b.writeFile(inRoot("/etc/"+name), cfg.EtcFiles[name], 0o644)
	}
	for _, e := range cfg.EtcBinds {
		fi, err := os.Lstat(e)
		if err != nil {
			continue // the allow-list names what may exist; absence is fine
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(e); err == nil {
				b.mkdirAll(filepath.Dir(inRoot(e)))
				b.sys("symlink "+e, unix.SYS_SYMLINKAT, p.bytes(target), atFDCWD, p.bytes(inRoot(e)))
			}
			continue
		}
		if err := b.bindRO(e, inRoot(e), fi.IsDir()); err != nil {
			return err
		}
	}
	b.mkdirAll(inRoot("/opt/agentgraph/bin"))
	for _, name := range sortedKeys(cfg.Wrappers) {
		w := cfg.Wrappers[name]
		if target, ok := strings.CutPrefix(w, "symlink:"); ok {
			b.sys("symlink "+name, unix.SYS_SYMLINKAT, p.bytes(target), atFDCWD, p.bytes(inRoot("/opt/agentgraph/bin/"+name)))
			continue
		}
		b.writeFile(inRoot("/opt/agentgraph/bin/"+name), w, 0o755)
	}

	// /dev: a small tmpfs of bound device nodes, and a size-capped /dev/shm.
	dev := inRoot("/dev")
	b.mkdir(dev, 0o755)
	b.mount("mount /dev", "tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755")
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		b.touch(dev+"/"+name, 0o666)
		b.mount("bind /dev/"+name, "/dev/"+name, dev+"/"+name, "", unix.MS_BIND, "")
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		b.sys("symlink /dev/"+l[0], unix.SYS_SYMLINKAT, p.bytes(l[1]), atFDCWD, p.bytes(dev+"/"+l[0]))
	}
	b.mkdir(dev+"/shm", 0o1777)
	b.mount("mount /dev/shm", "tmpfs", dev+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		fmt.Sprintf("size=%d,mode=1777", cfg.TmpfsBytes))
	b.mount("make /dev read-only", "", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755")

	return nil
}

// rootOps appends the ops of file and mount work to a program.
type rootOps struct{ p *childProgram }

func (b rootOps) sys(what string, nr uintptr, args ...uintptr) int {
	return b.p.call(what, nr, args...)
}

func (b rootOps) mkdir(path string, mode uint32) {
	i := b.sys("mkdir "+path, unix.SYS_MKDIRAT, atFDCWD, b.p.bytes(path), uintptr(mode))
	b.p.ops[i].okErrno = syscall.EEXIST
}

func (b rootOps) mkdirAll(path string) {
	var parts []string
	for d := path; d != newRoot && d != "/" && d != "."; d = filepath.Dir(d) {
		parts = append(parts, d)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		b.mkdir(parts[i], 0o755)
	}
}

func (b rootOps) touch(path string, mode uint32) {
	fd := b.sys("create "+path, unix.SYS_OPENAT, atFDCWD, b.p.bytes(path),
		uintptr(unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC), uintptr(mode))
	b.p.callFrom("close "+path, unix.SYS_CLOSE, 0, fd)
}

func (b rootOps) writeFile(path, content string, mode uint32) {
	fd := b.sys("create "+path, unix.SYS_OPENAT, atFDCWD, b.p.bytes(path),
		uintptr(unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC), uintptr(mode))
	if content != "" {
		data := []byte(content)
		b.p.keep = append(b.p.keep, data)
		w := b.p.callFrom("write "+path, unix.SYS_WRITE, 0, fd, 0, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)))
		b.p.ops[w].want = uintptr(len(data))
	}
	b.p.callFrom("close "+path, unix.SYS_CLOSE, 0, fd)
}

func (b rootOps) mount(what, src, dst, fstype string, flags uintptr, data string) int {
	var s, t, d uintptr
	if src != "" {
		s = b.p.bytes(src)
	}
	if fstype != "" {
		t = b.p.bytes(fstype)
	}
	if data != "" {
		d = b.p.bytes(data)
	}
	return b.sys(what, unix.SYS_MOUNT, s, b.p.bytes(dst), t, flags, d)
}

// bindRO binds src read-only at dst, keeping the flags the kernel locks on mounts from outside the user
// namespace (found by the zygote with statfs).
func (b rootOps) bindRO(src, dst string, dir bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(src, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", src, err)
	}
	if dir {
		b.mkdirAll(dst)
	} else {
		b.mkdirAll(filepath.Dir(dst))
		b.touch(dst, 0o644)
	}
	b.mount("bind "+src, src, dst, "", unix.MS_BIND|unix.MS_REC, "")
	b.mount("remount "+dst+" read-only", "", dst, "", remountFlags(int64(st.Flags), unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV), "")
	return nil
}
