package gvisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// sbx is a handle on one sandbox; its state lives on disk, so any number of handles may exist.
type sbx struct {
	b   *Backend
	id  string
	dir string
}

var (
	_ sandbox.Sandbox     = (*sbx)(nil)
	_ sandbox.Starter     = (*sbx)(nil)
	_ sandbox.Downloader  = (*sbx)(nil)
	_ sandbox.FileLister  = (*sbx)(nil)
	_ sandbox.FileRemover = (*sbx)(nil)
)

func (s *sbx) home() string   { return filepath.Join(s.dir, "home") }
func (s *sbx) tmp() string    { return filepath.Join(s.dir, "tmp") }
func (s *sbx) runDir() string { return filepath.Join(s.dir, "run") }

func (s *sbx) lock(how int) (func(), error) {
	unlock, err := record.Lock(filepath.Join(s.dir, "lock"), how)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrNotFound, s.id)
	}
	return unlock, err
}

func (s *sbx) ID() string { return s.id }

// String names the sandbox for logs.
func (s *sbx) String() string { return "gvisor sandbox " + s.id }

func (s *sbx) Info(ctx context.Context) (sandbox.Info, error) {
	m, err := s.readMeta()
	if err != nil {
		return sandbox.Info{}, err
	}
	if m.Deleting {
		return sandbox.Info{}, fmt.Errorf("%w: %s is being deleted", sandbox.ErrNotFound, s.id)
	}
	return m.Info, nil
}

// Stop kills every command of the sandbox, wherever it was started, empties /tmp and keeps home.
func (s *sbx) Stop(ctx context.Context) error {
	if err := s.setState(func(m *meta) error {
		if m.State != sandbox.StateStopped {
			m.State, m.UpdatedAt = sandbox.StateStopped, s.b.stamp()
		}
		return nil
	}); err != nil {
		return err
	}
	s.killAll(ctx, sandbox.EndStopped)
	if err := emptyDir(s.tmp()); err != nil {
		return fmt.Errorf("stop %s: empty /tmp: %w", s.id, err)
	}
	if s.b.cfg.cgroups {
		if err := removeCgroups(s.id); err != nil {
			return fmt.Errorf("stop %s: %w", s.id, err)
		}
	}
	return nil
}

// Resume lets a stopped sandbox run commands again and restarts its TTL.
func (s *sbx) Resume(ctx context.Context) error {
	return s.setState(func(m *meta) error {
		now := s.b.stamp()
		m.State, m.UpdatedAt, m.ExpiresAt = sandbox.StateRunning, now, now.Add(m.TTL)
		return nil
	})
}

// Delete kills the sandbox's commands and removes it with its files.
func (s *sbx) Delete(ctx context.Context) error {
	if err := s.setState(func(m *meta) error {
		m.Deleting = true
		return nil
	}); err != nil {
		return err
	}
	s.killAll(ctx, sandbox.EndDeleted)
	s.b.mu.Lock()
	for id, p := range s.b.detached {
		if p.s.id == s.id {
			delete(s.b.detached, id)
		}
	}
	s.b.mu.Unlock()
	var errs []error
	if s.b.cfg.cgroups {
		errs = append(errs, removeCgroups(s.id))
	}
	// The record goes first, so a half-removed directory is no longer a sandbox.
	if err := os.Remove(filepath.Join(s.dir, "sandbox.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	errs = append(errs, os.RemoveAll(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %s: %w", s.id, err)
	}
	return nil
}

// setState changes the record under the exclusive lock, which waits for commands that are starting.
func (s *sbx) setState(change func(*meta) error) error {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	if m.Deleting {
		return fmt.Errorf("%w: %s is being deleted", sandbox.ErrNotFound, s.id)
	}
	if err := change(m); err != nil {
		return err
	}
	return s.writeMeta(m)
}

// killAll ends every container of the sandbox: those this process runs through their handles (waiting until
// they are gone), the others through runsc by the records their starters left.
func (s *sbx) killAll(ctx context.Context, why sandbox.Ending) {
	s.b.mu.Lock()
	var mine []*proc
	for _, p := range s.b.procs {
		if p.s.id == s.id {
			mine = append(mine, p)
		}
	}
	s.b.mu.Unlock()
	for _, p := range mine {
		p.kill(why)
	}
	for _, p := range mine {
		select {
		case <-p.exited:
		case <-ctx.Done():
			return
		}
	}
	entries, _ := os.ReadDir(s.runDir())
	for _, e := range entries {
		cid := e.Name()
		s.b.mu.Lock()
		_, ours := s.b.procs[cid]
		s.b.mu.Unlock()
		if !ours {
			s.b.destroy(cid)
			os.RemoveAll(filepath.Join(s.runDir(), cid))
		}
	}
}

// pruneRuns kills the containers whose starting process died and removes their records.
func (s *sbx) pruneRuns() {
	entries, _ := os.ReadDir(s.runDir())
	for _, e := range entries {
		cid := e.Name()
		data, err := os.ReadFile(filepath.Join(s.runDir(), cid, "owner"))
		if err == nil && ownerAlive(string(data)) {
			continue
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		s.b.destroy(cid)
		os.RemoveAll(filepath.Join(s.runDir(), cid))
	}
}

// ownerRecord names this process in a way that a recycled pid does not match: pid and start time.
func ownerRecord() string {
	return strconv.Itoa(os.Getpid()) + " " + procStart(os.Getpid())
}

func ownerAlive(rec string) bool {
	pid, start, ok := strings.Cut(strings.TrimSpace(rec), " ")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(pid)
	return err == nil && procStart(n) == start && start != ""
}

// procStart is a process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), "" if gone.
func procStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(data)[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// diskUsage is the space home and /tmp take, walked on the host without following links.
func (s *sbx) diskUsage() (int64, error) {
	var total int64
	for _, d := range []string{s.home(), s.tmp()} {
		n, err := duAt(unix.AT_FDCWD, d)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func duAt(dirfd int, name string) (int64, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, nil
		}
		return 0, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	total := st.Blocks * 512
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				sub, err := duAt(fd, n)
				if err != nil {
					return 0, err
				}
				total += sub
			} else {
				total += st.Blocks * 512
			}
		}
		if err != nil {
			break
		}
	}
	return total, nil
}
