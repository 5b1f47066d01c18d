package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// Home is the sandboxed user's home directory and the base of relative paths.
const Home = "/home/user"

// Tmp is the sandbox's own temporary directory; paths under it are accepted too.
const Tmp = "/tmp"

// Limits on one call, shared by every backend so agent code can rely on them.
const (
	DefaultTTL         = time.Hour
	DefaultExecTimeout = 30 * time.Second
	MinExecTimeout     = time.Second
	MaxExecTimeout     = 600 * time.Second
	MaxReadFileSize    = 5 << 20  // ReadFile refuses larger files.
	MaxDownloadSize    = 50 << 20 // Download refuses larger files.
)

// Size names a resource class, as the cloud API's sandbox type does.
type Size string

// Sizes. The zero Size means SizeDefault.
const (
	SizeSmall   Size = "small"
	SizeDefault Size = "default"
	SizeLarge   Size = "large"
)

// Limits are the resources a Size grants.
type Limits struct {
	CPUs        float64 `json:"cpus"`        // CPU time share, in cores.
	MemoryBytes int64   `json:"memoryBytes"` // Resident memory of all processes together.
	DiskBytes   int64   `json:"diskBytes"`   // Home plus /tmp.
	Pids        int     `json:"pids"`        // Processes and threads at once.
}

// Limits returns the resources of s; it fails for a name that is not a Size.
func (s Size) Limits() (Limits, error) {
	switch s {
	case SizeSmall:
		return Limits{CPUs: 1, MemoryBytes: 512 << 20, DiskBytes: 1 << 30, Pids: 128}, nil
	case SizeDefault, "":
		return Limits{CPUs: 2, MemoryBytes: 2 << 30, DiskBytes: 5 << 30, Pids: 256}, nil
	case SizeLarge:
		return Limits{CPUs: 4, MemoryBytes: 8 << 30, DiskBytes: 20 << 30, Pids: 1024}, nil
	}
	return Limits{}, fmt.Errorf("%w: size %q: use small, default or large", ErrInvalidArgument, string(s))
}

// State is where a sandbox is in its lifecycle.
type State string

// States. A running sandbox accepts commands (it need not have a process running at the moment); a stopped
// one keeps its home but runs nothing until Resume.
const (
	StateRunning State = "running"
	StateStopped State = "stopped"
)

// Sentinel errors; backends wrap them so callers can test with errors.Is.
var (
	ErrNotFound        = errors.New("sandbox not found")
	ErrStopped         = errors.New("sandbox is stopped")
	ErrInvalidPath     = errors.New("invalid sandbox path")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrTooLarge        = errors.New("file too large")
	ErrQuota           = errors.New("sandbox disk quota exceeded")
	ErrUnsupported     = errors.New("sandbox isolation unavailable")
)

// CreateOptions configure a new sandbox.
type CreateOptions struct {
	Name string
	Size Size
	// TTL is how long the sandbox may run before it is stopped; zero means DefaultTTL.
	TTL time.Duration
	// Env is added to every command's environment, after the backend's base variables.
	Env map[string]string
	// HostNetwork gives commands the host's network instead of none, so that pip can reach a registry.
	HostNetwork bool
}

// Filter selects sandboxes in List; zero fields match anything.
type Filter struct {
	Name  string
	State State
}

// Info describes a sandbox.
type Info struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	State       State     `json:"state"`
	Size        Size      `json:"size"`
	Limits      Limits    `json:"limits"`
	HostNetwork bool      `json:"hostNetwork"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// ExecOptions configure one command.
type ExecOptions struct {
	// Timeout bounds the command's wall-clock time; zero means DefaultExecTimeout. When it passes, everything
	// the command started is killed.
	Timeout time.Duration
	// Cwd is the working directory, relative to Home (or absolute under Home or Tmp).
	Cwd string
	// Env is added to the environment after the sandbox's own Env.
	Env map[string]string
}

// ExecResult is what a finished command left. Output keeps the tail when it exceeds the backend's cap.
type ExecResult struct {
	Stdout, Stderr                   string
	ExitCode                         int // -1 after a timeout; 128+n when killed by signal n.
	TimedOut                         bool
	Duration                         time.Duration
	StdoutTruncated, StderrTruncated bool

	// Ending says why the command ended; empty from a backend that does not tell.
	Ending Ending
	// Signal is the number of the signal that ended the command's first process (SIGKILL when the backend
	// killed it), 0 when it exited by itself.
	Signal int
	// OOMKilled says the kernel killed a process of the sandbox for memory while the command ran (the
	// command itself, or a child of it whose death made it fail).
	OOMKilled bool
	// DiskFull says home and /tmp had no room left when the command ended, so writes that failed with "No
	// space left on device" or "Disk quota exceeded" may be why it failed. Removing files frees the space.
	DiskFull bool
}

// Ending is why a command ended.
type Ending string

// Endings. Only EndExited and EndSignaled are the program's own doing; the others name who ended it.
const (
	EndExited    Ending = "exited"    // it exited by itself with ExitCode
	EndSignaled  Ending = "signaled"  // a signal not sent by the backend ended it (Signal says which)
	EndTimedOut  Ending = "timed_out" // ExecOptions.Timeout passed and the backend killed it
	EndOOM       Ending = "oom"       // the kernel killed it for memory (the sandbox's memory limit)
	EndDisk      Ending = "disk"      // the backend killed it for passing the sandbox's disk quota
	EndStopped   Ending = "stopped"   // Stop (or the TTL reaper) killed it
	EndDeleted   Ending = "deleted"   // Delete killed it
	EndCancelled Ending = "cancelled" // the caller's context ended
)

// Backend creates and finds sandboxes.
type Backend interface {
	Create(ctx context.Context, opts CreateOptions) (Sandbox, error)
	// Get returns the sandbox with the id, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (Sandbox, error)
	List(ctx context.Context, f Filter) ([]Info, error)
}

// Sandbox is one isolated machine for untrusted code. Every method may be called from several goroutines.
type Sandbox interface {
	ID() string
	Info(ctx context.Context) (Info, error)
	// Exec runs command with /bin/sh -c in Home. A command that ran and failed is a result, not an error.
	// On a stopped sandbox it fails with ErrStopped. If ctx ends first, the command and everything it started
	// are killed and Exec returns what it printed so far with ctx's error.
	Exec(ctx context.Context, command string, opts ExecOptions) (ExecResult, error)
	// WriteFile creates or replaces a file, creating its parent directories.
	WriteFile(ctx context.Context, path string, data []byte) error
	// ReadFile returns a file of at most MaxReadFileSize bytes.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Stop kills every process of the sandbox and keeps its home.
	Stop(ctx context.Context) error
	// Resume makes a stopped sandbox accept commands again and restarts its TTL.
	Resume(ctx context.Context) error
	// Delete removes the sandbox and all its files; Get then fails with ErrNotFound.
	Delete(ctx context.Context) error
}

// FileInfo describes one entry of a directory listing.
type FileInfo struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"` // Absolute path inside the sandbox.
	Size    int64     `json:"size"`
	IsDir   bool      `json:"isDir"`
	ModTime time.Time `json:"modTime"`
}

// Downloader is implemented by sandboxes that stream a file of up to MaxDownloadSize bytes.
type Downloader interface {
	Download(ctx context.Context, path string, w io.Writer) (int64, error)
}

// FileLister is implemented by sandboxes that list a directory.
type FileLister interface {
	ListFiles(ctx context.Context, dir string) ([]FileInfo, error)
}

// FileRemover is implemented by sandboxes that remove a file or a directory tree.
type FileRemover interface {
	RemoveFile(ctx context.Context, path string) error
}

// CommandState is the state of a detached command.
type CommandState string

// Command states. Lost means the backend no longer knows the outcome (for example, another process started it).
const (
	CommandRunning CommandState = "running"
	CommandExited  CommandState = "exited"
	CommandLost    CommandState = "lost"
)

// CommandStatus reports on a detached command.
type CommandStatus struct {
	ID       string       `json:"id"`
	Command  string       `json:"command"`
	State    CommandState `json:"state"`
	ExitCode int          `json:"exitCode"` // Meaningful once State is CommandExited.
	Stdout   string       `json:"stdout"`   // Tail of the output so far.
	Stderr   string       `json:"stderr"`
}

// Starter is implemented by sandboxes that run detached commands. Start returns at once with a command id;
// the command's Timeout (zero: none) and Stop still bound it.
type Starter interface {
	Start(ctx context.Context, command string, opts ExecOptions) (string, error)
	Status(ctx context.Context, commandID string) (CommandStatus, error)
	Kill(ctx context.Context, commandID string) error
}

// Reaper is implemented by backends that stop sandboxes past their TTL on demand; it returns their ids.
type Reaper interface {
	Reap(ctx context.Context) ([]string, error)
}

// ResolvePath maps a path given by a caller to an absolute, clean path inside the sandbox. Relative paths
// start at Home; the result must be Home, Tmp, or below one of them, else the error wraps ErrInvalidPath.
// It is lexical only: backends must still refuse symlinks on the way.
func ResolvePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty path: give a path relative to %s or under %s", ErrInvalidPath, Home, Tmp)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: path contains a NUL byte", ErrInvalidPath)
	}
	abs := p
	if !path.IsAbs(p) {
		abs = Home + "/" + p
	}
	abs = path.Clean(abs)
	for _, base := range []string{Home, Tmp} {
		if abs == base || strings.HasPrefix(abs, base+"/") {
			return abs, nil
		}
	}
	return "", fmt.Errorf("%w: %q resolves to %s, outside %s and %s", ErrInvalidPath, p, abs, Home, Tmp)
}

// ValidateExecOptions checks the timeout and returns it with the default applied.
func ValidateExecOptions(opts ExecOptions) (time.Duration, error) {
	switch {
	case opts.Timeout == 0:
		return DefaultExecTimeout, nil
	case opts.Timeout < MinExecTimeout || opts.Timeout > MaxExecTimeout:
		return 0, fmt.Errorf("%w: timeout %v: use 1s to 600s", ErrInvalidArgument, opts.Timeout)
	}
	return opts.Timeout, nil
}
