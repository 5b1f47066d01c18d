package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/hostroot"
	"golang.org/x/sys/unix"
)

// proc is one command's sandboxed process, from start to exit.
type proc struct {
	s              *sbx
	command        string
	stdout, stderr *tailBuffer
	started        time.Time
	record         string
	exited         chan struct{}
	killOnce       sync.Once
	timedOut       atomic.Bool
	cancelled      atomic.Bool
	quotaHit       atomic.Bool
	quota          int64
	kernelQuota    bool   // the sandbox's disk image holds the quota; nothing to watch
	stopProxy      func() // ends the command's egress proxy, if it has one
	duration       time.Duration
	exitCode       int
	signal         int
	ending         sandbox.Ending
	oomBefore      int64 // the sandbox's memory cgroup's OOM kill count when the command started; -1 unknown
	oomKilled      bool
	diskFull       bool

	pid     int
	sigkill func()                    // SIGKILL to the process (pid 1 of its namespace) or the unsafe group
	await   func() syscall.WaitStatus // blocks until the process exited and its output is drained
}

const pathEnv = "/opt/agentgraph/bin:/home/user/.local/bin:/usr/local/bin:/usr/bin:/bin"

// buildEnv builds the environment from nothing: base variables, then the sandbox's, then the command's.
func buildEnv(layers ...map[string]string) ([]string, error) {
	env := map[string]string{
		"PATH": pathEnv, "HOME": sandbox.Home, "USER": "user", "LOGNAME": "user", "SHELL": "/bin/sh",
		"LANG": "C.UTF-8", "TMPDIR": sandbox.Tmp,
	}
	for _, l := range layers {
		for k, v := range l {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
				return nil, fmt.Errorf("%w: environment variable %q", sandbox.ErrInvalidArgument, k)
			}
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// start launches command in a fresh set of namespaces. The sandbox must be running. timeout 0 means none.
// ctx bounds the command's life for Exec; Start passes a context that outlives the call.
func (s *sbx) start(ctx context.Context, command string, opts sandbox.ExecOptions, timeout time.Duration) (*proc, error) {
	if strings.IndexByte(command, 0) >= 0 {
		return nil, fmt.Errorf("%w: the command contains a NUL byte", sandbox.ErrInvalidArgument)
	}
	cwd := sandbox.Home
	if opts.Cwd != "" {
		c, err := sandbox.ResolvePath(opts.Cwd)
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		cwd = c
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer func() { unlock() }()
	m, err := s.readMeta()
	if err != nil {
		return nil, err
	}
	if m.State == sandbox.StateRunning && s.b.cfg.now().After(m.ExpiresAt) {
		// Past its TTL but not reaped yet: stop it now rather than run one more command.
		unlock()
		unlock = func() {}
		if err := s.Stop(ctx); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: its TTL ran out at %s: call Resume to run commands again", sandbox.ErrStopped, s.id, m.ExpiresAt.Format(time.RFC3339))
	}
	if m.State == sandbox.StateStopped {
		return nil, fmt.Errorf("%w: %s: call Resume before running commands", sandbox.ErrStopped, s.id)
	}
	if err := s.checkDir(m, cwd); err != nil {
		return nil, err
	}
	var proxyEnv map[string]string
	if m.Egress {
		proxy := fmt.Sprintf("http://127.0.0.1:%d", EgressPort)
		proxyEnv = map[string]string{"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy}
	}
	env, err := buildEnv(proxyEnv, m.Env, opts.Env)
	if err != nil {
		return nil, err
	}
	// With a disk image the file system refuses writes past the quota, and a full sandbox still runs
	// commands, which is how the code frees space. Without one the quota is measured, and a command does
	// not start over it.
	diskLeft := m.Limits.DiskBytes
	if !m.DiskImage {
		used, err := s.diskUsage()
		if err != nil {
			return nil, fmt.Errorf("measure disk use of %s: %w", s.id, err)
		}
		if used >= m.Limits.DiskBytes {
			return nil, fmt.Errorf("%w: %s uses %d of %d bytes: remove files from home or /tmp", sandbox.ErrQuota, s.id, used, m.Limits.DiskBytes)
		}
		diskLeft -= used
	}
	p := &proc{s: s, command: command, stdout: newTailBuffer(s.b.cfg.outputLimit),
		stderr: newTailBuffer(s.b.cfg.outputLimit), exited: make(chan struct{}), quota: m.Limits.DiskBytes,
		kernelQuota: m.DiskImage}
	if s.b.cfg.unsafeNoIso {
		err = p.spawnUnsafe(m, env, cwd)
	} else {
		err = p.spawn(ctx, m, env, cwd, diskLeft, timeout)
	}
	if err != nil {
		return nil, err
	}
	go p.supervise(ctx, timeout)
	return p, nil
}

// setupTimeout bounds the setup before the command starts, so a child stuck in the kernel cannot
// hang Exec. Healthy setup takes milliseconds, but a thousand commands started at once on two cores queue for
// tens of seconds, so the bound is generous.
const setupTimeout = 5 * time.Minute

// spawn starts the command in a new sandboxed process: it opens the process's mounts and pipes, has the
// zygote fork it, follows it, limits and records it, then lets it go on and waits until the command runs.
func (p *proc) spawn(ctx context.Context, m *meta, env []string, cwd string, diskLeft int64, timeout time.Duration) error {
	s := p.s
	cfg := s.b.childConfig(m, p.command, env, cwd, diskLeft, timeout)
	cfg.MountFDs = os.Geteuid() == 0
	cfg.HomeSrc, cfg.TmpSrc = s.home(), s.tmp()
	if m.Egress {
		cfg.EgressPort = EgressPort
	}
	var cgroups []string
	if s.b.cfg.cgroups {
		var err error
		if cgroups, err = prepareCgroups(s.id, m.Limits, s.b.cgroupLimited(s.id)); err != nil {
			return fmt.Errorf("limit %s with cgroups: %w (or use local.WithoutCgroups)", s.id, err)
		}
	}
	// A sandbox without network and without an egress proxy (which listens in each command's namespace)
	// keeps one network namespace for all its commands, held by the zygote's thread in its cgroups: a
	// namespace costs about a millisecond to make and as much again to tear down.
	cfg.SandboxNetwork = len(cgroups) > 0 && !m.HostNetwork && !m.Egress
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	f, err := openHelperFiles(s, cfg.MountFDs)
	if err != nil {
		return err
	}
	// The child has its own copies; the parent keeps its end of the go-ahead pipe only until setup ends.
	defer closeFiles(f.home, f.tmp, f.goW)
	st, execd, exited, err := p.startHelper(m, raw, cgroups, cfg.SandboxNetwork, f)
	if err != nil {
		return err
	}
	p.follow(st, exited, f.outR, f.errOutR)
	if st.listener != nil {
		l, err := net.FileListener(st.listener)
		st.listener.Close()
		if err != nil {
			return p.abandon(fmt.Errorf("egress proxy of %s: %w", s.id, err))
		}
		p.stopProxy = serveEgress(l, s.b.cfg.egress, s.b.cfg.egressDial)
	}
	if err := p.writeRecord(); err != nil {
		return p.abandon(err)
	}
	if err := p.configure(ctx, f.goW, execd); err != nil {
		p.removeRecord()
		return p.abandon(err)
	}
	return nil
}

// helperFiles are the descriptors a command's process starts with and the parent's ends of its pipes.
type helperFiles struct {
	home, tmp        *os.File // the sandbox's home and /tmp (see openMount)
	goR, goW         *os.File // one byte from the parent once the process is limited and recorded
	outR, outW       *os.File // the command's stdout
	errOutR, errOutW *os.File // the command's stderr
}

// openHelperFiles opens the mounts and pipes of one command. On failure it closes what it opened.
func openHelperFiles(s *sbx, clone bool) (*helperFiles, error) {
	f := &helperFiles{}
	opened := func() []*os.File {
		return []*os.File{f.home, f.tmp, f.goR, f.goW, f.outR, f.outW, f.errOutR, f.errOutW}
	}
	var err error
	if f.home, err = openMount(s.home(), clone); err != nil {
		return nil, err
	}
	if f.tmp, err = openMount(s.tmp(), clone); err != nil {
		closeFiles(opened()...)
		return nil, err
	}
	for _, pipe := range []struct{ r, w **os.File }{{&f.goR, &f.goW}, {&f.outR, &f.outW}, {&f.errOutR, &f.errOutW}} {
		if *pipe.r, *pipe.w, err = os.Pipe(); err != nil {
			closeFiles(opened()...)
			return nil, err
		}
	}
	return f, nil
}

// closeFiles closes every file that is not nil.
func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// startHelper has the zygote fork the command's process in new namespaces (but the network namespace of
// its sandbox's forker thread when sandboxNetwork is set) with the child's ends of f,
// which the parent then closes. On failure it closes the output pipes too.
func (p *proc) startHelper(m *meta, cfg []byte, cgroups []string, sandboxNetwork bool, f *helperFiles) (zstart, <-chan error, <-chan syscall.WaitStatus, error) {
	cloneflags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if !m.HostNetwork && !sandboxNetwork {
		cloneflags |= syscall.CLONE_NEWNET
	}
	z, err := p.s.b.zygote()
	var st zstart
	var execd <-chan error
	var exited <-chan syscall.WaitStatus
	if err == nil {
		st, execd, exited = z.spawn(zmsg{Cloneflags: cloneflags, HostUID: m.HostUID, HostGID: hostGID(m.HostUID), Config: cfg,
			Egress: m.Egress, Cgroups: cgroups, SandboxNetwork: sandboxNetwork},
			[]*os.File{f.outW, f.errOutW, f.goR, f.home, f.tmp})
		err = st.err
	}
	closeFiles(f.goR, f.outW, f.errOutW)
	if err != nil {
		closeFiles(f.outR, f.errOutR)
		return zstart{}, nil, nil, fmt.Errorf("%w: start the sandboxed process: %v (does this kernel allow user namespaces?)", sandbox.ErrUnsupported, err)
	}
	return st, execd, exited, nil
}

// follow takes charge of a started process: it copies the command's output into p's buffers (closing outR
// and errOutR when drained) and sets how p signals the process and waits for it.
func (p *proc) follow(st zstart, exited <-chan syscall.WaitStatus, outR, errOutR *os.File) {
	p.started = time.Now()
	p.pid = st.pid
	var copying sync.WaitGroup
	copying.Go(func() { io.Copy(p.stdout, outR); outR.Close() })
	copying.Go(func() { io.Copy(p.stderr, errOutR); errOutR.Close() })
	var pidfdMu sync.Mutex
	pidfd := st.pidfd
	p.sigkill = func() {
		pidfdMu.Lock()
		defer pidfdMu.Unlock()
		if pidfd != nil {
			unix.PidfdSendSignal(int(pidfd.Fd()), unix.SIGKILL, nil, 0)
		}
	}
	p.await = func() syscall.WaitStatus {
		ws := <-exited
		copying.Wait()
		pidfdMu.Lock()
		if pidfd != nil {
			pidfd.Close()
			pidfd = nil
		}
		pidfdMu.Unlock()
		return ws
	}
}

// abandon kills a process that failed to start its command, waits for it and returns err.
func (p *proc) abandon(err error) error {
	p.kill()
	p.await()
	return err
}

// addRecord makes the run record name: a hard link to the sandbox's one empty record file (made the first
// time), so that recording a command allocates no inode. A file system that has just freed many inodes
// searches long for a new one (ext4 skips recently deleted ones), and a sandbox records and removes one
// per command.
func (s *sbx) addRecord(name string) error {
	dst := filepath.Join(s.runDir(), name)
	err := os.Link(s.recordPath(), dst)
	if errors.Is(err, fs.ErrNotExist) {
		var f *os.File
		if f, err = os.OpenFile(s.recordPath(), os.O_CREATE|os.O_RDONLY, 0o600); err == nil {
			f.Close()
			err = os.Link(s.recordPath(), dst)
		}
	}
	return err
}

// writeRecord notes the process's start in the sandbox's run directory, so that Stop and Reap find it from any
// process, and the memory cgroup's OOM kill count, so its ending can tell an OOM kill. The process sets
// its sandbox up meanwhile and waits for the go-ahead before its command starts.
func (p *proc) writeRecord() error {
	s := p.s
	p.oomBefore = -1
	if s.b.cfg.cgroups {
		p.oomBefore = oomKills(s.id)
	}
	rec, err := runRecord(p.pid)
	if err == nil {
		err = s.addRecord(rec)
	}
	if err != nil {
		return fmt.Errorf("record command of %s: %w", s.id, err)
	}
	p.record = rec
	return nil
}

// configure lets the process exec its command and waits until it has or has failed. Setup is
// bounded by setupTimeout, past which the process is killed, and by ctx, whose end leaves the killing to
// the supervisor.
func (p *proc) configure(ctx context.Context, goW *os.File, execd <-chan error) error {
	s := p.s
	if _, err := goW.Write([]byte{1}); err != nil {
		p.kill()
		if setupErr := <-execd; setupErr != nil {
			return fmt.Errorf("%w: setting up %s failed: %v", sandbox.ErrUnsupported, s.id, setupErr)
		}
		return fmt.Errorf("start the sandboxed process: %w", err)
	}
	goW.Close()
	t := time.NewTimer(setupTimeout)
	defer t.Stop()
	select {
	case err := <-execd:
		if err != nil {
			return fmt.Errorf("%w: setting up %s failed: %v", sandbox.ErrUnsupported, s.id, err)
		}
		return nil
	case <-ctx.Done():
		// The command may have started already (its exec is reported a moment after it happens); either
		// way the supervisor kills it at once, and its result says it was cancelled.
		return nil
	case <-t.C:
		p.kill()
		<-execd
		return fmt.Errorf("%w: setting up %s took over %v", sandbox.ErrUnsupported, s.id, setupTimeout)
	}
}

// hostGID mirrors the uid choice: root's dedicated range, or the caller's own group.
func hostGID(hostUID int) int {
	if os.Geteuid() != 0 {
		return os.Getegid()
	}
	return hostUID
}

// openMount returns a detached nosuid, nodev clone of the mount at dir when clone is set (root only), else
// a plain O_PATH descriptor that only holds the slot. A detached mount vanishes when its last fd closes.
func openMount(dir string, clone bool) (*os.File, error) {
	if !clone {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		return os.NewFile(uintptr(fd), dir), nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return nil, fmt.Errorf("clone mount of %s: %w", dir, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("restrict mount of %s: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

func (p *proc) removeRecord() {
	if p.record != "" {
		os.Remove(filepath.Join(p.s.runDir(), p.record))
	}
}

// supervise waits for the process and kills it on timeout, cancellation or a full disk.
func (p *proc) supervise(ctx context.Context, timeout time.Duration) {
	waitErr := make(chan syscall.WaitStatus, 1)
	go func() { waitErr <- p.await() }()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	if !p.kernelQuota {
		unwatch := p.s.b.watchDisk(p)
		defer unwatch()
	}
	done := ctx.Done()
	for {
		select {
		case ws := <-waitErr:
			p.duration = time.Since(p.started)
			p.exitCode = exitCode(ws)
			if p.s.b.cfg.unsafeNoIso {
				syscall.Kill(-p.pid, syscall.SIGKILL) // what it left in its process group
			}
			p.settleEnding(ws)
			if p.stopProxy != nil {
				p.stopProxy()
			}
			p.removeRecord()
			close(p.exited)
			return
		case <-done:
			done = nil // closed for good: select it once
			p.cancelled.Store(true)
			p.kill()
		case <-timer:
			p.timedOut.Store(true)
			p.kill()
		}
	}
}

// kill ends the command: SIGKILL to pid 1 of its namespace takes every process in it along.
func (p *proc) kill() {
	p.killOnce.Do(p.sigkill)
}

func (p *proc) wait() { <-p.exited }

func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// settleEnding works out why the command ended, once it has: the backend's own reasons first (timeout,
// cancellation, disk), then the kernel's OOM count, then whether Stop or Delete killed it.
func (p *proc) settleEnding(ws syscall.WaitStatus) {
	if ws.Signaled() {
		p.signal = int(ws.Signal())
	}
	if p.oomBefore >= 0 && ws != 0 { // a command that exited 0 was not the one killed
		if n := oomKills(p.s.id); n > p.oomBefore {
			p.oomKilled = true
		}
	}
	p.diskFull = p.s.diskFull(p.kernelQuota, p.quota)
	switch {
	case p.timedOut.Load():
		p.ending = sandbox.EndTimedOut
	case p.cancelled.Load():
		p.ending = sandbox.EndCancelled
	case p.quotaHit.Load():
		p.ending = sandbox.EndDisk
	case p.oomKilled && (ws.Signaled() || ws.ExitStatus() != 0):
		p.ending = sandbox.EndOOM
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		// Stop marks the sandbox stopped before it kills, Delete marks it deleting; no mark means the
		// program killed itself, or something outside the backend did.
		m, err := p.s.readMeta()
		switch {
		case errors.Is(err, sandbox.ErrNotFound) || (err == nil && m.Deleting):
			p.ending = sandbox.EndDeleted
		case err == nil && m.State == sandbox.StateStopped:
			p.ending = sandbox.EndStopped
		default:
			p.ending = sandbox.EndSignaled
		}
	case ws.Signaled():
		p.ending = sandbox.EndSignaled
	default:
		p.ending = sandbox.EndExited
	}
}

func (p *proc) result() sandbox.ExecResult {
	r := sandbox.ExecResult{ExitCode: p.exitCode, TimedOut: p.timedOut.Load(), Duration: p.duration,
		Ending: p.ending, Signal: p.signal, OOMKilled: p.oomKilled, DiskFull: p.diskFull}
	r.Stdout, r.StdoutTruncated = p.stdout.String()
	r.Stderr, r.StderrTruncated = p.stderr.String()
	if r.TimedOut {
		r.ExitCode = -1
	}
	if p.quotaHit.Load() {
		r.Stderr += fmt.Sprintf("\nsandbox: disk quota of %d bytes exceeded: the command was killed\n", p.quota)
	}
	return r
}

// diskUsage is the space home and /tmp take, counting each file's allocated blocks (and at least one block
// per entry, so millions of empty files count too).
func (s *sbx) diskUsage() (int64, error) {
	var total int64
	for _, dir := range []string{s.home(), s.tmp()} {
		n, err := usageOf(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// usageOf walks dir without following symlinks. A directory the sandboxed code made unreadable is opened
// up again (the sandbox user owns it, and so does an unprivileged caller) rather than skipped, so usage
// cannot hide behind chmod 000.
func usageOf(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) {
		if os.Chmod(dir, 0o700) == nil {
			entries, err = os.ReadDir(dir)
		}
	}
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			continue // removed meanwhile
		}
		total += max(st.Blocks*512, 4096)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			n, err := usageOf(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

// directPython has the shell start the interpreter itself when a command begins with the python3 or
// python wrapper's name: the argv the wrapper script would exec, without a second shell in between. Only
// with the default PATH, where the wrapper is the first python3 the shell finds; anything else is left to
// the shell as written.
func directPython(command string, env []string, py []string) string {
	if len(py) < 2 || !slices.Contains(env, "PATH="+pathEnv) {
		return command // a lone interpreter is a symlink, not a script
	}
	for _, name := range []string{"python3", "python"} {
		rest, ok := strings.CutPrefix(command, name)
		if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(rest, " \t"), "(") {
			return command // `python3 () {...}` defines a function of that name
		}
		return shellQuote(py) + rest
	}
	return command
}

// hostLayout is what a sandbox's root takes from the host's, found once per backend.
type hostLayout struct {
	pythonEtc []string          // /etc/python3.*
	symlinks  map[string]string // the merged-usr links (/bin -> usr/bin, ...), copied
	binds     []string          // the same directories where the host has no merged usr, bound
}

func (b *Backend) host() *hostLayout {
	b.hostOnce.Do(func() {
		h := &hostLayout{}
		h.pythonEtc, _ = filepath.Glob("/etc/python3.*")
		h.symlinks, h.binds = hostroot.MergedUsr()
		b.hostLayout = h
	})
	return b.hostLayout
}

// childConfig assembles what the helper builds: the read-only root, /etc, limits and the command.
func (b *Backend) childConfig(m *meta, command string, env []string, cwd string, diskLeft int64, timeout time.Duration) *childConfig {
	cfg := &childConfig{
		Argv:        []string{"/bin/sh", "-c", directPython(command, env, b.cfg.python)},
		Env:         env,
		Cwd:         cwd,
		HostNetwork: m.HostNetwork,
		Hostname:    "sandbox",
		TmpfsBytes:  min(m.Limits.MemoryBytes/4, 256<<20),
		Binds:       []string{"/usr"},
		Symlinks:    map[string]string{},
		Landlock:    b.cfg.landlock,
		EtcFiles: map[string]string{
			"passwd":   "root:x:0:0:root:/root:/usr/sbin/nologin\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"group":    "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
			"hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tsandbox\n",
			"hostname": "sandbox\n",
		},
		EtcBinds: []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl",
			"/etc/ca-certificates", "/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
			"/etc/protocols", "/etc/services", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/python3"},
		Wrappers: map[string]string{},
	}
	host := b.host()
	cfg.EtcBinds = append(cfg.EtcBinds, host.pythonEtc...)
	if m.HostNetwork {
		if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
			cfg.EtcFiles["resolv.conf"] = string(data)
		}
		cfg.EtcBinds = append(cfg.EtcBinds, "/etc/host.conf")
	}
	for name, target := range host.symlinks {
		cfg.Symlinks[name] = target
	}
	cfg.Binds = append(cfg.Binds, host.binds...)
	py := b.cfg.python
	if top := topDir(py[0]); top != "" && !slices.Contains(cfg.Binds, top) && cfg.Symlinks[strings.TrimPrefix(top, "/")] == "" {
		cfg.Binds = append(cfg.Binds, top)
	}
	wrapper := "#!/bin/sh\nexec " + shellQuote(py) + " \"$@\"\n"
	if len(py) == 1 {
		wrapper = "symlink:" + py[0] // no arguments to add: no shell in front of every run
	}
	cfg.Wrappers["python3"] = wrapper
	cfg.Wrappers["python"] = wrapper

	lim := m.Limits
	add := func(res int, v uint64) {
		var cur unix.Rlimit
		if unix.Getrlimit(res, &cur) == nil && cur.Max < v {
			v = cur.Max // without CAP_SYS_RESOURCE a limit can only be lowered
		}
		cfg.Rlimits = append(cfg.Rlimits, rlimitSpec{Resource: res, Cur: v, Max: v})
	}
	add(unix.RLIMIT_CORE, 0)
	add(unix.RLIMIT_NOFILE, 1024)
	add(unix.RLIMIT_FSIZE, uint64(max(diskLeft, 1)))
	add(unix.RLIMIT_NPROC, uint64(lim.Pids))
	if !b.cfg.cgroups {
		add(unix.RLIMIT_AS, uint64(lim.MemoryBytes))
		if timeout > 0 {
			// Without a CPU controller the share cannot be capped; total CPU time can.
			add(unix.RLIMIT_CPU, uint64(timeout/time.Second)*uint64(max(lim.CPUs, 1))+1)
		}
	}
	return cfg
}

func topDir(p string) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return ""
	}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)
	if len(parts) < 2 {
		return ""
	}
	return "/" + parts[0]
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// spawnUnsafe runs the command as a plain child process: no namespaces, no filters, the caller's rights.
func (p *proc) spawnUnsafe(m *meta, env []string, cwd string) error {
	s := p.s
	dir := s.home()
	if rel, ok := strings.CutPrefix(cwd, sandbox.Home); ok {
		dir = filepath.Join(s.home(), rel)
	} else if rel, ok := strings.CutPrefix(cwd, sandbox.Tmp); ok {
		dir = filepath.Join(s.tmp(), rel)
	}
	env = slices.Clone(env)
	for i, kv := range env {
		switch {
		case strings.HasPrefix(kv, "HOME="):
			env[i] = "HOME=" + s.home()
		case strings.HasPrefix(kv, "TMPDIR="):
			env[i] = "TMPDIR=" + s.tmp()
		case strings.HasPrefix(kv, "PATH="):
			env[i] = "PATH=/usr/local/bin:/usr/bin:/bin"
		}
	}
	cmd := exec.Command("/bin/sh", "-c", p.command)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, p.stdout, p.stderr
	cmd.WaitDelay = time.Second // a background child holding the output pipes must not hold Wait
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start command in %s: %w", s.id, err)
	}
	p.started, p.pid = time.Now(), cmd.Process.Pid
	p.sigkill = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // no pid namespace: kill the process group
		cmd.Process.Kill()
	}
	p.await = func() syscall.WaitStatus {
		cmd.Wait()
		return cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	if rec, err := runRecord(cmd.Process.Pid); err == nil {
		p.record = rec
		os.WriteFile(filepath.Join(s.runDir(), rec), nil, 0o600)
	}
	return nil
}
