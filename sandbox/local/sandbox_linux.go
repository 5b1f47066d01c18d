package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// sbx is a handle on one sandbox; all its state is on disk, so handles are cheap and any number may exist.
type sbx struct {
	b   *Backend
	id  string
	dir string
}

var (
	_ sandbox.Sandbox     = (*sbx)(nil)
	_ sandbox.Downloader  = (*sbx)(nil)
	_ sandbox.FileLister  = (*sbx)(nil)
	_ sandbox.FileRemover = (*sbx)(nil)
	_ sandbox.Starter     = (*sbx)(nil)
)

func (s *sbx) diskDir() string  { return filepath.Join(s.dir, diskDirName) }
func (s *sbx) home() string     { return filepath.Join(s.dir, diskDirName, "home") }
func (s *sbx) tmp() string      { return filepath.Join(s.dir, diskDirName, "tmp") }
func (s *sbx) runDir() string   { return filepath.Join(s.dir, "run") }
func (s *sbx) lockPath() string { return filepath.Join(s.dir, "lock") }

// recordPath is the empty file every run record is a hard link to.
func (s *sbx) recordPath() string { return filepath.Join(s.dir, "record") }

func (s *sbx) ID() string { return s.id }

func (s *sbx) Info(ctx context.Context) (sandbox.Info, error) {
	m, err := s.readMeta()
	if err != nil {
		return sandbox.Info{}, err
	}
	return m.Info, nil
}

func (s *sbx) Exec(ctx context.Context, command string, opts sandbox.ExecOptions) (sandbox.ExecResult, error) {
	timeout, err := sandbox.ValidateExecOptions(opts)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	p, err := s.start(ctx, command, opts, timeout)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	p.wait()
	if p.cancelled.Load() && !p.timedOut.Load() {
		return p.result(), fmt.Errorf("exec in %s: %w", s.id, ctx.Err())
	}
	return p.result(), nil
}

// Stop kills every process of the sandbox (from whichever process started them), empties its /tmp and
// marks it stopped. Stopping a stopped sandbox does nothing.
func (s *sbx) Stop(ctx context.Context) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	// The state changes first, so whoever sees a command die also sees the sandbox stopped.
	if m.State != sandbox.StateStopped {
		m.State = sandbox.StateStopped
		m.UpdatedAt = s.b.stamp()
		if err := s.writeMeta(m); err != nil {
			return err
		}
	}
	if err := s.killAll(ctx); err != nil {
		return err
	}
	if m.DiskImage {
		if err := s.mountDisk(); err != nil {
			return fmt.Errorf("stop %s: %w", s.id, err)
		}
	}
	if err := clearDir(s.tmp()); err != nil {
		return fmt.Errorf("stop %s: empty /tmp: %w", s.id, err)
	}
	if m.DiskImage {
		return s.unmountDisk()
	}
	return nil
}

// Resume lets a stopped sandbox run commands again; its TTL starts afresh.
func (s *sbx) Resume(ctx context.Context) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	now := s.b.stamp()
	m.State = sandbox.StateRunning
	m.UpdatedAt = now
	m.ExpiresAt = now.Add(m.TTL)
	return s.writeMeta(m)
}

// Delete kills the sandbox's processes and removes all its files.
func (s *sbx) Delete(ctx context.Context) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	if !m.Deleting || m.State != sandbox.StateStopped {
		m.State, m.Deleting, m.UpdatedAt = sandbox.StateStopped, true, s.b.stamp()
		if err := s.writeMeta(m); err != nil {
			return err
		}
	}
	if err := s.killAll(ctx); err != nil {
		return err
	}
	if err := s.unmountDisk(); err != nil {
		return err
	}
	// The record goes first, so a crash midway leaves no half sandbox that Get would return.
	if err := os.Remove(filepath.Join(s.dir, "sandbox.json")); err != nil {
		return fmt.Errorf("delete %s: %w", s.id, err)
	}
	if err := removeAll(s.dir); err != nil {
		return fmt.Errorf("delete %s: %w", s.id, err)
	}
	return nil
}

func (s *sbx) lock(how int) (func(), error) {
	unlock, err := record.Lock(s.lockPath(), how)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrNotFound, s.id)
	}
	if err != nil {
		return nil, fmt.Errorf("lock sandbox %s: %w", s.id, err)
	}
	return unlock, nil
}

// A run record <runDir>/<pid>-<starttime> names the command's first process (pid 1 of a command's namespaces), so any process
// can kill the command; the start time guards against a reused pid.
func runRecord(pid int) (string, error) {
	st, err := procStartTime(pid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%d", pid, st), nil
}

func procStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndex(string(data), ") ") // comm may contain spaces and parens
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data)[i+2:])
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, os.ErrNotExist
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// liveRuns returns the pids of recorded commands that still run, and removes stale records.
func (s *sbx) liveRuns() []int {
	entries, _ := os.ReadDir(s.runDir())
	var pids []int
	for _, e := range entries {
		pidStr, stStr, ok := strings.Cut(e.Name(), "-")
		pid, err1 := strconv.Atoi(pidStr)
		st, err2 := strconv.ParseUint(stStr, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			os.Remove(filepath.Join(s.runDir(), e.Name()))
			continue
		}
		if cur, err := procStartTime(pid); err != nil || cur != st {
			os.Remove(filepath.Join(s.runDir(), e.Name()))
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// killAll kills every recorded command; the kernel then kills everything in its pid namespace. It waits
// until they are gone, then removes the sandbox's cgroups. The caller holds the exclusive lock.
func (s *sbx) killAll(ctx context.Context) error {
	s.b.killDetached(s.id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := s.liveRuns()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			unix.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stop %s: processes %v survived SIGKILL for 10s", s.id, pids)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return s.removeCgroups(ctx)
}

// removeCgroups removes the sandbox's cgroups and forgets that this backend set their limits.
func (s *sbx) removeCgroups(ctx context.Context) error {
	s.b.mu.Lock()
	delete(s.b.limited, s.id)
	s.b.mu.Unlock()
	if s.b.cfg.cgroups {
		s.b.dropCgroups(s.id)
	}
	return removeCgroups(ctx, s.id)
}

// pruneRuns drops stale run records and, when nothing runs, the sandbox's idle cgroups.
func (s *sbx) pruneRuns() {
	unlock, err := s.lock(unix.LOCK_EX | unix.LOCK_NB)
	if err != nil {
		return // busy: someone is starting or stopping a command
	}
	defer unlock()
	if len(s.liveRuns()) == 0 {
		s.removeCgroups(context.Background())
	}
}

// clearDir removes what is inside dir, keeping dir.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := removeAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// removeAll is os.RemoveAll that also gets past directories the sandboxed code made unwritable.
func removeAll(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
