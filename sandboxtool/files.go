package sandboxtool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// ReadDir lists the directory dir of thread's sandbox home; dir is relative to sandbox.Home, as fs.ValidPath
// has it ("." is the home itself). Together with CopyFile it lets a server show a thread's files
// (server.WithThreadFiles).
//
// Neither method creates, resumes or takes over a sandbox: a thread whose sandbox this Registry does not hold
// is looked up by name, stopped or not, and a thread with none gets an error wrapping fs.ErrNotExist. A path
// that is not valid gets fs.ErrInvalid; a sandbox whose backend cannot list or download files gets
// errors.ErrUnsupported.
func (r *Registry) ReadDir(ctx context.Context, threadID, dir string) ([]fs.FileInfo, error) {
	sb, abs, err := r.filesOf(ctx, threadID, dir)
	if err != nil {
		return nil, err
	}
	l, ok := sb.(sandbox.FileLister)
	if !ok {
		return nil, fmt.Errorf("sandboxtool: sandbox %s cannot list files: %w", sb.ID(), errors.ErrUnsupported)
	}
	list, err := l.ListFiles(ctx, abs)
	if err != nil {
		return nil, filesErr(err)
	}
	out := make([]fs.FileInfo, len(list))
	for i, f := range list {
		out[i] = fileInfo{f}
	}
	return out, nil
}

// CopyFile writes the regular file name (relative to sandbox.Home, as for ReadDir) of thread's sandbox to w,
// up to sandbox.MaxDownloadSize bytes, and returns how many bytes it wrote.
func (r *Registry) CopyFile(ctx context.Context, threadID, name string, w io.Writer) (int64, error) {
	sb, abs, err := r.filesOf(ctx, threadID, name)
	if err != nil {
		return 0, err
	}
	d, ok := sb.(sandbox.Downloader)
	if !ok {
		return 0, fmt.Errorf("sandboxtool: sandbox %s cannot download files: %w", sb.ID(), errors.ErrUnsupported)
	}
	n, err := d.Download(ctx, abs, w)
	return n, filesErr(err)
}

// filesOf finds thread's sandbox without creating or resuming one and resolves name under its home.
func (r *Registry) filesOf(ctx context.Context, threadID, name string) (sandbox.Sandbox, string, error) {
	if !fs.ValidPath(name) {
		return nil, "", fmt.Errorf("sandboxtool: %w: path %q: give a path relative to %s without '..'", fs.ErrInvalid, name, sandbox.Home)
	}
	abs := path.Join(sandbox.Home, name)
	if abs != sandbox.Home && !strings.HasPrefix(abs, sandbox.Home+"/") {
		return nil, "", fmt.Errorf("sandboxtool: %w: path %q is outside %s", fs.ErrInvalid, name, sandbox.Home)
	}
	if threadID == "" {
		return nil, "", fmt.Errorf("sandboxtool: empty thread id: %w", fs.ErrNotExist)
	}
	r.mu.Lock()
	e := r.threads[threadID]
	r.mu.Unlock()
	if e != nil {
		select {
		case <-e.ready:
			if e.err == nil {
				return e.sb, abs, nil
			}
		default: // still being looked up: look for ourselves rather than wait
		}
	}
	name = r.Name(threadID)
	infos, err := r.backend.List(ctx, sandbox.Filter{Name: name})
	if err != nil {
		return nil, "", fmt.Errorf("sandboxtool: look up sandbox %q: %w", name, err)
	}
	// As open does: a running sandbox first, then the newest.
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
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("sandboxtool: open sandbox %s of thread %q: %w", info.ID, threadID, err)
		}
		return sb, abs, nil
	}
	return nil, "", fmt.Errorf("sandboxtool: thread %q has no sandbox: %w", threadID, fs.ErrNotExist)
}

// filesErr adds the io/fs sentinel that matches a sandbox error, keeping both.
func filesErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrNotFound):
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	case errors.Is(err, sandbox.ErrInvalidPath), errors.Is(err, sandbox.ErrTooLarge):
		return fmt.Errorf("%w: %w", fs.ErrInvalid, err)
	}
	return err
}

// fileInfo is a sandbox.FileInfo as an fs.FileInfo.
type fileInfo struct{ f sandbox.FileInfo }

func (i fileInfo) Name() string       { return i.f.Name }
func (i fileInfo) Size() int64        { return i.f.Size }
func (i fileInfo) ModTime() time.Time { return i.f.ModTime }
func (i fileInfo) IsDir() bool        { return i.f.IsDir }
func (i fileInfo) Sys() any           { return i.f }
func (i fileInfo) Mode() fs.FileMode {
	if i.f.IsDir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
