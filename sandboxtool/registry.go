package sandboxtool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Environment variables read by WithSettingsFromEnv, as the sandbox guide's tool reads them. Without that
// option a Registry reads neither.
const (
	EnvPrefix  = "SANDBOX_PREFIX"
	EnvTimeout = "RUN_TIMEOUT"
)

// Defaults, as the sandbox guide has them.
const (
	DefaultPrefix  = "langgraph-"
	DefaultTimeout = 120 * time.Second
	DefaultTTL     = 1800 * time.Second
	DefaultSize    = sandbox.SizeSmall
	// OutputLimit is how many characters of a run's output (stdout, then stderr) the tool returns: the tail.
	OutputLimit = 4000
)

// ErrClosing reports a sandbox request made while Close is running.
var ErrClosing = errors.New("sandboxtool: the registry is closing: wait for Close to return, then call again")

// Action is what Close did to a sandbox.
type Action string

// Actions of Close.
const (
	Deleted Action = "deleted"
	Stopped Action = "stopped"
)

// Closed reports what Close did to one thread's sandbox.
type Closed struct {
	ThreadID  string
	SandboxID string
	Action    Action
}

// String reads like the guide's cleanup line: "deleted sb_x (1)".
func (c Closed) String() string { return fmt.Sprintf("%s %s (%s)", c.Action, c.SandboxID, c.ThreadID) }

// Option configures New. Options apply in order, so a later one overrides what an earlier one set.
type Option func(*Registry)

// WithPrefix sets the sandbox name prefix (the name is prefix + thread id). Without it the prefix is
// DefaultPrefix.
func WithPrefix(p string) Option { return func(r *Registry) { r.prefix = p } }

// WithTimeout sets the wall-clock limit of each run, 1 s to 600 s; zero means DefaultTimeout, which is also
// the limit without this option.
func WithTimeout(d time.Duration) Option {
	return func(r *Registry) { r.timeout, r.timeoutFromEnv = d, false }
}

// WithSettingsFromEnv makes the Registry take its settings from the environment as the sandbox guide's tool
// does: the prefix from $SANDBOX_PREFIX, read once by New, and each run's timeout from $RUN_TIMEOUT (whole
// seconds, 1 to 600), read at every call so that a program may change it between calls. While a variable is
// unset (RUN_TIMEOUT: or empty) its setting stays as it was: DefaultPrefix and DefaultTimeout, or what an
// earlier WithPrefix or WithTimeout set. A later WithPrefix or WithTimeout wins over the variable.
func WithSettingsFromEnv() Option {
	return func(r *Registry) {
		if p, ok := os.LookupEnv(EnvPrefix); ok {
			r.prefix = p
		}
		r.timeoutFromEnv = true
	}
}

// WithCreateOptions sets what new sandboxes are created with. Name is always prefix + thread id; a zero TTL
// means DefaultTTL and a zero Size means DefaultSize. Set HostNetwork to let the model's programs install
// packages.
func WithCreateOptions(o sandbox.CreateOptions) Option { return func(r *Registry) { r.create = o } }

// WithStopOnClose makes Close stop sandboxes instead of deleting them, so their files wait for the thread's
// next run (in this process or after a restart).
func WithStopOnClose() Option { return func(r *Registry) { r.keep = true } }

// Registry maps graph threads to sandboxes of one backend: the sandbox of thread T is named prefix + T. The
// first request for a thread looks the name up with Backend.List, so after a restart the thread reaches the
// sandbox it had, resumed if it was stopped; only when there is none is a sandbox created. Concurrent
// requests for one thread wait for the same lookup, so a thread never gets two sandboxes from one Registry.
//
// Every sandbox a Registry hands out, created or found, is its to clean up: Close deletes them (or, with
// WithStopOnClose, stops them). A Registry is safe for concurrent use.
type Registry struct {
	backend        sandbox.Backend
	prefix         string
	timeout        time.Duration
	timeoutFromEnv bool // read $RUN_TIMEOUT at every call
	create         sandbox.CreateOptions
	keep           bool

	mu      sync.Mutex
	threads map[string]*entry
	order   []string // threads in order of first use, for Close
	closing bool
}

// entry is one thread's sandbox; ready closes when the lookup ends, and then sb or err is set. turn holds a
// token while a program runs, since programs share main.py.
type entry struct {
	ready chan struct{}
	sb    sandbox.Sandbox
	err   error
	turn  chan struct{}
}

// New returns a Registry over backend.
func New(backend sandbox.Backend, opts ...Option) *Registry {
	r := &Registry{backend: backend, prefix: DefaultPrefix, timeout: DefaultTimeout, threads: map[string]*entry{}}
	for _, o := range opts {
		o(r)
	}
	if r.create.TTL == 0 {
		r.create.TTL = DefaultTTL
	}
	if r.create.Size == "" {
		r.create.Size = DefaultSize
	}
	return r
}

// Name returns the name of thread's sandbox.
func (r *Registry) Name(threadID string) string { return r.prefix + threadID }

// Sandbox returns thread's sandbox: the one this Registry already holds, else the backend's running or
// stopped sandbox with the thread's name (resumed if stopped), else a new one.
func (r *Registry) Sandbox(ctx context.Context, threadID string) (sandbox.Sandbox, error) {
	e, err := r.entry(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return e.sb, nil
}

// entry returns thread's entry once its lookup has succeeded.
func (r *Registry) entry(ctx context.Context, threadID string) (*entry, error) {
	if threadID == "" {
		return nil, fmt.Errorf("sandboxtool: empty thread id: pass the graph thread the sandbox belongs to")
	}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil, ErrClosing
	}
	e, ok := r.threads[threadID]
	if !ok {
		e = &entry{ready: make(chan struct{}), turn: make(chan struct{}, 1)}
		r.threads[threadID] = e
		r.order = append(r.order, threadID)
		// The lookup runs on its own, so that a caller who gives up neither cancels it for the others
		// waiting nor leaves a half-made sandbox: Close waits for it and cleans up what it made.
		go r.lookup(context.WithoutCancel(ctx), threadID, e)
	}
	r.mu.Unlock()
	if ctx.Err() != nil {
		// Given up already: say so even if the lookup happens to be done.
		return nil, context.Cause(ctx)
	}
	select {
	case <-e.ready:
		if e.err != nil {
			return nil, e.err
		}
		return e, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// lookup fills e with the thread's sandbox and closes e.ready.
func (r *Registry) lookup(ctx context.Context, threadID string, e *entry) {
	defer close(e.ready)
	e.sb, e.err = r.open(ctx, threadID)
	if e.err != nil {
		r.mu.Lock()
		if r.threads[threadID] == e {
			r.drop(threadID) // the next call tries again
		}
		r.mu.Unlock()
	}
}

// open finds the thread's sandbox by name or creates it.
func (r *Registry) open(ctx context.Context, threadID string) (sandbox.Sandbox, error) {
	name := r.Name(threadID)
	infos, err := r.backend.List(ctx, sandbox.Filter{Name: name})
	if err != nil {
		return nil, fmt.Errorf("sandboxtool: look up sandbox %q: %w", name, err)
	}
	// Prefer a running sandbox, then the newest: List returns oldest first.
	slices.SortStableFunc(infos, func(a, b sandbox.Info) int {
		if (a.State == sandbox.StateRunning) != (b.State == sandbox.StateRunning) {
			if a.State == sandbox.StateRunning {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	for _, info := range infos {
		sb, err := r.backend.Get(ctx, info.ID)
		if errors.Is(err, sandbox.ErrNotFound) {
			continue // deleted since List
		}
		if err != nil {
			return nil, fmt.Errorf("sandboxtool: open sandbox %s of thread %q: %w", info.ID, threadID, err)
		}
		if info.State == sandbox.StateStopped {
			if err := sb.Resume(ctx); err != nil {
				return nil, fmt.Errorf("sandboxtool: resume sandbox %s of thread %q: %w", info.ID, threadID, err)
			}
		}
		return sb, nil
	}
	opts := r.create
	opts.Name = name
	sb, err := r.backend.Create(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("sandboxtool: create sandbox %q: %w", name, err)
	}
	return sb, nil
}

// forget drops thread's sandbox if it is still sb, so the next call looks it up again.
func (r *Registry) forget(threadID string, sb sandbox.Sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.threads[threadID]; ok && e.sb == sb {
		r.drop(threadID)
	}
}

// drop removes thread's entry; r.mu is held.
func (r *Registry) drop(threadID string) {
	delete(r.threads, threadID)
	r.order = slices.DeleteFunc(r.order, func(t string) bool { return t == threadID })
}

// Close deletes every sandbox the Registry holds (with WithStopOnClose, stops them), in the order the threads first
// used them, and reports each. It tries them all and returns every failure joined; a sandbox already gone
// counts as deleted. The Registry is empty afterwards and may be used again.
func (r *Registry) Close(ctx context.Context) ([]Closed, error) {
	r.mu.Lock()
	r.closing = true
	order := slices.Clone(r.order)
	entries := make([]*entry, len(order))
	for i, t := range order {
		entries[i] = r.threads[t]
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.closing = false
		r.mu.Unlock()
	}()
	var (
		out  []Closed
		errs []error
	)
	for i, t := range order {
		e := entries[i]
		<-e.ready // a lookup under way finishes first, so its sandbox is not missed
		if e.err != nil {
			continue
		}
		c := Closed{ThreadID: t, SandboxID: e.sb.ID(), Action: Deleted}
		var err error
		if r.keep {
			c.Action = Stopped
			err = e.sb.Stop(ctx)
		} else if err = e.sb.Delete(ctx); errors.Is(err, sandbox.ErrNotFound) {
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sandboxtool: %s sandbox %s of thread %q: %w", c.Action, c.SandboxID, t, err))
			continue
		}
		out = append(out, c)
	}
	r.mu.Lock()
	r.threads, r.order = map[string]*entry{}, nil
	r.mu.Unlock()
	return out, errors.Join(errs...)
}

// runTimeout is $RUN_TIMEOUT now if WithSettingsFromEnv asked for it and it is set, else the set timeout.
func (r *Registry) runTimeout() (time.Duration, error) {
	d := r.timeout
	if s := r.envTimeout(); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("sandboxtool: %s=%q is not a whole number of seconds: set it to 1 to 600", EnvTimeout, s)
		}
		d = time.Duration(n) * time.Second
	} else if d == 0 {
		d = DefaultTimeout
	}
	if d < sandbox.MinExecTimeout || d > sandbox.MaxExecTimeout {
		return 0, fmt.Errorf("sandboxtool: run timeout %v: %w: use 1s to 600s", d, sandbox.ErrInvalidArgument)
	}
	return d, nil
}

// envTimeout is $RUN_TIMEOUT if WithSettingsFromEnv asked for it, else "".
func (r *Registry) envTimeout() string {
	if !r.timeoutFromEnv {
		return ""
	}
	return os.Getenv(EnvTimeout)
}
