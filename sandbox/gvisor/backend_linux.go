package gvisor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// Backend runs sandboxes under runsc on this machine. Its methods are safe for concurrent use; Close stops
// the TTL reaper and kills the commands this backend started.
type Backend struct {
	cfg    config
	rootfs *rootfs // the read-only root every container starts from
	state  string  // runsc's -root: its record of live containers
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	procs    map[string]*proc // commands this process runs, by container id
	detached map[string]*proc // detached commands, by command id
}

var _ sandbox.Backend = (*Backend)(nil)

// New opens (creating if needed) a backend rooted at its root directory, builds the read-only root the
// containers share, stops sandboxes past their TTL and clears what crashed processes left, and starts the
// periodic reaper. It fails with an error wrapping sandbox.ErrUnsupported when runsc is missing or cannot
// run here.
func New(opts ...Option) (*Backend, error) {
	cfg := config{
		platform:     "ptrace",
		python:       []string{"/usr/bin/python3", "-I"},
		reapInterval: time.Minute,
		outputLimit:  1 << 20,
		cgroups:      true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: the gVisor backend runs runsc as root: run the program as root, or use the local backend", sandbox.ErrUnsupported)
	}
	if cfg.runsc == "" {
		cfg.runsc = findRunsc()
	}
	if cfg.runsc == "" {
		return nil, fmt.Errorf("%w: runsc not found: install gVisor (Debian: apt-get install runsc) or pass gvisor.WithRunsc", sandbox.ErrUnsupported)
	}
	if fi, err := os.Stat(cfg.runsc); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		why := "not an executable file"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%w: runsc %s: %s: install gVisor or name another with gvisor.WithRunsc", sandbox.ErrUnsupported, cfg.runsc, why)
	}
	if cfg.cgroups && !cgroupsAvailable() {
		cfg.cgroups = false
	}
	if cfg.root == "" {
		cfg.root = DefaultRoot()
	}
	root, err := filepath.Abs(cfg.root)
	if err != nil {
		return nil, fmt.Errorf("sandbox root %q: %w", cfg.root, err)
	}
	cfg.root = root
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("create sandbox root %s: %w (choose another with gvisor.WithRoot)", root, err)
	}
	b := &Backend{cfg: cfg, state: filepath.Join(root, ".runsc"), procs: map[string]*proc{}, detached: map[string]*proc{}}
	if err := os.MkdirAll(b.state, 0o700); err != nil {
		return nil, fmt.Errorf("create runsc state directory: %w", err)
	}
	if b.rootfs, err = buildRootfs(root, cfg.python); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	if cfg.reapInterval >= 0 {
		if _, err := b.Reap(ctx); err != nil {
			cfg.logger.Warn("sandbox: reaping expired sandboxes failed", "err", err)
		}
	}
	go b.reaper(ctx)
	return b, nil
}

func findRunsc() string {
	if p, err := exec.LookPath("runsc"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/runsc", "/usr/local/bin/runsc"} {
		if unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	return ""
}

// Close stops the periodic reaper and kills the commands this backend started, waiting until their
// containers are gone. Sandboxes stay.
func (b *Backend) Close() error {
	b.cancel()
	<-b.done
	b.mu.Lock()
	ps := make([]*proc, 0, len(b.procs))
	for _, p := range b.procs {
		ps = append(ps, p)
	}
	b.mu.Unlock()
	for _, p := range ps {
		p.kill(sandbox.EndCancelled)
		<-p.exited
	}
	b.releaseNetns()
	return nil
}

// releaseNetns unmounts the empty network namespace that newer runsc releases pin in their state directory
// for -network=none, once no container of the directory is left (another process may share it).
func (b *Backend) releaseNetns() {
	p := filepath.Join(b.state, "null-netns")
	if _, err := os.Lstat(p); err != nil {
		return
	}
	out, err := b.runsc(context.Background(), "list", "-quiet").Output()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		return
	}
	// It may be mounted once per container that ran: unmount until nothing is left.
	for range 10000 {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			break
		}
	}
	os.Remove(p)
}

// Root returns the directory that holds the sandboxes.
func (b *Backend) Root() string { return b.cfg.root }

// Runsc returns the runsc binary the backend runs.
func (b *Backend) Runsc() string { return b.cfg.runsc }

func (b *Backend) stamp() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func (b *Backend) reaper(ctx context.Context) {
	defer close(b.done)
	if b.cfg.reapInterval <= 0 {
		return
	}
	t := time.NewTicker(b.cfg.reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := b.Reap(ctx); err != nil {
				b.cfg.logger.Warn("sandbox: reaping expired sandboxes failed", "err", err)
			}
		}
	}
}

// Reap stops every running sandbox past its TTL, and kills the containers whose starting process died (a
// crashed program leaves them running until their command ends). It returns the ids of the sandboxes it
// stopped.
func (b *Backend) Reap(ctx context.Context) ([]string, error) {
	infos, err := b.List(ctx, sandbox.Filter{})
	if err != nil {
		return nil, err
	}
	var stopped []string
	var errs []error
	now := time.Now()
	for _, in := range infos {
		s := b.handle(in.ID)
		if in.State == sandbox.StateRunning && !in.ExpiresAt.IsZero() && now.After(in.ExpiresAt) {
			if err := s.Stop(ctx); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
				errs = append(errs, err)
				continue
			}
			stopped = append(stopped, in.ID)
			continue
		}
		s.pruneRuns()
	}
	return stopped, errors.Join(errs...)
}

// meta is the on-disk record of a sandbox: <root>/<id>/sandbox.json.
type meta struct {
	sandbox.Info
	TTL     time.Duration     `json:"ttl"`
	Env     map[string]string `json:"env,omitempty"`
	HostUID int               `json:"hostUid"`
	// Deleting is set by Delete before it kills the sandbox's commands, so they can tell why they died.
	Deleting bool `json:"deleting,omitempty"`
}

// Create makes a sandbox: a directory with its record, home and /tmp. No process runs until Exec.
func (b *Backend) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	if err := record.ValidName(opts.Name); err != nil {
		return nil, err
	}
	size := opts.Size
	if size == "" {
		size = sandbox.SizeDefault
	}
	limits, err := size.Limits()
	if err != nil {
		return nil, err
	}
	if l, ok := b.cfg.sizes[size]; ok {
		limits = l
	}
	ttl := opts.TTL
	if ttl == 0 {
		ttl = sandbox.DefaultTTL
	}
	if ttl < 0 {
		return nil, fmt.Errorf("%w: negative TTL %v", sandbox.ErrInvalidArgument, ttl)
	}
	for k := range opts.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("%w: environment variable name %q", sandbox.ErrInvalidArgument, k)
		}
	}
	id := record.NewID("sb_")
	now := b.stamp()
	m := meta{
		Info: sandbox.Info{ID: id, Name: opts.Name, State: sandbox.StateRunning, Size: size, Limits: limits,
			HostNetwork: opts.HostNetwork, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(ttl)},
		TTL:     ttl,
		Env:     copyEnv(opts.Env),
		HostUID: hostUID(),
	}
	s := b.handle(id)
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		return nil, fmt.Errorf("create sandbox directory: %w", err)
	}
	if err := s.makeFiles(&m); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

func (s *sbx) makeFiles(m *meta) error {
	if err := os.Mkdir(s.runDir(), 0o700); err != nil {
		return fmt.Errorf("create sandbox directory: %w", err)
	}
	for _, d := range []string{s.home(), s.tmp()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create sandbox directory: %w", err)
		}
		if err := os.Chown(d, m.HostUID, m.HostUID); err != nil {
			return fmt.Errorf("hand %s to the sandbox user: %w", d, err)
		}
	}
	return s.writeMeta(m)
}

func copyEnv(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// hostUID is the host user the sandbox user (1000 inside) maps to: a dedicated unprivileged uid per sandbox,
// so files it writes belong to no real host user and sandboxes do not share one.
func hostUID() int {
	var r [4]byte
	rand.Read(r[:])
	return 300000 + (int(r[0])<<16|int(r[1])<<8|int(r[2]))%100000
}

// Get returns the sandbox with the id, from its on-disk record.
func (b *Backend) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	if !record.ValidID(id) {
		return nil, fmt.Errorf("%w: %q is not a sandbox id (sb_...)", sandbox.ErrNotFound, id)
	}
	s := b.handle(id)
	if _, err := s.readMeta(); err != nil {
		return nil, err
	}
	return s, nil
}

// List returns the sandboxes that match f, oldest first.
func (b *Backend) List(ctx context.Context, f sandbox.Filter) ([]sandbox.Info, error) {
	return record.List(b.cfg.root, f, func(id string) (sandbox.Info, error) {
		m, err := b.handle(id).readMeta()
		if err != nil {
			return sandbox.Info{}, err
		}
		return m.Info, nil
	})
}

func (b *Backend) handle(id string) *sbx {
	return &sbx{b: b, id: id, dir: filepath.Join(b.cfg.root, id)}
}

func (s *sbx) writeMeta(m *meta) error { return record.Write(s.dir, m) }

func (s *sbx) readMeta() (*meta, error) {
	var m meta
	if err := record.Read(s.b.cfg.root, s.id, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
