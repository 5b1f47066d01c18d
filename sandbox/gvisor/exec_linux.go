package gvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// proc is one command: one gVisor container, started by this process.
type proc struct {
	s       *sbx
	cid     string
	command string
	started time.Time
	stdout  *tail
	stderr  *tail
	exited  chan struct{} // closed once the container is gone and its output read

	mu       sync.Mutex
	ending   sandbox.Ending // who ended it, when the backend did
	exitCode int
	oom      bool
	diskFull bool
	duration time.Duration
	startErr error // runsc could not start the container
	killOnce sync.Once
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

// runsc runs one runsc subcommand against the backend's state, with an environment of PATH alone.
func (b *Backend) runsc(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.cfg.runsc, append([]string{"-root", b.state}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	return cmd
}

// destroy kills a container and removes runsc's record of it; a container that does not exist is fine.
func (b *Backend) destroy(cid string) {
	b.runsc(context.Background(), "delete", "-force", cid).Run()
}

// start creates and starts the container for command. The sandbox must be running. timeout 0 means none.
func (s *sbx) start(command string, opts sandbox.ExecOptions, timeout time.Duration) (*proc, error) {
	if strings.IndexByte(command, 0) >= 0 {
		return nil, fmt.Errorf("%w: the command contains a NUL byte", sandbox.ErrInvalidArgument)
	}
	cwd := sandbox.Home
	if opts.Cwd != "" {
		abs, err := sandbox.ResolvePath(opts.Cwd)
		if err != nil {
			return nil, err
		}
		cwd = abs
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	m, err := s.readMeta()
	if err != nil {
		unlock()
		return nil, err
	}
	switch {
	case m.Deleting:
		unlock()
		return nil, fmt.Errorf("%w: %s is being deleted", sandbox.ErrNotFound, s.id)
	case m.State != sandbox.StateRunning:
		unlock()
		return nil, fmt.Errorf("%w: %s: call Resume first", sandbox.ErrStopped, s.id)
	}
	p, err := s.prepare(m, command, opts, cwd, timeout)
	unlock()
	if err != nil {
		return nil, err
	}
	if err := p.launch(); err != nil {
		return nil, err
	}
	// A Stop or Delete that came while the container started found no container to kill; this one is.
	if m, err := s.readMeta(); err != nil || m.Deleting {
		p.kill(sandbox.EndDeleted)
	} else if m.State != sandbox.StateRunning {
		p.kill(sandbox.EndStopped)
	}
	return p, nil
}

// prepare checks the working directory and the disk, writes the container's bundle and its run record. It
// runs under the sandbox's shared lock.
func (s *sbx) prepare(m *meta, command string, opts sandbox.ExecOptions, cwd string, timeout time.Duration) (*proc, error) {
	if err := s.checkDir(cwd); err != nil {
		return nil, err
	}
	env, err := buildEnv(m.Env, opts.Env)
	if err != nil {
		return nil, err
	}
	used, err := s.diskUsage()
	if err != nil {
		return nil, fmt.Errorf("measure disk use of %s: %w", s.id, err)
	}
	if used >= m.Limits.DiskBytes {
		return nil, fmt.Errorf("%w: %s uses %d of %d bytes: remove files first", sandbox.ErrQuota, s.id, used, m.Limits.DiskBytes)
	}
	if s.b.cfg.cgroups {
		if err := setupCgroups(s.id, m.Limits); err != nil {
			return nil, fmt.Errorf("%s: %w (or use gvisor.WithoutCgroups)", s.id, err)
		}
	}
	cid := record.NewID(s.id + "-")
	bundle := filepath.Join(s.runDir(), cid)
	if err := os.Mkdir(bundle, 0o700); err != nil {
		return nil, fmt.Errorf("create container bundle: %w", err)
	}
	sp := s.b.spec(s, m, cid, []string{"/bin/sh", "-c", command}, env, cwd, m.Limits.DiskBytes-used, timeout)
	if m.HostNetwork {
		sp.Linux.Namespaces = slices.DeleteFunc(sp.Linux.Namespaces, func(n ociNamespace) bool { return n.Type == "network" })
	}
	if err := writeSpec(bundle, sp); err != nil {
		os.RemoveAll(bundle)
		return nil, fmt.Errorf("write container spec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "owner"), []byte(ownerRecord()), 0o600); err != nil {
		os.RemoveAll(bundle)
		return nil, fmt.Errorf("write run record: %w", err)
	}
	limit := s.b.cfg.outputLimit
	return &proc{s: s, cid: cid, command: command, stdout: newTail(limit), stderr: newTail(limit),
		exited: make(chan struct{}), exitCode: -1}, nil
}

func (p *proc) bundle() string { return filepath.Join(p.s.runDir(), p.cid) }

// launch starts `runsc run`, which creates the container, runs the command in it and exits with its status
// (128+n for signal n). The container writes straight into the pipes; a goroutine reads them, waits for the
// end and removes what the container left.
func (p *proc) launch() error {
	b := p.s.b
	outR, outW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(p.bundle())
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		os.RemoveAll(p.bundle())
		return err
	}
	m, _ := p.s.readMeta()
	network := "none"
	if m != nil && m.HostNetwork {
		network = "host"
	}
	logPath := filepath.Join(p.bundle(), "runsc.log")
	args := []string{"-platform", b.cfg.platform, "-network", network, "-oci-seccomp", "-file-access-mounts", "shared", "-log", logPath}
	if !b.cfg.cgroups {
		args = append(args, "-ignore-cgroups")
	}
	args = append(args, "run", "-bundle", p.bundle(), p.cid)
	cmd := b.runsc(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = outW, errW
	var oomBefore int64 = -1
	if b.cfg.cgroups {
		oomBefore = oomKills(p.s.id)
	}
	p.started = time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		os.RemoveAll(p.bundle())
		return fmt.Errorf("%w: start runsc: %v", sandbox.ErrUnsupported, err)
	}
	b.mu.Lock()
	b.procs[p.cid] = p
	b.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(p.stdout, outR); outR.Close() }()
	go func() { defer wg.Done(); io.Copy(p.stderr, errR); errR.Close() }()
	stopWatch := b.watch(p)
	go func() {
		code := 0
		if err := cmd.Wait(); err != nil {
			code = 128 + int(unix.SIGKILL)
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() >= 0 {
				code = ee.ExitCode()
			}
		}
		wg.Wait()
		stopWatch()
		p.mu.Lock()
		p.duration = time.Since(p.started)
		p.exitCode = code
		if oomBefore >= 0 && oomKills(p.s.id) > oomBefore {
			p.oom = true
		}
		if code == 128 {
			if msg := startFailure(logPath); msg != "" {
				p.startErr = fmt.Errorf("%w: runsc could not start the container: %s", sandbox.ErrUnsupported, msg)
			}
		}
		p.mu.Unlock()
		b.destroy(p.cid)
		os.RemoveAll(p.bundle())
		b.mu.Lock()
		delete(b.procs, p.cid)
		b.mu.Unlock()
		close(p.exited)
	}()
	return nil
}

// startFailure returns runsc's message when its log says the container was never created or started.
func startFailure(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		var l struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Level == "error" &&
			(strings.Contains(l.Msg, "creating container") || strings.Contains(l.Msg, "starting container")) {
			return l.Msg
		}
	}
	return ""
}

// kill ends the container unless it is gone already; the first reason given is the one reported. The
// container may not exist yet (runsc is still creating it): kill keeps trying until it does or runsc ends.
func (p *proc) kill(why sandbox.Ending) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.mu.Lock()
	if p.ending == "" {
		p.ending = why
	}
	p.mu.Unlock()
	p.killOnce.Do(func() {
		go func() {
			// A kill that reached a container still being created may find no process yet; send again until
			// the container is gone.
			for {
				wait := 500 * time.Millisecond
				if p.s.b.runsc(context.Background(), "kill", "-all", p.cid, "KILL").Run() != nil {
					wait = 20 * time.Millisecond
				}
				select {
				case <-p.exited:
					return
				case <-time.After(wait):
				}
			}
		}()
	})
}

// result is what the finished command left.
func (p *proc) result() sandbox.ExecResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := sandbox.ExecResult{
		Stdout: p.stdout.String(), Stderr: p.stderr.String(), ExitCode: p.exitCode, Duration: p.duration,
		StdoutTruncated: p.stdout.truncated(), StderrTruncated: p.stderr.truncated(), OOMKilled: p.oom,
		DiskFull: p.diskFull,
	}
	if r.Duration <= 0 {
		r.Duration = time.Since(p.started)
	}
	switch {
	case p.ending == sandbox.EndTimedOut:
		r.TimedOut, r.ExitCode, r.Signal = true, -1, int(unix.SIGKILL)
	case p.ending != "":
		r.Signal = int(unix.SIGKILL)
	case p.oom:
		p.ending = sandbox.EndOOM
	}
	r.Ending = p.ending
	if r.Ending == "" {
		r.Ending = sandbox.EndExited
	}
	return r
}

// Exec runs command in a fresh container and waits for it.
func (s *sbx) Exec(ctx context.Context, command string, opts sandbox.ExecOptions) (sandbox.ExecResult, error) {
	timeout, err := sandbox.ValidateExecOptions(opts)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.ExecResult{}, err
	}
	p, err := s.start(command, opts, timeout)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	timer := time.NewTimer(timeout - time.Since(p.started))
	defer timer.Stop()
	var ctxErr error
	select {
	case <-p.exited:
	case <-timer.C:
		p.kill(sandbox.EndTimedOut)
		<-p.exited
	case <-ctx.Done():
		ctxErr = ctx.Err()
		p.kill(sandbox.EndCancelled)
		<-p.exited
	}
	if p.startErr != nil {
		return sandbox.ExecResult{}, p.startErr
	}
	return p.result(), ctxErr
}

// Start runs command detached and returns its id at once; Status reports on it and Kill ends it. The
// command's Timeout (zero: none), Stop and Delete still bound it. Only this process knows its outcome.
func (s *sbx) Start(ctx context.Context, command string, opts sandbox.ExecOptions) (string, error) {
	timeout := opts.Timeout
	if timeout != 0 {
		if _, err := sandbox.ValidateExecOptions(opts); err != nil {
			return "", err
		}
	}
	p, err := s.start(command, opts, timeout)
	if err != nil {
		return "", err
	}
	id := record.NewID("cmd_")
	s.b.mu.Lock()
	s.b.detached[id] = p
	s.b.mu.Unlock()
	if timeout > 0 {
		go func() {
			t := time.NewTimer(timeout - time.Since(p.started))
			defer t.Stop()
			select {
			case <-p.exited:
			case <-t.C:
				p.kill(sandbox.EndTimedOut)
			}
		}()
	}
	return id, nil
}

func (s *sbx) lookup(commandID string) (*proc, error) {
	s.b.mu.Lock()
	p, ok := s.b.detached[commandID]
	s.b.mu.Unlock()
	if !ok || p.s.id != s.id {
		return nil, fmt.Errorf("%w: command %s of %s (detached commands are known to the process that started them)", sandbox.ErrNotFound, commandID, s.id)
	}
	return p, nil
}

// Status reports a detached command's state and the tail of its output so far.
func (s *sbx) Status(ctx context.Context, commandID string) (sandbox.CommandStatus, error) {
	p, err := s.lookup(commandID)
	if err != nil {
		return sandbox.CommandStatus{}, err
	}
	st := sandbox.CommandStatus{ID: commandID, Command: p.command}
	select {
	case <-p.exited:
		r := p.result()
		st.State, st.ExitCode, st.Stdout, st.Stderr = sandbox.CommandExited, r.ExitCode, r.Stdout, r.Stderr
	default:
		st.State, st.Stdout, st.Stderr = sandbox.CommandRunning, p.stdout.String(), p.stderr.String()
	}
	return st, nil
}

// Kill ends a detached command and waits until it is gone.
func (s *sbx) Kill(ctx context.Context, commandID string) error {
	p, err := s.lookup(commandID)
	if err != nil {
		return err
	}
	p.kill(sandbox.EndCancelled)
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch measures home and /tmp every 250 ms while the command runs and kills it past the quota. It also
// reads the sandbox's record, so that a Stop or Delete from another process that came while runsc was still
// creating the container (and so found nothing to kill) ends it.
func (b *Backend) watch(p *proc) func() {
	m, err := p.s.readMeta()
	if err != nil {
		return func() {}
	}
	quota := m.Limits.DiskBytes
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-p.exited:
				return
			case <-t.C:
				if m, err := p.s.readMeta(); err != nil || m.Deleting {
					p.kill(sandbox.EndDeleted)
					return
				} else if m.State != sandbox.StateRunning {
					p.kill(sandbox.EndStopped)
					return
				}
				if used, err := p.s.diskUsage(); err == nil && used > quota {
					p.mu.Lock()
					p.diskFull = true
					p.mu.Unlock()
					p.kill(sandbox.EndDisk)
					return
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		if used, err := p.s.diskUsage(); err == nil && used >= quota {
			p.mu.Lock()
			p.diskFull = true
			p.mu.Unlock()
		}
	}
}

// tail keeps the last bytes written to it.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func newTail(limit int) *tail { return &tail{limit: limit} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(b))
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.limit {
		// Keep twice the limit before compacting, so a stream of small writes is not quadratic.
		if len(t.buf) > 2*t.limit {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
		}
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > t.limit {
		return string(t.buf[len(t.buf)-t.limit:])
	}
	return string(t.buf)
}

func (t *tail) truncated() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total > int64(t.limit)
}
