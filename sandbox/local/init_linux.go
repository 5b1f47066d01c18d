package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperArg0 marks the re-executed process as the isolation helper.
const helperArg0 = "agentgraph-sandbox-init"

// Descriptors handed to the helper through exec.Cmd.ExtraFiles.
const (
	fdConfig = 3 // read end: the parent writes the config once the helper is in its cgroups, then closes
	fdErr    = 4 // write end, close-on-exec: an error message, or EOF when the final execve succeeded
	fdHome   = 5 // O_PATH directory: the sandbox home
	fdTmp    = 6 // O_PATH directory: the sandbox /tmp
)

// sandboxUID is the user (and group) id sandboxed code runs as.
const sandboxUID = 1000

var initCalled atomic.Bool

// Init must be the first statement of main (and of TestMain in tests). In the ordinary process it returns at
// once. The program is re-executed twice over: as the zygote, a small process that forks helpers, and as the
// isolation helper, which sets a sandbox up and replaces itself with the command; in both Init never
// returns. Create fails with a clear error when Init was not called.
func Init() {
	initCalled.Store(true)
	if len(os.Args) == 1 && os.Args[0] == zygoteArg0 && os.Getenv("AGENTGRAPH_SANDBOX_ZYGOTE") == "1" {
		zygoteMain()
		os.Exit(0)
	}
	if len(os.Args) != 1 || os.Args[0] != helperArg0 || os.Getenv("AGENTGRAPH_SANDBOX_HELPER") != "1" {
		return
	}
	runtime.LockOSThread()
	errPipe := os.NewFile(fdErr, "errpipe")
	// helperMain returns only when it could not exec the command; the parent reads why from the pipe.
	fmt.Fprintf(errPipe, "%v", helperMain())
	os.Exit(127)
}

// childConfig is everything the helper needs; the parent sends it as JSON.
type childConfig struct {
	Argv        []string
	Env         []string
	Cwd         string // absolute path inside the sandbox
	HostNetwork bool
	Hostname    string
	TmpfsBytes  int64 // size of /dev/shm
	Rlimits     []rlimitSpec
	Binds       []string          // host directories bound read-only at the same path
	EtcBinds    []string          // host /etc entries bound read-only (files or directories)
	EtcFiles    map[string]string // synthetic /etc files: name -> content
	Wrappers    map[string]string // executable scripts in /opt/agentgraph/bin: name -> content
	Symlinks    map[string]string // root-level symlinks: name -> target (the merged-usr links)
	Landlock    bool
	// MountFDs says fdHome and fdTmp are detached mounts (open_tree clones made by a root parent, because the
	// helper's uid may not walk the host path); otherwise they are unused and HomeSrc/TmpSrc are bound by path.
	MountFDs        bool
	HomeSrc, TmpSrc string
}

type rlimitSpec struct {
	Resource int
	Cur, Max uint64
}

// helperMain sets the sandbox up and execs the command. It returns only on failure, with the reason.
func helperMain() error {
	cfgFile := os.NewFile(fdConfig, "config")
	raw, err := io.ReadAll(cfgFile)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	cfgFile.Close()
	if len(raw) == 0 {
		return errors.New("no config from parent")
	}
	var cfg childConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	if err := buildRoot(&cfg); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if !cfg.HostNetwork {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
	}
	unix.Umask(0o022)
	if err := unix.Chdir(cfg.Cwd); err != nil {
		return fmt.Errorf("working directory %s: %w", cfg.Cwd, err)
	}
	// A fresh anonymous session keyring: otherwise the code could read the caller's keys.
	if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		return fmt.Errorf("join a new session keyring: %w", e)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if cfg.Landlock {
		applyLandlock(cfg.HostNetwork) // best effort by design: the namespaces and seccomp carry the weight
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := loadSeccomp(); err != nil {
		return err
	}
	// exec.Cmd does not close descriptors the host process leaked without O_CLOEXEC.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close_range: %w", err)
	}
	argv0, err := lookPath(cfg.Argv[0], cfg.Env)
	if err != nil {
		return err
	}
	// Everything execve needs is converted now: once the limits are in place this Go process must not
	// allocate (RLIMIT_AS) or start a thread (RLIMIT_NPROC), or the runtime dies instead of the exec.
	argv0p, err := unix.BytePtrFromString(argv0)
	if err != nil {
		return err
	}
	argvp, err := syscall.SlicePtrFromStrings(cfg.Argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(cfg.Env)
	if err != nil {
		return err
	}
	limits := make([]unix.Rlimit, len(cfg.Rlimits))
	for i, r := range cfg.Rlimits {
		limits[i] = unix.Rlimit{Cur: r.Cur, Max: r.Max}
	}
	for i := range limits {
		if err := unix.Prlimit(0, cfg.Rlimits[i].Resource, &limits[i], nil); err != nil {
			return fmt.Errorf("setrlimit %d: %w", cfg.Rlimits[i].Resource, err)
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0p)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	return fmt.Errorf("exec %s: %w", argv0, e)
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				c := filepath.Join(dir, name)
				if unix.Access(c, unix.X_OK) == nil {
					return c, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

const newRoot = "/tmp" // mount point of the new root's tmpfs; the host's /tmp is hidden and never bound

// inRoot returns where path p of the sandbox lies while the new root is built.
func inRoot(p string) string { return newRoot + p }

// buildRoot builds the sandbox's root on a tmpfs and pivots into it: the read-only system directories,
// /etc, the wrappers, /dev, the sandbox's home and /tmp, and a fresh /proc.
func buildRoot(cfg *childConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	homeFD, tmpFD, err := openSandboxDirs(cfg)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=16m,mode=0755"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	if err := bindSystem(cfg); err != nil {
		return err
	}
	if err := buildEtc(cfg); err != nil {
		return err
	}
	if err := writeWrappers(cfg); err != nil {
		return err
	}
	if err := buildDev(inRoot("/dev"), cfg.TmpfsBytes); err != nil {
		return err
	}
	if err := attach(cfg.MountFDs, homeFD, inRoot("/home/user")); err != nil {
		return fmt.Errorf("bind home: %w", err)
	}
	if err := attach(cfg.MountFDs, tmpFD, inRoot("/tmp")); err != nil {
		return fmt.Errorf("bind /tmp: %w", err)
	}
	if err := mountProc(); err != nil {
		return err
	}
	return pivotIntoRoot()
}

// openSandboxDirs returns the descriptors of the sandbox's home and /tmp: the detached mounts the parent
// passed, or the host directories opened by path.
func openSandboxDirs(cfg *childConfig) (homeFD, tmpFD int, err error) {
	if cfg.MountFDs {
		return fdHome, fdTmp, nil
	}
	// Opened before the new root's tmpfs covers /tmp, where the host paths may lie; bound through the
	// descriptor later, which this mount namespace owns.
	if homeFD, err = unix.Open(cfg.HomeSrc, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return 0, 0, fmt.Errorf("open home %s: %w", cfg.HomeSrc, err)
	}
	if tmpFD, err = unix.Open(cfg.TmpSrc, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return 0, 0, fmt.Errorf("open /tmp %s: %w", cfg.TmpSrc, err)
	}
	return homeFD, tmpFD, nil
}

// bindSystem binds the allow-listed host directories read-only and makes the root-level symlinks.
func bindSystem(cfg *childConfig) error {
	for _, d := range cfg.Binds {
		if err := bindReadOnly(d, inRoot(d), true); err != nil {
			return err
		}
	}
	for name, target := range cfg.Symlinks {
		if err := os.Symlink(target, inRoot("/"+name)); err != nil {
			return fmt.Errorf("symlink /%s: %w", name, err)
		}
	}
	return nil
}

// buildEtc makes the minimal /etc: the synthetic files, then the allow-listed host entries that exist,
// bound read-only (symlinks copied).
func buildEtc(cfg *childConfig) error {
	if err := os.MkdirAll(inRoot("/etc"), 0o755); err != nil {
		return err
	}
	for name, content := range cfg.EtcFiles {
		if err := os.WriteFile(inRoot("/etc/"+name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write /etc/%s: %w", name, err)
		}
	}
	for _, e := range cfg.EtcBinds {
		fi, err := os.Lstat(e)
		if err != nil {
			continue // the allow-list names what may exist; absence is fine
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(e)
			if err == nil {
				err = os.Symlink(target, inRoot(e))
			}
			if err != nil {
				return fmt.Errorf("copy symlink %s: %w", e, err)
			}
			continue
		}
		if err := bindReadOnly(e, inRoot(e), fi.IsDir()); err != nil {
			return err
		}
	}
	return nil
}

// writeWrappers writes the executable scripts of /opt/agentgraph/bin.
func writeWrappers(cfg *childConfig) error {
	if err := os.MkdirAll(inRoot("/opt/agentgraph/bin"), 0o755); err != nil {
		return err
	}
	for name, content := range cfg.Wrappers {
		if err := os.WriteFile(inRoot("/opt/agentgraph/bin/"+name), []byte(content), 0o755); err != nil {
			return fmt.Errorf("write wrapper %s: %w", name, err)
		}
	}
	return nil
}

// mountProc mounts a fresh /proc for the new pid namespace, hides the keyring files and makes /proc/sys
// read-only.
func mountProc() error {
	if err := os.MkdirAll(inRoot("/proc"), 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", inRoot("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// Key descriptions of the user's keyrings show in /proc/keys to a process of the same user (the
	// unprivileged case); hide them.
	for _, f := range []string{"/proc/keys", "/proc/key-users"} {
		if err := unix.Mount(inRoot("/dev/null"), inRoot(f), "", unix.MS_BIND, ""); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("mask %s: %w", f, err)
		}
	}
	// /proc/sys read-only as a second wall behind the dropped capabilities.
	return bindReadOnly(inRoot("/proc/sys"), inRoot("/proc/sys"), true)
}

// pivotIntoRoot makes the new root the root, detaches the old one and makes / read-only.
func pivotIntoRoot() error {
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("make / read-only: %w", err)
	}
	return nil
}

// bindReadOnly binds src at dst (creating dst) and remounts it read-only, nosuid and nodev, keeping the
// flags the kernel locks in a user namespace.
func bindReadOnly(src, dst string, dir bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dst, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	if st.Flags&unix.ST_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	if st.Flags&unix.ST_NOATIME != 0 {
		flags |= unix.MS_NOATIME
	}
	if st.Flags&unix.ST_RELATIME != 0 {
		flags |= unix.MS_RELATIME
	}
	if st.Flags&unix.ST_NODIRATIME != 0 {
		flags |= unix.MS_NODIRATIME
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dst, err)
	}
	return nil
}

// attach mounts a sandbox directory read-write, nosuid and nodev at dst: from the parent's detached mount
// when it sent one (as root the helper's uid may not walk the host path: t.TempDir and /root are 0700), else
// by binding the directory the helper opened itself, as the calling user.
func attach(detached bool, fd int, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if detached {
		return unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, "")
}

func buildDev(dev string, shmBytes int64) error {
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		dst := dev + "/" + name
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount("/dev/"+name, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", name, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dev+"/shm", 0o1777); err != nil {
		return err
	}
	opts := fmt.Sprintf("size=%d,mode=1777", shmBytes)
	if err := unix.Mount("tmpfs", dev+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	return unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755")
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// dropCapabilities empties the bounding, ambient, inheritable, permitted and effective sets of this thread,
// which is the one that will exec.
func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}
