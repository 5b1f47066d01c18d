package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// rootTemplates are read-only roots the zygote builds once (as root, with the new mount API) and clones, in
// one system call, for every command: a tmpfs holding the read-only binds of the allow-list, /etc, the
// wrappers, /dev and the mount points of home, /tmp and /proc. Building the same tree in every child took
// some fifty mounts; cloning it takes one, attaching it another. The tree is detached, so it appears in no
// mount table. Mounts that come from outside a user namespace are locked in it: the sandbox can neither
// make them writable nor unmount them.
type rootTemplates struct {
	mu    sync.Mutex
	byKey map[string]int // detached mount descriptors, by the configuration they were built from
	err   error          // why templates cannot be built here; then every child builds its root by hand
}

// clone returns a new detached copy of the template for cfg, building the template first if needed.
func (t *rootTemplates) clone(cfg *childConfig) (int, error) {
	key, err := json.Marshal([]any{cfg.Binds, cfg.EtcBinds, cfg.EtcFiles, cfg.Wrappers, cfg.Symlinks})
	if err != nil {
		return -1, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return -1, t.err
	}
	fd, ok := t.byKey[string(key)]
	if !ok {
		if fd, err = buildTemplate(cfg); err != nil {
			t.err = err
			return -1, err
		}
		if t.byKey == nil {
			t.byKey = map[string]int{}
		}
		t.byKey[string(key)] = fd
	}
	return unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
}

// buildTemplate builds the root cfg describes on a detached tmpfs and returns its descriptor.
func buildTemplate(cfg *childConfig) (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{{"size", "16m"}, {"mode", "0755"}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("configure tmpfs: %w", err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("create tmpfs: %w", err)
	}
	root, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("fsmount tmpfs: %w", err)
	}
	if err := fillTemplate(root, cfg); err != nil {
		unix.Close(root)
		return -1, err
	}
	if err := unix.MountSetattr(root, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		unix.Close(root)
		return -1, fmt.Errorf("make the root template read-only: %w", err)
	}
	return root, nil
}

func fillTemplate(root int, cfg *childConfig) error {
	mkdirs := func(rel string) error {
		parts := strings.Split(rel, "/")
		for i := range parts {
			if err := unix.Mkdirat(root, strings.Join(parts[:i+1], "/"), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("mkdir %s: %w", rel, err)
			}
		}
		return nil
	}
	writeFile := func(rel, content string, mode uint32) error {
		if err := mkdirs(filepath.Dir(rel)); err != nil {
			return err
		}
		fd, err := unix.Openat(root, rel, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, mode)
		if err != nil {
			return fmt.Errorf("create %s: %w", rel, err)
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte(content)); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		return unix.Fchmod(fd, mode)
	}
	// attach binds the host's src at rel: read-only unless it is a device node the sandbox writes to.
	attach := func(src, rel string, dir, readOnly bool) error {
		clone, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return fmt.Errorf("clone %s: %w", src, err)
		}
		defer unix.Close(clone)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if readOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		} else {
			attr.Attr_set = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
		}
		if err := unix.MountSetattr(clone, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("restrict %s: %w", src, err)
		}
		if dir {
			err = mkdirs(rel)
		} else {
			err = writeFile(rel, "", 0o644)
		}
		if err != nil {
			return err
		}
		if err := unix.MoveMount(clone, "", root, rel, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s: %w", src, err)
		}
		return nil
	}
	for _, d := range cfg.Binds {
		if err := attach(d, strings.TrimPrefix(d, "/"), true, true); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(cfg.Symlinks) {
		if err := unix.Symlinkat(cfg.Symlinks[name], root, name); err != nil {
			return fmt.Errorf("symlink /%s: %w", name, err)
		}
	}
	if err := mkdirs("etc"); err != nil {
		return err
	}
	for _, name := range sortedKeys(cfg.EtcFiles) {
		if err := writeFile("etc/"+name, cfg.EtcFiles[name], 0o644); err != nil {
			return err
		}
	}
	for _, e := range cfg.EtcBinds {
		fi, err := os.Lstat(e)
		if err != nil {
			continue // the allow-list names what may exist; absence is fine
		}
		rel := strings.TrimPrefix(e, "/")
		if fi.Mode()&os.ModeSymlink != 0 {
			if target, err := os.Readlink(e); err == nil {
				if err := mkdirs(filepath.Dir(rel)); err != nil {
					return err
				}
				if err := unix.Symlinkat(target, root, rel); err != nil {
					return fmt.Errorf("symlink %s: %w", e, err)
				}
			}
			continue
		}
		if err := attach(e, rel, fi.IsDir(), true); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(cfg.Wrappers) {
		rel := "opt/agentgraph/bin/" + name
		if target, ok := strings.CutPrefix(cfg.Wrappers[name], "symlink:"); ok {
			if err := mkdirs(filepath.Dir(rel)); err != nil {
				return err
			}
			if err := unix.Symlinkat(target, root, rel); err != nil {
				return fmt.Errorf("symlink %s: %w", rel, err)
			}
			continue
		}
		if err := writeFile(rel, cfg.Wrappers[name], 0o755); err != nil {
			return err
		}
	}
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := attach("/dev/"+name, "dev/"+name, false, false); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		if err := unix.Symlinkat(l[1], root, "dev/"+l[0]); err != nil {
			return fmt.Errorf("symlink /dev/%s: %w", l[0], err)
		}
	}
	for _, d := range []string{"dev/shm", "proc", "home/user", "tmp"} {
		if err := mkdirs(d); err != nil {
			return err
		}
	}
	return nil
}
