package gvisor

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

type config struct {
	root         string
	runsc        string
	platform     string
	python       []string
	reapInterval time.Duration
	outputLimit  int
	logger       *slog.Logger
	cgroups      bool
	sizes        map[sandbox.Size]sandbox.Limits
}

// Option configures New.
type Option func(*config)

// WithRoot sets the directory that holds every sandbox's state and files. The default is
// /var/lib/agentgraph/gvisor for root and $XDG_STATE_HOME/agentgraph/gvisor (else
// ~/.local/state/agentgraph/gvisor) for other users. Do not share it with the local backend's root.
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithRunsc sets the runsc binary; the default is the first runsc on PATH, then /usr/bin/runsc and
// /usr/local/bin/runsc.
func WithRunsc(path string) Option { return func(c *config) { c.runsc = path } }

// WithPlatform sets runsc's platform (its -platform flag). The default is ptrace, which needs no
// virtualization; systrap (gVisor releases since 2023) is faster where runsc has it, kvm needs /dev/kvm
// that can run guests.
func WithPlatform(name string) Option { return func(c *config) { c.platform = name } }

// WithPython sets the interpreter that `python3` and `python` run inside the sandbox, with its leading
// arguments; the default is /usr/bin/python3 -I. The path must lie under /usr.
func WithPython(path string, args ...string) Option {
	return func(c *config) { c.python = append([]string{path}, args...) }
}

// WithReapInterval sets how often sandboxes past their TTL are stopped (default one minute). Zero keeps
// only the reaping New does at start-up; a negative interval disables both, leaving it to Reap.
func WithReapInterval(d time.Duration) Option { return func(c *config) { c.reapInterval = d } }

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

// WithoutCgroups makes root hold memory and CPU with rlimits inside gVisor instead of host cgroups, as an
// unprivileged user must.
func WithoutCgroups() Option { return func(c *config) { c.cgroups = false } }

// DefaultRoot returns the root directory New uses when WithRoot is not given.
func DefaultRoot() string {
	if os.Geteuid() == 0 {
		return "/var/lib/agentgraph/gvisor"
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentgraph", "gvisor")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "agentgraph", "gvisor")
}
