package local

import (
	"context"
	"fmt"
	"io"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/internal/hostfs"
)

// The host touches sandbox files only through hostfs, which opens every path beneath home or /tmp without
// following a symlink or crossing a mount.

// locate maps a sandbox path to where the host reaches it (see reach); the caller closes the Path.
func (s *sbx) locate(p string) (hostfs.Path, error) {
	abs, err := sandbox.ResolvePath(p)
	if err != nil {
		return hostfs.Path{}, err
	}
	m, err := s.readMeta()
	if err != nil {
		return hostfs.Path{}, err
	}
	return s.reach(m, abs)
}

// reach returns where the host reaches abs, a resolved sandbox path, mounting the sandbox's disk if need
// be; the caller closes the Path.
func (s *sbx) reach(m *meta, abs string) (hostfs.Path, error) {
	if m.DiskImage {
		if err := s.mountDisk(); err != nil {
			return hostfs.Path{}, err
		}
	}
	return hostfs.Locate(abs, s.home(), s.tmp())
}

// checkDir makes sure a working directory exists and the host reaches it without a symlink (and so that
// the sandbox's disk is mounted).
func (s *sbx) checkDir(m *meta, abs string) error {
	p, err := s.reach(m, abs)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.CheckDir()
}

func (s *sbx) ReadFile(ctx context.Context, path string) ([]byte, error) {
	p, err := s.locate(path)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Read()
}

// Download copies a file of at most MaxDownloadSize bytes to w.
func (s *sbx) Download(ctx context.Context, path string, w io.Writer) (int64, error) {
	p, err := s.locate(path)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return p.Download(w)
}

// WriteFile creates or replaces a file, making missing parent directories; the sandbox user owns them all.
func (s *sbx) WriteFile(ctx context.Context, path string, data []byte) error {
	p, err := s.locate(path)
	if err != nil {
		return err
	}
	defer p.Close()
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
		return fmt.Errorf("write %s: measure disk use: %w", p.Abs, err)
	}
	if p.Rel != "" && used-p.Size()+int64(len(data)) > limit {
		return fmt.Errorf("%w: writing %d bytes to %s would exceed %d bytes: remove files first", sandbox.ErrQuota, len(data), p.Abs, m.Limits.DiskBytes)
	}
	return p.Write(data, m.HostUID, hostGID(m.HostUID))
}

// ListFiles lists a directory; symlinks are listed, not followed.
func (s *sbx) ListFiles(ctx context.Context, dir string) ([]sandbox.FileInfo, error) {
	p, err := s.locate(dir)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.List()
}

// RemoveFile removes a file or a directory tree; home and /tmp themselves cannot be removed.
func (s *sbx) RemoveFile(ctx context.Context, path string) error {
	p, err := s.locate(path)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Remove()
}
