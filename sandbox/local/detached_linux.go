package local

import (
	"context"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
)

// detachedRetention is how long the outcome of a finished detached command stays available to Status.
const detachedRetention = 10 * time.Minute

// detached is a command started with Start; only the process that started it knows its outcome.
type detached struct {
	id, sandboxID string
	p             *proc
	exited        chan struct{}
}

func (d *detached) kill() { d.p.kill() }

// Start runs command in the background and returns its id at once. opts.Timeout zero means no timeout;
// Stop, Delete, the TTL and Backend.Close still end it. Status and Kill work only in the process that called
// Start (elsewhere they return ErrNotFound), and Status remembers a finished command for ten minutes.
func (s *sbx) Start(ctx context.Context, command string, opts sandbox.ExecOptions) (string, error) {
	var timeout time.Duration
	if opts.Timeout != 0 {
		t, err := sandbox.ValidateExecOptions(opts)
		if err != nil {
			return "", err
		}
		timeout = t
	}
	p, err := s.start(context.WithoutCancel(ctx), command, opts, timeout)
	if err != nil {
		return "", err
	}
	d := &detached{id: record.NewID("cmd_"), sandboxID: s.id, p: p, exited: p.exited}
	s.b.mu.Lock()
	for id, old := range s.b.running {
		select {
		case <-old.exited:
			if time.Since(old.p.started.Add(old.p.duration)) > detachedRetention {
				delete(s.b.running, id)
			}
		default:
		}
	}
	s.b.running[d.id] = d
	s.b.mu.Unlock()
	return d.id, nil
}

func (s *sbx) lookup(commandID string) (*detached, error) {
	s.b.mu.Lock()
	d := s.b.running[commandID]
	s.b.mu.Unlock()
	if d == nil || d.sandboxID != s.id {
		return nil, fmt.Errorf("%w: command %s in %s (commands are known only to the process that started them)",
			sandbox.ErrNotFound, commandID, s.id)
	}
	return d, nil
}

// Status reports whether the command runs, and the tail of its output so far.
func (s *sbx) Status(ctx context.Context, commandID string) (sandbox.CommandStatus, error) {
	d, err := s.lookup(commandID)
	if err != nil {
		return sandbox.CommandStatus{}, err
	}
	st := sandbox.CommandStatus{ID: d.id, Command: d.p.command, State: sandbox.CommandRunning}
	select {
	case <-d.exited:
		r := d.p.result()
		st.State, st.ExitCode, st.Stdout, st.Stderr = sandbox.CommandExited, r.ExitCode, r.Stdout, r.Stderr
	default:
		st.Stdout, _ = d.p.stdout.String()
		st.Stderr, _ = d.p.stderr.String()
	}
	return st, nil
}

// Kill ends the command and everything it started, and waits until they are gone.
func (s *sbx) Kill(ctx context.Context, commandID string) error {
	d, err := s.lookup(commandID)
	if err != nil {
		return err
	}
	d.kill()
	select {
	case <-d.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// killDetached kills this process's detached commands of one sandbox, waits for them and forgets them.
func (b *Backend) killDetached(sandboxID string) {
	b.mu.Lock()
	var ds []*detached
	for id, d := range b.running {
		if d.sandboxID == sandboxID {
			ds = append(ds, d)
			delete(b.running, id)
		}
	}
	b.mu.Unlock()
	for _, d := range ds {
		d.kill()
		<-d.exited
	}
}
