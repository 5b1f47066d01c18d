package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// Backend runs sandboxes on this machine. Its methods are safe for concurrent use; Close stops the TTL reaper.
type Backend struct {
	cfg     config
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	running map[string]*detached  // detached commands started by this process, by command id
	watches map[string]*diskWatch // disk-quota watches of sandboxes with running commands, by sandbox id
	mounted map[string]bool       // sandboxes whose disk this backend mounted, by id
	limited map[string]int        // cgroup controllers whose limits this backend wrote, by sandbox id (bits)

	zmu    sync.Mutex
	zyg    *zygote // started at the first command
	closed bool

	hostOnce   sync.Once
	hostLayout *hostLayout // see host
}

var _ sandbox.Backend = (*Backend)(nil)

// New opens (creating if needed) a backend rooted at its root directory, stops sandboxes past their TTL and
// removes what crashed processes left, and starts the periodic reaper.
func New(opts ...Option) (*Backend, error) {
	cfg := config{
		python:       []string{"/usr/bin/python3", "-I"},
		reapInterval: time.Minute,
		now:          time.Now,
		outputLimit:  1 << 20,
		hostUIDBase:  200000,
		cgroups:      os.Geteuid() == 0,
		landlock:     true,
		diskImages:   os.Geteuid() == 0,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.root == "" {
		cfg.root = DefaultRoot()
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	root, err := filepath.Abs(cfg.root)
	if err != nil {
		return nil, fmt.Errorf("sandbox root %q: %w", cfg.root, err)
	}
	cfg.root = root
	// 0711: a command's process, running as the sandbox's host uid, must traverse to nothing here (it gets
	// descriptors), but others must not list sandbox ids.
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("create sandbox root %s: %w (choose another with local.WithRoot)", root, err)
	}
	if cfg.cgroups && !cgroupsAvailable() {
		cfg.cgroups = false
	}
	if cfg.diskImages && !cfg.unsafeNoIso {
		tools, err := findDiskTools()
		if err != nil {
			cfg.logger.Warn("sandbox: disk quotas are measured, not enforced by the kernel", "reason", err)
			cfg.diskImages = false
		}
		cfg.disk = tools
	} else {
		cfg.diskImages = false
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, cancel: cancel, done: make(chan struct{}), running: map[string]*detached{},
		watches: map[string]*diskWatch{}, mounted: map[string]bool{}, limited: map[string]int{}}
	if cfg.reapInterval >= 0 {
		if _, err := b.Reap(ctx); err != nil {
			cfg.logger.Warn("sandbox: reaping expired sandboxes failed", "err", err)
		}
	}
	go b.reaper(ctx)
	return b, nil
}

// Close stops the periodic reaper, kills the detached commands this backend started and ends its zygote
// process (and with it any command still running). Sandboxes stay.
func (b *Backend) Close() error {
	b.cancel()
	<-b.done
	b.mu.Lock()
	ds := make([]*detached, 0, len(b.running))
	for _, d := range b.running {
		ds = append(ds, d)
	}
	b.mu.Unlock()
	for _, d := range ds {
		d.kill()
		<-d.exited
	}
	b.unmountIdle()
	b.zmu.Lock()
	b.closed = true
	z := b.zyg
	b.zyg = nil
	b.zmu.Unlock()
	if z != nil {
		z.close()
	}
	return nil
}

// stamp is the clock's time as sandbox records keep it.
func (b *Backend) stamp() time.Time { return b.cfg.now().UTC().Truncate(time.Millisecond) }

// Root returns the directory that holds the sandboxes.
func (b *Backend) Root() string { return b.cfg.root }

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

// Reap stops every running sandbox past its TTL and clears what dead processes left behind (their run
// records and empty cgroups). New calls it once and then every reap interval; the CLI's gc calls it too,
// which is how sandboxes expire even when the process that created them died.
func (b *Backend) Reap(ctx context.Context) ([]string, error) {
	infos, err := b.List(ctx, sandbox.Filter{})
	if err != nil {
		return nil, err
	}
	var stopped []string
	now := b.cfg.now()
	var errs []error
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
	// Egress says commands reach the backend's egress allow-list through a proxy (see WithEgress).
	Egress bool `json:"egress,omitempty"`
	// DiskImage says home and /tmp live on the sandbox's own file system image, which holds the quota.
	DiskImage bool `json:"diskImage,omitempty"`
	// Deleting is set by Delete before it kills the sandbox's commands, so they can tell why they died.
	Deleting bool `json:"deleting,omitempty"`
}

// Create makes a sandbox: a directory with its record, home and /tmp. No process runs until Exec.
func (b *Backend) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
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
	if b.cfg.unsafeNoIso {
		b.cfg.logger.Warn("sandbox: WithUnsafeNoIsolation is set: sandboxed code runs with all the rights of this user")
	}
	id := record.NewID("sb_")
	now := b.stamp()
	m := meta{
		Info: sandbox.Info{ID: id, Name: opts.Name, State: sandbox.StateRunning, Size: size, Limits: limits,
			HostNetwork: opts.HostNetwork, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(ttl)},
		TTL:     ttl,
		Env:     maps(opts.Env),
		HostUID: b.hostUID(),
	}
	m.DiskImage = b.cfg.diskImages
	if len(b.cfg.egress) > 0 && !opts.HostNetwork {
		if os.Geteuid() != 0 && !b.cfg.unsafeNoIso {
			return nil, fmt.Errorf("%w: local.WithEgress needs root (its proxy listens in the sandbox's network "+
				"namespace): run as root, or use HostNetwork", sandbox.ErrUnsupported)
		}
		m.Egress = true
	}
	s := b.handle(id)
	if err := os.Mkdir(s.dir, 0o711); err != nil {
		return nil, fmt.Errorf("create sandbox directory: %w", err)
	}
	if err := s.makeFiles(&m); err != nil {
		s.unmountDisk()
		os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

// makeFiles makes the run directory, the disk (an image, mounted, or a plain directory), home and /tmp,
// and finally the record that makes the sandbox exist.
func (s *sbx) makeFiles(m *meta) error {
	for _, d := range []string{s.runDir(), s.diskDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create sandbox directory: %w", err)
		}
	}
	if m.DiskImage {
		if err := makeDiskImage(s.b.cfg.disk, filepath.Join(s.dir, diskImageName), m.Limits.DiskBytes); err != nil {
			return fmt.Errorf("%s: %w (or use local.WithoutDiskImages)", s.id, err)
		}
		if err := s.mountDisk(); err != nil {
			return err
		}
	}
	for _, d := range []string{s.home(), s.tmp()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create sandbox directory: %w", err)
		}
		if err := os.Chown(d, m.HostUID, hostGID(m.HostUID)); err != nil {
			return fmt.Errorf("hand %s to the sandbox user: %w", d, err)
		}
	}
	return s.writeMeta(m)
}

// cgroupLimited remembers which of the sandbox's cgroups this backend wrote the limits of. A cgroup that
// another process removed and made again got its limits from that process (see joinCgroups), so the memory
// stays true; Stop and Delete, which remove the cgroups, forget it.
func (b *Backend) cgroupLimited(id string) limitMemory {
	bit := func(c string) int { return 1 << slices.Index(cgroupControllers, c) }
	return limitMemory{
		has: func(c string) bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.limited[id]&bit(c) != 0
		},
		set: func(c string) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.limited[id] |= bit(c)
		},
	}
}

func (b *Backend) noteMounted(id string) {
	b.mu.Lock()
	b.mounted[id] = true
	b.mu.Unlock()
}

func (b *Backend) noteUnmounted(id string) {
	b.mu.Lock()
	delete(b.mounted, id)
	b.mu.Unlock()
}

// unmountIdle unmounts the disks this backend mounted whose sandboxes run nothing; the next use mounts
// them again.
func (b *Backend) unmountIdle() {
	b.mu.Lock()
	ids := make([]string, 0, len(b.mounted))
	for id := range b.mounted {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for _, id := range ids {
		s := b.handle(id)
		unlock, err := s.lock(unix.LOCK_EX | unix.LOCK_NB)
		if err != nil {
			continue // busy: a command is starting or the state changes
		}
		if len(s.liveRuns()) == 0 {
			s.unmountDisk()
		}
		unlock()
	}
}

func maps(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// hostUID is the host user the sandbox user maps to: a dedicated unprivileged uid for root (never 0), the
// caller's own uid otherwise. Root gives each sandbox its own uid so kernel per-user quotas (keys, processes)
// are not shared between sandboxes.
func (b *Backend) hostUID() int {
	if os.Geteuid() != 0 {
		return os.Geteuid()
	}
	var r [4]byte
	rand.Read(r[:])
	n := int(r[0])<<16 | int(r[1])<<8 | int(r[2])
	return b.cfg.hostUIDBase + n%100000
}

// usable reports why Create cannot isolate, if it cannot.
func (b *Backend) usable() error {
	if b.cfg.unsafeNoIso {
		return nil
	}
	if !initCalled.Load() {
		return ErrInitMissing
	}
	if data, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(data)) == "0" {
		return fmt.Errorf("%w: user namespaces are disabled (user.max_user_namespaces=0): enable them with "+
			"sysctl user.max_user_namespaces=15000", sandbox.ErrUnsupported)
	}
	if data, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil &&
		strings.TrimSpace(string(data)) == "1" && os.Geteuid() != 0 {
		return fmt.Errorf("%w: AppArmor restricts unprivileged user namespaces: run as root, or allow them "+
			"(sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile with userns)", sandbox.ErrUnsupported)
	}
	if data, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil &&
		strings.TrimSpace(string(data)) == "0" && os.Geteuid() != 0 {
		return fmt.Errorf("%w: unprivileged user namespaces are disabled: run sysctl "+
			"kernel.unprivileged_userns_clone=1 or run as root", sandbox.ErrUnsupported)
	}
	return nil
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
	if !m.DiskImage {
		if err := s.moveToDiskDir(); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// moveToDiskDir brings a sandbox made before home and /tmp lived under the
// disk directory into today's layout: its files stay, in plain
// directories. It does nothing for a sandbox already laid out so.
func (s *sbx) moveToDiskDir() error {
	oldHome := filepath.Join(s.dir, "home")
	if _, err := os.Lstat(oldHome); err != nil {
		return nil
	}
	if err := os.Mkdir(s.diskDir(), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("sandbox %s: move its files to %s: %w", s.id, s.diskDir(), err)
	}
	for _, d := range [][2]string{{oldHome, s.home()}, {filepath.Join(s.dir, "tmp"), s.tmp()}} {
		if err := os.Rename(d[0], d[1]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sandbox %s: move its files to %s: %w", s.id, s.diskDir(), err)
		}
	}
	return nil
}
