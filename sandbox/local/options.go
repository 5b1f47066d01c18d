package local

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Errors of this backend, beyond the sandbox sentinels.
var (
	// ErrInitMissing means the program never called Init, so the sandbox zygote cannot start.
	ErrInitMissing = fmt.Errorf("%w: local.Init was not called: call local.Init() as the first statement of "+
		"main (and of TestMain in tests)", sandbox.ErrUnsupported)
)

type config struct {
	root         string
	python       []string
	reapInterval time.Duration
	now          func() time.Time
	outputLimit  int
	logger       *slog.Logger
	unsafeNoIso  bool
	hostUIDBase  int
	cgroups      bool
	landlock     bool
	diskImages   bool
	egress       []string
	egressDial   func(ctx context.Context, network, addr string) (net.Conn, error)
	disk         diskTools
	sizes        map[sandbox.Size]sandbox.Limits
}

// Option configures New.
type Option func(*config)

// WithRoot sets the directory that holds every sandbox's state and files. The default is
// /var/lib/agentgraph/sandboxes for root and $XDG_STATE_HOME/agentgraph/sandboxes (else
// ~/.local/state/agentgraph/sandboxes) for other users.
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithPython sets the interpreter that `python3` and `python` run inside the sandbox, with its leading
// arguments; the default is /usr/bin/python3 -I. Without arguments the names are symlinks to path; with
// arguments, scripts that add them (a shell start more per run). The path must lie under a directory of
// the read-only root
// (/usr by default).
func WithPython(path string, args ...string) Option {
	return func(c *config) { c.python = append([]string{path}, args...) }
}

// WithReapInterval sets how often sandboxes past their TTL are stopped (default one minute). Zero keeps
// only the reaping New does at start-up; a negative interval disables both, leaving it to Reap.
func WithReapInterval(d time.Duration) Option { return func(c *config) { c.reapInterval = d } }

// WithClock sets the clock that sandbox times come from: when a sandbox was created, updated and resumed,
// when its TTL runs out, and what the reaper compares that with. The default is time.Now. Durations of
// commands and their timeouts are measured on the machine's monotonic clock whatever the option says.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithOutputLimit sets how many bytes of each of stdout and stderr a command keeps (its tail); default 1 MiB.
func WithOutputLimit(n int) Option { return func(c *config) { c.outputLimit = n } }

// WithLogger sets where warnings go; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithSizeLimits replaces the resources a Size grants in sandboxes created from now on.
func WithSizeLimits(size sandbox.Size, l sandbox.Limits) Option {
	return func(c *config) {
		if c.sizes == nil {
			c.sizes = map[sandbox.Size]sandbox.Limits{}
		}
		c.sizes[size] = l
	}
}

// WithoutCgroups makes root use rlimits instead of cgroups, as an unprivileged user must.
func WithoutCgroups() Option { return func(c *config) { c.cgroups = false } }

// WithoutDiskImages makes root keep sandbox files in plain directories, with the disk quota checked by
// measuring (as for an unprivileged user) instead of held by a file system of each sandbox's own.
func WithoutDiskImages() Option { return func(c *config) { c.diskImages = false } }

// WithUnsafeNoIsolation runs commands as plain child processes with none of the isolation: the code can read
// and change everything the calling user can. It exists for hosts without user namespaces and logs a warning
// at every Create.
func WithUnsafeNoIsolation() Option { return func(c *config) { c.unsafeNoIso = true } }

// DefaultRoot returns the root directory New uses when WithRoot is not given.
func DefaultRoot() string {
	if os.Geteuid() == 0 {
		return "/var/lib/agentgraph/sandboxes"
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentgraph", "sandboxes")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "agentgraph", "sandboxes")
}

// diskTools are the e2fsprogs programs that make a sandbox's disk image; Debian installs them with the base
// system.
type diskTools struct{ mkfs, tune2fs string }
