package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentgraph/agentgraph/sandbox"
)

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Path is a sandbox file as the host reaches it.
type Path struct {
	Abs  string // the path inside the sandbox, for messages
	Base int    // an O_PATH descriptor of home or /tmp, which the caller closes (see Locate)
	Rel  string // the path beneath Base; "" is Base itself
}

// Locate returns the Path of abs, a sandbox path that sandbox.ResolvePath accepted, given the host
// directories of the sandbox's home and /tmp; the caller closes its Base. An error is the one opening the
// host directory (fs.ErrNotExist when it is gone).
func Locate(abs, home, tmp string) (Path, error) {
	base := tmp
	r, inHome := strings.CutPrefix(abs, sandbox.Home)
	if inHome {
		base = home
	} else {
		r, _ = strings.CutPrefix(abs, sandbox.Tmp)
	}
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Path{}, fmt.Errorf("%s: %w", abs, err)
	}
	return Path{Abs: abs, Base: fd, Rel: strings.TrimPrefix(r, "/")}, nil
}

// Close closes the Base of p.
func (p Path) Close() { unix.Close(p.Base) }

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

// CheckDir makes sure a working directory exists and is a directory the host reaches without following a
// symlink, so that a bad Cwd is the caller's error rather than a failure deep in the sandbox's setup.
func (p Path) CheckDir() error {
	fd, err := openBeneath(p.Base, p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%w: working directory %s does not exist or is not a directory: create it first",
				sandbox.ErrInvalidArgument, p.Abs)
		}
		return pathError("working directory", p.Abs, err)
	}
	unix.Close(fd)
	return nil
}

// openRegular opens a regular file for reading and returns it with its size.
func (p Path) openRegular(op string) (*os.File, int64, error) {
	fd, err := openBeneath(p.Base, p.Rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, pathError(op, p.Abs, err)
	}
	f := os.NewFile(uintptr(fd), p.Abs)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s %s: %w", op, p.Abs, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%w: %s %s: not a regular file", sandbox.ErrInvalidPath, op, p.Abs)
	}
	return f, fi.Size(), nil
}

// Read returns a regular file of at most MaxReadFileSize bytes.
func (p Path) Read() ([]byte, error) {
	f, size, err := p.openRegular("read")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > sandbox.MaxReadFileSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d: use Download", sandbox.ErrTooLarge, p.Abs, size, sandbox.MaxReadFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, sandbox.MaxReadFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.Abs, err)
	}
	if len(data) > sandbox.MaxReadFileSize {
		return nil, fmt.Errorf("%w: %s grew past %d bytes while being read", sandbox.ErrTooLarge, p.Abs, sandbox.MaxReadFileSize)
	}
	return data, nil
}

// Download copies a regular file of at most MaxDownloadSize bytes to w.
func (p Path) Download(w io.Writer) (int64, error) {
	f, size, err := p.openRegular("download")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if size > sandbox.MaxDownloadSize {
		return 0, fmt.Errorf("%w: %s is %d bytes, more than %d", sandbox.ErrTooLarge, p.Abs, size, sandbox.MaxDownloadSize)
	}
	n, err := io.Copy(w, io.LimitReader(f, sandbox.MaxDownloadSize))
	if err != nil {
		return n, fmt.Errorf("download %s: %w", p.Abs, err)
	}
	return n, nil
}

// Size is the space the regular file at p takes now (0 if none), which replacing it frees.
func (p Path) Size() int64 {
	fd, err := openBeneath(p.Base, p.Rel, unix.O_PATH, 0)
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

// Write creates or replaces a regular file with data, making missing parent directories; uid and gid own
// them all. A full file system is sandbox.ErrQuota.
func (p Path) Write(data []byte, uid, gid int) error {
	if p.Rel == "" {
		return fmt.Errorf("%w: write %s: that is a directory", sandbox.ErrInvalidPath, p.Abs)
	}
	dirfd, err := unix.Dup(p.Base)
	if err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	defer func() { unix.Close(dirfd) }()
	dir, name := path.Split(p.Rel)
	for _, comp := range strings.Split(strings.Trim(dir, "/"), "/") {
		if comp == "" {
			continue
		}
		if err := unix.Mkdirat(dirfd, comp, 0o755); err == nil {
			if err := unix.Fchownat(dirfd, comp, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("write %s: %w", p.Abs, err)
			}
		} else if !errors.Is(err, unix.EEXIST) {
			return pathError("write", p.Abs, err)
		}
		next, err := openBeneath(dirfd, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return pathError("write", p.Abs, err)
		}
		unix.Close(dirfd)
		dirfd = next
	}
	fd, err := openBeneath(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY, 0o644)
	if err != nil {
		return pathError("write", p.Abs, err)
	}
	f := os.NewFile(uintptr(fd), p.Abs)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: write %s: not a regular file", sandbox.ErrInvalidPath, p.Abs)
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	if _, err := f.Write(data); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
			return fmt.Errorf("%w: write %s: %v: remove files first", sandbox.ErrQuota, p.Abs, err)
		}
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("write %s: %w", p.Abs, err)
	}
	return f.Close()
}

// List lists a directory; symlinks are listed, not followed.
func (p Path) List() ([]sandbox.FileInfo, error) {
	fd, err := openBeneath(p.Base, p.Rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, pathError("list", p.Abs, err)
	}
	f := os.NewFile(uintptr(fd), p.Abs)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Abs, err)
	}
	out := make([]sandbox.FileInfo, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		out = append(out, sandbox.FileInfo{Name: n, Path: path.Join(p.Abs, n), Size: st.Size,
			IsDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ModTime: time.Unix(st.Mtim.Unix())})
	}
	return out, nil
}

// Remove removes a file or a directory tree; home and /tmp themselves cannot be removed.
func (p Path) Remove() error {
	if p.Rel == "" {
		return fmt.Errorf("%w: remove %s: home and /tmp cannot be removed", sandbox.ErrInvalidPath, p.Abs)
	}
	dir, name := path.Split(p.Rel)
	parent, err := openBeneath(p.Base, strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return pathError("remove", p.Abs, err)
	}
	defer unix.Close(parent)
	if err := removeAt(parent, name); err != nil {
		return pathError("remove", p.Abs, err)
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
