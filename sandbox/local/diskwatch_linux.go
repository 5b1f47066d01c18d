package local

import (
	"time"

	"golang.org/x/sys/unix"
)

// diskPollInterval is how often the disk use of a sandbox with running commands is measured.
const diskPollInterval = 250 * time.Millisecond

// diskWatch measures one sandbox's disk use while any of its commands runs, and kills them all once it
// passes the quota. One per sandbox, however many commands run in it.
type diskWatch struct {
	procs map[*proc]struct{}
	stop  chan struct{}
}

// watchDisk adds p to its sandbox's watch, starting one if needed; the returned func removes it.
func (b *Backend) watchDisk(p *proc) func() {
	id := p.s.id
	b.mu.Lock()
	w := b.watches[id]
	if w == nil {
		w = &diskWatch{procs: map[*proc]struct{}{}, stop: make(chan struct{})}
		b.watches[id] = w
		go b.pollDisk(p.s, p.quota, w)
	}
	w.procs[p] = struct{}{}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(w.procs, p)
		if len(w.procs) == 0 {
			close(w.stop)
			delete(b.watches, id)
		}
	}
}

func (b *Backend) pollDisk(s *sbx, quota int64, w *diskWatch) {
	t := time.NewTicker(diskPollInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		used, err := s.diskUsage()
		if err != nil || used <= quota {
			continue
		}
		b.mu.Lock()
		victims := make([]*proc, 0, len(w.procs))
		for p := range w.procs {
			victims = append(victims, p)
		}
		b.mu.Unlock()
		for _, p := range victims {
			p.quotaHit.Store(true)
			p.kill()
		}
	}
}

// diskFull reports whether home and /tmp have (about) no room left.
func (s *sbx) diskFull(image bool, quota int64) bool {
	if image {
		var st unix.Statfs_t
		return unix.Statfs(s.home(), &st) == nil && int64(st.Bavail)*int64(st.Bsize) < fullMargin
	}
	used, err := s.diskUsage()
	return err == nil && used+fullMargin > quota
}

// diskUsed is the space taken on the sandbox's disk image, as its file system counts it.
func (s *sbx) diskUsed() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.home(), &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), nil
}

// fullMargin is how little room counts as none: a program's last write that failed was at most a few
// buffers' worth, so a disk with less than this left was full for it.
const fullMargin = 2 << 20
