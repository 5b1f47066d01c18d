package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/sandbox/internal/record"
	"golang.org/x/sys/unix"
)

// As root, a sandbox's home and /tmp live on an ext4 file system of its own: an image file under the
// sandbox directory, attached to a loop device and mounted at <dir>/disk while the sandbox is in use. The
// kernel then holds the quota: a write past it fails with ENOSPC, at once, however the code writes. The
// file system's reserved blocks are usable only by root, that is by the host (WriteFile), never by the
// sandbox user: so when the code has filled its disk, main.py can still be written, and the code can still
// run and delete files. The image is sparse, so only what is written takes host disk space.

const (
	diskImageName = "disk.img"
	diskDirName   = "disk"
	// hostSlack is how far past the quota the host's own writes (WriteFile) may go, out of the reserve,
	// so that a full sandbox can still be given a new main.py.
	hostSlack = 4 << 20
)

// findDiskTools returns the e2fsprogs programs, or why images cannot be made here.
func findDiskTools() (diskTools, error) {
	if os.Geteuid() != 0 {
		return diskTools{}, errors.New("loop devices need root")
	}
	if err := unix.Access("/dev/loop-control", unix.R_OK|unix.W_OK); err != nil {
		return diskTools{}, fmt.Errorf("/dev/loop-control: %w", err)
	}
	var t diskTools
	for _, p := range []struct {
		name string
		dst  *string
	}{{"mkfs.ext4", &t.mkfs}, {"tune2fs", &t.tune2fs}} {
		for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
			if unix.Access(filepath.Join(dir, p.name), unix.X_OK) == nil {
				*p.dst = filepath.Join(dir, p.name)
				break
			}
		}
		if *p.dst == "" {
			return diskTools{}, fmt.Errorf("%s not found (install e2fsprogs)", p.name)
		}
	}
	return t, nil
}

// makeDiskImage creates an ext4 image whose space available to users other than root is quota bytes.
func makeDiskImage(t diskTools, img string, quota int64) error {
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create disk image: %w", err)
	}
	// Room for the file system's own structures and the root reserve on top of the quota.
	size := quota + quota/50 + 32<<20
	size = (size + 4095) &^ 4095
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return fmt.Errorf("size disk image: %w", err)
	}
	// A small journal keeps the file system consistent across a host crash; lazy init keeps mkfs writing
	// a few hundred KiB, not the inode tables.
	out, err := exec.Command(t.mkfs, "-q", "-F", "-t", "ext4", "-b", "4096", "-m", "0", "-i", "32768",
		"-J", "size=4", "-O", "^resize_inode", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
		"-L", "agentgraph", img).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	sb := make([]byte, 1024)
	if f, err = os.Open(img); err == nil {
		_, err = f.ReadAt(sb, 1024)
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("read disk image superblock: %w", err)
	}
	blocks := int64(binary.LittleEndian.Uint32(sb[0x4:]))
	free := int64(binary.LittleEndian.Uint32(sb[0xC:]))
	bsize := int64(1024) << binary.LittleEndian.Uint32(sb[0x18:])
	// ext4 keeps min(2%, 4096 blocks) back for its own allocations, beyond the root reserve.
	reserve := free - min(blocks/50, 4096) - quota/bsize
	if reserve < 0 {
		return fmt.Errorf("disk image of %d bytes is too small for a quota of %d", size, quota)
	}
	if out, err := exec.Command(t.tune2fs, "-r", strconv.FormatInt(reserve, 10), img).CombinedOutput(); err != nil {
		return fmt.Errorf("tune2fs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// isMountPoint reports whether dir is the root of a mount other than its parent's.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// mountDisk mounts the sandbox's image at its disk directory unless it is mounted already. A loop device
// still attached to the image (because a command's mount namespace keeps the file system alive) is
// mounted again rather than a second one attached, which would corrupt the file system.
func (s *sbx) mountDisk() error {
	dir := s.diskDir()
	if isMountPoint(dir) {
		return nil
	}
	unlock, err := record.Lock(filepath.Join(s.dir, "disk.lock"), unix.LOCK_EX)
	if err != nil {
		return fmt.Errorf("lock disk of %s: %w", s.id, err)
	}
	defer unlock()
	if isMountPoint(dir) {
		return nil
	}
	img := filepath.Join(s.dir, diskImageName)
	// The open device keeps an autoclearing loop attached until the mount holds it too.
	dev, fd, err := loopFor(img)
	if err == nil && dev == "" {
		dev, fd, err = attachLoop(img)
	}
	if err != nil {
		return fmt.Errorf("attach disk of %s: %w", s.id, err)
	}
	defer unix.Close(fd)
	if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, "errors=remount-ro"); err != nil {
		return fmt.Errorf("mount disk of %s: %w", s.id, err)
	}
	s.b.noteMounted(s.id)
	return nil
}

// unmountDisk unmounts the sandbox's disk if it is mounted and not in use on the host; the loop device
// detaches itself once no mount of the file system is left.
func (s *sbx) unmountDisk() error {
	dir := s.diskDir()
	for isMountPoint(dir) {
		if err := unix.Unmount(dir, 0); err != nil {
			if errors.Is(err, unix.EBUSY) {
				return nil // a host-side file operation holds it; the next Stop or Delete tries again
			}
			return fmt.Errorf("unmount disk of %s: %w", s.id, err)
		}
	}
	s.b.noteUnmounted(s.id)
	return nil
}

// loopFor returns the loop device attached to img and an open descriptor of it, or "".
func loopFor(img string) (string, int, error) {
	var want unix.Stat_t
	if err := unix.Stat(img, &want); err != nil {
		return "", -1, err
	}
	entries, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err != nil || strings.TrimSuffix(string(data), "\n") != img {
			continue
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(e)))
		fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		if err == nil && info.Inode == want.Ino && info.Device == want.Dev {
			return dev, fd, nil
		}
		unix.Close(fd)
	}
	return "", -1, nil
}

// attachLoop attaches img to a free loop device that detaches itself when its last user closes it, and
// returns the device with an open descriptor of it.
func attachLoop(img string) (string, int, error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, err
	}
	defer unix.Close(ctl)
	file, err := unix.Open(img, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, err
	}
	defer unix.Close(file)
	for range 100 { // another process may take the free device between the two calls
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", -1, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", -1, err
		}
		cfg := unix.LoopConfig{Fd: uint32(file)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], img)
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if err == nil {
			return dev, fd, nil
		}
		unix.Close(fd)
		if !errors.Is(err, unix.EBUSY) {
			return "", -1, fmt.Errorf("configure %s: %w", dev, err)
		}
	}
	return "", -1, errors.New("no free loop device")
}
