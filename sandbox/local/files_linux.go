package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"golang.org/x/sys/unix"
)

// The host touches sandbox files only through openat2 beneath the home or /tmp directory, refusing every
// symlink and mount crossing: sandboxed code may plant a symlink to /etc/shadow and wait for the host to
// follow it.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// locate maps a sandbox path to the host directory it lives under and the path relative to it.
func (s *sbx) locate(p string) (abs, base, rel string, err error) {
	abs, err = sandbox.ResolvePath(p)
	if err != nil {
		return "", "", "", err
	}
	m, err := s.readMeta()
	if err != nil {
		return "", "", "", err
	}
	if m.DiskImage {
		if err := s.mountDisk(); err != nil {
			return "", "", "", err
		}
	}
	if r, ok := strings.CutPrefix(abs, sandbox.Home); ok {
		return abs, s.home(), strings.TrimPrefix(r, "/"), nil
	}
	r, _ := strings.CutPrefix(abs, sandbox.Tmp)
	return abs, s.tmp(), strings.TrimPrefix(r, "/"), nil
}

func openBeneath(dirfd int, rel string, flags uint64, mode uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags})
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a concurrent rename raced the lookup; RESOLVE_BENEATH asks to retry
		}
		return fd, err
	}
}

// pathError turns a lookup failure into an error that says what went wrong.
func pathError(op, abs string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %s %s: the path goes through a symlink or mount, which the host never follows", sandbox.ErrInvalidPath, op, abs)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s %s: %w", op, abs, fs.ErrNotExist)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: %s %s: a parent is not a directory", sandbox.ErrInvalidPath, op, abs)
	}
	return fmt.Errorf("%s %s: %w", op, abs, err)
}

// checkDir makes sure a working directory exists and is a directory the host can reach without following a
// symlink, so that a bad Cwd is the caller's error rather than a failure deep in the sandbox setup.
func (s *sbx) checkDir(abs string) error {
	_, base, rel, err := s.locate(abs)
	if err != nil {
		return err
	}
	basefd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", abs, err)
	}
	defer unix.Close(basefd)
	fd, err := openBeneath(basefd, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%w: working directory %s does not exist or is not a directory: create it first",
				sandbox.ErrInvalidArgument, abs)
		}
		return pathError("working directory", abs, err)
	}
	unix.Close(fd)
	return nil
}

// openRegular opens a regular file for reading and returns it with its size.
func (s *sbx) openRegular(p, op string) (*os.File, int64, string, error) {
	abs, base, rel, err := s.locate(p)
	if err != nil {
		return nil, 0, "", err
	}
	basefd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, "", fmt.Errorf("%s %s: %w", op, abs, err)
	}
	defer unix.Close(basefd)
	fd, err := openBeneath(basefd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, "", pathError(op, abs, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, "", fmt.Errorf("%s %s: %w", op, abs, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, "", fmt.Errorf("%w: %s %s: not a regular file", sandbox.ErrInvalidPath, op, abs)
	}
	return f, fi.Size(), abs, nil
}

func (s *sbx) ReadFile(ctx context.Context, p string) ([]byte, error) {
	f, size, abs, err := s.openRegular(p, "read")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > sandbox.MaxReadFileSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d: use Download", sandbox.ErrTooLarge, abs, size, sandbox.MaxReadFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, sandbox.MaxReadFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", abs, err)
	}
	if len(data) > sandbox.MaxReadFileSize {
		return nil, fmt.Errorf("%w: %s grew past %d bytes while being read", sandbox.ErrTooLarge, abs, sandbox.MaxReadFileSize)
	}
	return data, nil
}

// Download copies a file of at most MaxDownloadSize bytes to w.
func (s *sbx) Download(ctx context.Context, p string, w io.Writer) (int64, error) {
	f, size, abs, err := s.openRegular(p, "download")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if size > sandbox.MaxDownloadSize {
		return 0, fmt.Errorf("%w: %s is %d bytes, more than %d", sandbox.ErrTooLarge, abs, size, sandbox.MaxDownloadSize)
	}
	n, err := io.Copy(w, io.LimitReader(f, sandbox.MaxDownloadSize))
	if err != nil {
		return n, fmt.Errorf("download %s: %w", abs, err)
	}
	return n, nil
}

// WriteFile creates or replaces a file, making missing parent directories; the sandbox user owns them all.
func (s *sbx) WriteFile(ctx context.Context, p string, data []byte) error {
	abs, base, rel, err := s.locate(p)
	if err != nil {
		return err
	}
	if rel == "" {
		return fmt.Errorf("%w: write %s: that is a directory", sandbox.ErrInvalidPath, abs)
	}
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	// With a disk image the host may go hostSlack past the quota, out of the root reserve, so that a full
	// sandbox can still get a new main.py; without one the quota is measured.
	used, limit := int64(0), m.Limits.DiskBytes
	if m.DiskImage {
		used, err = s.diskUsed()
		limit += hostSlack
	} else {
		used, err = s.diskUsage()
	}
	if err != nil {
		return fmt.Errorf("write %s: measure disk use: %w", abs, err)
	}
	if old := s.fileSize(base, rel); used-old+int64(len(data)) > limit {
		return fmt.Errorf("%w: writing %d bytes to %s would exceed %d bytes: remove files first", sandbox.ErrQuota, len(data), abs, m.Limits.DiskBytes)
	}
	uid, gid := m.HostUID, hostGID(m.HostUID)
	dirfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	defer func() { unix.Close(dirfd) }()
	dir, name := path.Split(rel)
	for _, comp := range strings.Split(strings.Trim(dir, "/"), "/") {
		if comp == "" {
			continue
		}
		if err := unix.Mkdirat(dirfd, comp, 0o755); err == nil {
			if err := unix.Fchownat(dirfd, comp, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("write %s: %w", abs, err)
			}
		} else if !errors.Is(err, unix.EEXIST) {
			return pathError("write", abs, err)
		}
		next, err := openBeneath(dirfd, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return pathError("write", abs, err)
		}
		unix.Close(dirfd)
		dirfd = next
	}
	fd, err := openBeneath(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY, 0o644)
	if err != nil {
		return pathError("write", abs, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: write %s: not a regular file", sandbox.ErrInvalidPath, abs)
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if _, err := f.Write(data); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
			return fmt.Errorf("%w: write %s: %v: remove files first", sandbox.ErrQuota, abs, err)
		}
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	return f.Close()
}

// fileSize is the space the regular file at rel under base takes now (0 if none), which replacing it frees.
func (s *sbx) fileSize(base, rel string) int64 {
	basefd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(basefd)
	fd, err := openBeneath(basefd, rel, unix.O_PATH, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0
	}
	return st.Blocks * 512
}

// ListFiles lists a directory; symlinks are listed, not followed.
func (s *sbx) ListFiles(ctx context.Context, dir string) ([]sandbox.FileInfo, error) {
	abs, base, rel, err := s.locate(dir)
	if err != nil {
		return nil, err
	}
	basefd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", abs, err)
	}
	defer unix.Close(basefd)
	fd, err := openBeneath(basefd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathError("list", abs, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", abs, err)
	}
	out := make([]sandbox.FileInfo, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		out = append(out, sandbox.FileInfo{Name: n, Path: path.Join(abs, n), Size: st.Size,
			IsDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ModTime: time.Unix(st.Mtim.Unix())})
	}
	return out, nil
}

// RemoveFile removes a file or a directory tree; home and /tmp themselves cannot be removed.
func (s *sbx) RemoveFile(ctx context.Context, p string) error {
	abs, base, rel, err := s.locate(p)
	if err != nil {
		return err
	}
	if rel == "" {
		return fmt.Errorf("%w: remove %s: home and /tmp cannot be removed", sandbox.ErrInvalidPath, abs)
	}
	basefd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove %s: %w", abs, err)
	}
	defer unix.Close(basefd)
	dir, name := path.Split(rel)
	parent, err := openBeneath(basefd, strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return pathError("remove", abs, err)
	}
	defer unix.Close(parent)
	if err := removeAt(parent, name); err != nil {
		return pathError("remove", abs, err)
	}
	return nil
}

// removeAt removes name inside the directory dirfd, descending into directories without following links.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || !errors.Is(err, unix.EISDIR) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAt(fd, n); err != nil {
				break
			}
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}
