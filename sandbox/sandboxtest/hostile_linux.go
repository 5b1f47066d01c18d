//go:build linux

package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"golang.org/x/sys/unix"
)

// The hostile suite runs, in a sandbox of each of its cases, a Python program that tries one family of
// attacks (docs/security.md lists them) and prints what worked and what was stopped.

// prelude gives every hostile program the same vocabulary: a line "ESCAPED ..." means an attack worked, a
// line "BLOCKED ..." that one was stopped. The test fails on any ESCAPED line.
const prelude = `
import os, sys, ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
def escaped(msg): print("ESCAPED", msg, flush=True)
def blocked(msg): print("BLOCKED", msg, flush=True)
def attempt(desc, fn):
    try:
        r = fn()
    except BaseException as e:
        blocked(f"{desc}: {e!r}")
    else:
        escaped(f"{desc}: {r!r}")
def syscall(desc, nr, *args):
    r = libc.syscall(nr, *args)
    if r == -1:
        blocked(f"{desc}: errno {errno.errorcode.get(ctypes.get_errno())}")
    else:
        escaped(f"{desc}: returned {r}")
def read(p):
    with open(p, "rb") as f:
        return f.read(100)
def write(p, data=b"x"):
    with open(p, "wb") as f:
        f.write(data)
    return "wrote " + p
def connect(addr, family=socket.AF_INET, kind=socket.SOCK_STREAM):
    s = socket.socket(family, kind)
    s.settimeout(2)
    s.connect(addr)
    return "connected to " + repr(addr)
`

type hostileCase struct {
	name    string
	program string // Python, after the prelude
	blocked int    // at least this many BLOCKED lines
	timeout time.Duration
	check   func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult)
}

// HostileLimits are the limits of SizeSmall that Hostile's resource attacks are tuned for (256 MiB memory,
// 64 MiB disk, 64 pids): the backend given to Hostile must have been made with them.
var HostileLimits = sandbox.Limits{CPUs: 1, MemoryBytes: 256 << 20, DiskBytes: 64 << 20, Pids: 64}

// HostileOptions fit the suite to a backend.
type HostileOptions struct {
	// DaemonGone checks, after a command that left a double-forked daemon holding a lock on
	// /home/user/daemon.lock has ended, that the daemon is gone. Nil takes the lock from a second
	// command, which proves it where the sandbox's commands share one kernel's locks.
	DaemonGone func(t *testing.T, s sandbox.Sandbox)
	// ForkBombMayOOM accepts the memory limit ending a fork bomb (the whole sandbox's command killed) as
	// well as the pids limit refusing its forks.
	ForkBombMayOOM bool
}

func hostileCases(t *testing.T, o HostileOptions) []hostileCase {
	secret := "sk-hostile-" + fmt.Sprint(time.Now().UnixNano())
	wd, _ := os.Getwd()
	self, _ := os.Executable()

	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	hostIP := "10.255.255.1" // unroutable fallback
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				hostIP = ipn.IP.String()
				break
			}
		}
	}
	hostLn, err := net.Listen("tcp", hostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostLn.Close() })
	go func() {
		for {
			c, err := hostLn.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	abstract := fmt.Sprintf("agentgraph-hostile-%d", os.Getpid())
	absLn, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { absLn.Close() })
	sockPath := filepath.Join(t.TempDir(), "host.sock")
	pathLn, err := net.Listen("unix", sockPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pathLn.Close() })
	go func() {
		for _, ln := range []net.Listener{absLn, pathLn} {
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					hits.Add(1)
					c.Close()
				}
			}()
		}
	}()
	noHits := func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
		if n := hits.Load(); n != 0 {
			t.Errorf("host listeners saw %d connections from the sandbox", n)
		}
	}

	// A key in root's user keyring and a secret in this process's environment; neither may show.
	os.Setenv("AGENTGRAPH_HOSTILE_SECRET", secret)
	t.Cleanup(func() { os.Unsetenv("AGENTGRAPH_HOSTILE_SECRET") })
	if id, err := unix.AddKey("user", "agentgraph-hostile", []byte(secret), unix.KEY_SPEC_USER_KEYRING); err == nil {
		t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0) })
	}
	noSecret := func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
		if strings.Contains(r.Stdout+r.Stderr, secret) || strings.Contains(r.Stdout+r.Stderr, "agentgraph-hostile") {
			t.Errorf("the secret reached the sandbox: %s", r.Stdout)
		}
	}
	// A descriptor the host leaked without O_CLOEXEC, as libraries sometimes do.
	leakPath := filepath.Join(t.TempDir(), "host-secret.txt")
	if err := os.WriteFile(leakPath, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	leak, err := unix.Open(leakPath, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(leak) })

	return []hostileCase{
		{name: "environment and /proc of other processes", blocked: 1, check: noSecret, program: `
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for f in ("environ", "cmdline"):
            try:
                found.append(read(f"/proc/{pid}/{f}"))
            except OSError:
                pass
print("\n".join(repr(x) for x in found))
print("ENV", dict(os.environ))
pids = [p for p in os.listdir("/proc") if p.isdigit()]
if len(pids) > 3: escaped(f"sees {len(pids)} processes: {pids}")
else: blocked(f"sees only {pids}")
`},
		{name: "caller keyring", blocked: 3, check: noSecret, program: `
print(open("/proc/keys").read() if os.path.exists("/proc/keys") else "")
syscall("keyctl read user keyring", 250, 11, -4, 0, 0)   # KEYCTL_READ, KEY_SPEC_USER_KEYRING
syscall("keyctl search", 250, 10, -3, b"user", b"agentgraph-hostile", 0)
syscall("add_key", 248, b"user", b"x", b"y", 1, -3)
`},
		{name: "host files", blocked: 6, program: fmt.Sprintf(`
for p in ["/root/.bashrc", "/etc/shadow", "/etc/ssh/ssh_host_ed25519_key", %q, %q, "/var/lib/agentgraph"]:
    attempt("read " + p, lambda: read(p) if not os.path.isdir(p) else os.listdir(p))
`, wd, self)},
		{name: "write outside home and tmp", blocked: 8, program: `
for p in ["/usr/bin/evil", "/etc/passwd", "/evil", "/opt/agentgraph/bin/evil", "/dev/evil", "/proc/evil", "/usr/lib/python3/dist-packages/evil.py", "/etc/evil"]:
    attempt("write " + p, lambda: write(p))
`},
		{name: "network egress", blocked: 5, program: fmt.Sprintf(`
attempt("loopback service of the host", lambda: connect(("127.0.0.1", %s)))
attempt("host address", lambda: connect((%q, %s)))
attempt("internet", lambda: connect(("1.1.1.1", 443)))
attempt("dns", lambda: socket.getaddrinfo("example.com", 443))
attempt("udp dns", lambda: connect(("8.8.8.8", 53), kind=socket.SOCK_DGRAM) and socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))
print(open("/proc/net/dev").read())
`, port, hostIP, strings.Split(hostLn.Addr().String(), ":")[1]),
			check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
				noHits(t, s, r)
				for _, line := range strings.Split(r.Stdout, "\n") {
					if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.Contains(name, " ") && name != "lo" && name != "Inter-|   Receive" {
						t.Errorf("the sandbox sees network interface %q", name)
					}
				}
			}},
		{name: "unix sockets", blocked: 3, check: noHits, program: fmt.Sprintf(`
attempt("abstract socket of the host", lambda: connect("\0%s", socket.AF_UNIX))
attempt("pathname socket of the host", lambda: connect(%q, socket.AF_UNIX))
attempt("docker or dbus socket", lambda: connect("/run/dbus/system_bus_socket", socket.AF_UNIX))
`, abstract, sockPath)},
		{name: "host pids", blocked: 2, program: fmt.Sprintf(`
attempt("signal the host test process", lambda: os.kill(%d, 0))
attempt("signal host init", lambda: os.kill(%d, 9) if %d != 1 else os.kill(99999, 0))
`, os.Getpid(), os.Getppid(), os.Getppid())},
		{name: "ptrace and process_vm_readv", blocked: 3, program: `
syscall("ptrace attach pid 1", 101, 16, 1, 0, 0)
syscall("ptrace traceme", 101, 0, 0, 0, 0)
buf = ctypes.create_string_buffer(8)
syscall("process_vm_readv", 310, 1, 0, 0, 0, 0, 0)
`},
		// A kernel of the sandbox's own (gVisor) may reach the memory limit before the pids limit, which
		// ends the whole command: with ForkBombMayOOM that counts as contained too.
		{name: "fork bomb", timeout: 20 * time.Second, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			if !strings.Contains(r.Stdout, "BLOCKED fork failed") && !(o.ForkBombMayOOM && r.OOMKilled) {
				t.Errorf("the fork bomb was not refused: %+v", r)
			}
		}, program: `
import time
n = 0
try:
    while n < 100000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    blocked(f"fork failed after {n}: {e!r}")
else:
    escaped(f"forked {n} processes")
`},
		{name: "memory bomb", timeout: 30 * time.Second, program: `
chunks = []
for i in range(32):
    chunks.append(bytearray(64 << 20))
    for j in range(0, len(chunks[-1]), 4096):
        chunks[-1][j] = 1
escaped("allocated 2 GiB")
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			if r.ExitCode == 0 {
				t.Errorf("a 2 GiB allocation under a 256 MiB limit succeeded: %+v", r)
			}
		}},
		{name: "disk fill with one file", timeout: 30 * time.Second, blocked: 1, program: `
try:
    with open("big", "wb") as f:
        for i in range(128):
            f.write(b"\0" * (1 << 20))
except OSError as e:
    blocked(f"stopped at {os.path.getsize('big')} bytes: {e!r}")
else:
    escaped(f"wrote {os.path.getsize('big')} bytes")
`, check: diskBounded},
		{name: "disk fill with many files", timeout: 60 * time.Second, program: `
os.makedirs("many", exist_ok=True)
for i in range(30000):
    with open(f"many/{i}", "wb") as f:
        f.write(b"\1" * 65536)
escaped("wrote 30000 files")
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			if r.ExitCode == 0 {
				t.Errorf("writing 2 GB in many files under a 64 MiB quota succeeded")
			}
			diskBounded(t, s, r)
			err := s.WriteFile(context.Background(), "more", make([]byte, 64<<20))
			if !errors.Is(err, sandbox.ErrQuota) {
				t.Errorf("WriteFile past the quota: error = %v, want ErrQuota", err)
			}
		}},
		{name: "disk use hidden behind chmod 000", blocked: 1, program: `
os.makedirs("hidden/deeper")
with open("hidden/deeper/blob", "wb") as f:
    f.write(b"\1" * (40 << 20))
os.chmod("hidden/deeper", 0)
os.chmod("hidden", 0)
blocked("hid 40 MiB")
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			err := s.WriteFile(context.Background(), "more", make([]byte, 30<<20))
			if !errors.Is(err, sandbox.ErrQuota) {
				t.Errorf("WriteFile of 30 MiB next to 40 MiB hidden under a 64 MiB quota: error = %v, want ErrQuota", err)
			}
		}},
		{name: "cpu spin", timeout: 2 * time.Second, program: `
while True:
    pass
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			if !r.TimedOut {
				t.Errorf("a spinning program was not stopped by its 2s timeout: %+v", r)
			}
		}},
		{name: "fd exhaustion", blocked: 1, program: `
fds = []
try:
    while len(fds) < 100000:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    blocked(f"stopped at {len(fds)} descriptors: {e!r}")
else:
    escaped("opened 100000 descriptors")
`},
		{name: "setuid and nested namespaces", blocked: 4, program: `
syscall("unshare user namespace", 272, 0x10000000)
syscall("clone with CLONE_NEWUSER", 56, 0x10000000 | 17, 0, 0, 0, 0)
syscall("setns", 308, 0, 0)
st = open("/proc/self/status").read()
nnp = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS; gVisor's status file has no NoNewPrivs line
if nnp == 1 and "CapEff:\t0000000000000000" in st and "CapBnd:\t0000000000000000" in st:
    blocked("no_new_privs set, no capabilities")
else:
    escaped(st)
import subprocess
for prog in ["/usr/bin/su", "/usr/bin/sudo", "/usr/bin/passwd", "/usr/bin/newuidmap", "/usr/bin/mount"]:
    if os.path.exists(prog):
        out = subprocess.run([prog, "--help"], capture_output=True)
        if os.stat(prog).st_mode & 0o4000:
            print("setuid binary present (inert under nosuid and no_new_privs):", prog)
if os.getuid() == 0 or os.geteuid() == 0:
    escaped("running as root")
`},
		{name: "overwrite the interpreter", blocked: 3, program: `
attempt("overwrite python", lambda: write("/usr/bin/python3.11", b"#!/bin/sh\n"))
attempt("overwrite wrapper", lambda: write("/opt/agentgraph/bin/python3", b"#!/bin/sh\n"))
attempt("rename python", lambda: os.rename("/usr/bin/python3", "/tmp/py"))
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			r2, err := s.Exec(context.Background(), "python3 -c 'print(6*7)'", sandbox.ExecOptions{})
			if err != nil || r2.Stdout != "42\n" {
				t.Errorf("python after the attack: %+v, %v", r2, err)
			}
		}},
		{name: "device nodes", blocked: 4, program: `
import stat
attempt("open /dev/kvm", lambda: os.open("/dev/kvm", os.O_RDWR))
attempt("open a block device", lambda: os.open("/dev/vda", os.O_RDONLY))
attempt("mknod char device", lambda: os.mknod("memdev", stat.S_IFCHR | 0o666, os.makedev(1, 1)))
attempt("mknod in tmp", lambda: os.mknod("/tmp/sda", stat.S_IFBLK | 0o666, os.makedev(8, 0)))
print(sorted(os.listdir("/dev")))
`},
		{name: "kernel interfaces", blocked: 6, program: `
syscall("bpf", 321, 0, 0, 0)
syscall("perf_event_open", 298, 0, 0, -1, -1, 0)
syscall("io_uring_setup", 425, 8, ctypes.create_string_buffer(120))
syscall("userfaultfd", 323, 0)
syscall("keyctl", 250, 0, -3, 0)
syscall("mount", 165, b"none", b"/tmp", b"tmpfs", 0, 0)
`},
		{name: "inherited descriptors", blocked: 1, program: `
open_fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        open_fds.append((fd, os.readlink(f"/proc/self/fd/{fd}")))
    except OSError:
        pass
if open_fds: escaped(f"inherited {open_fds}")
else: blocked("no descriptors beyond 0, 1, 2")
`},
		{name: "daemon outliving the run", blocked: 1, program: `
import fcntl, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open("/home/user/daemon.lock", os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(w, b"x")
        time.sleep(600)
        os._exit(0)
    os._exit(0)
os.close(w)
if os.read(r, 1) == b"x":
    blocked("the daemon holds daemon.lock; its parent exits now")
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			if o.DaemonGone != nil {
				o.DaemonGone(t, s)
				return
			}
			// The daemon's lock goes when the daemon does: a lock still held means it outlived the run.
			after, err := s.Exec(context.Background(), `python3 -c 'import fcntl, os; fcntl.flock(os.open("daemon.lock", os.O_RDWR), fcntl.LOCK_EX | fcntl.LOCK_NB); print("free")'`, sandbox.ExecOptions{})
			if err != nil || after.Stdout != "free\n" {
				t.Errorf("a daemon survived the command that started it: daemon.lock is still held (%+v, %v)", after, err)
			}
		}},
		{name: "proc sys writes", blocked: 4, program: `
for p in ["/proc/sys/kernel/sysrq", "/proc/sys/user/max_user_namespaces", "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger"]:
    attempt("write " + p, lambda: write(p, b"1"))
`},
		{name: "TIOCSTI", blocked: 2, program: `
import fcntl, termios
attempt("open /dev/tty", lambda: os.open("/dev/tty", os.O_RDWR))
attempt("TIOCSTI on stdin", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
`},
		{name: "32-bit syscall entry", blocked: 1, program: `
import subprocess
# int 0x80 with eax=1 (exit) in a tiny machine-code blob: the filter must kill, not allow.
code = bytes([0xb8, 0x01, 0, 0, 0, 0xbb, 0x2a, 0, 0, 0, 0xcd, 0x80, 0xc3])
import mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
if os.fork() == 0:
    f = ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    f()
    os._exit(0)
_, status = os.wait()
if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 42:
    escaped("32-bit exit syscall ran")
else:
    blocked(f"32-bit syscall stopped, status {status}")
`},
		{name: "planted symlinks for the host", blocked: 1, program: `
os.symlink("/etc/shadow", "/home/user/shadow")
os.symlink("/", "/home/user/root")
os.symlink("/proc/1/root", "/tmp/proot")
blocked("planted")
`, check: func(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
			ctx := context.Background()
			for _, p := range []string{"shadow", "root/etc/shadow", "/tmp/proot/etc/passwd"} {
				if data, err := s.ReadFile(ctx, p); !errors.Is(err, sandbox.ErrInvalidPath) {
					t.Errorf("ReadFile(%s) = %q, %v; want ErrInvalidPath", p, data, err)
				}
			}
			if err := s.WriteFile(ctx, "root/tmp/x", []byte("x")); !errors.Is(err, sandbox.ErrInvalidPath) {
				t.Errorf("WriteFile through a planted symlink: %v", err)
			}
		}},
	}
}

func diskBounded(t *testing.T, s sandbox.Sandbox, r sandbox.ExecResult) {
	t.Helper()
	out, err := s.Exec(context.Background(), "du -sk --apparent-size ~ /tmp | awk '{s+=$1} END {print s}'", sandbox.ExecOptions{})
	if err != nil && !errors.Is(err, sandbox.ErrQuota) {
		t.Fatal(err)
	}
	var kib int64
	fmt.Sscan(out.Stdout, &kib)
	// The quota is checked every 250 ms while a command runs, so a fast writer overshoots by what it
	// writes in that time; twice the quota is the bound that must hold.
	if kib > 2*HostileLimits.DiskBytes>>10 {
		t.Errorf("sandbox holds %d KiB after the attack, quota %d KiB", kib, HostileLimits.DiskBytes>>10)
	}
}

// Hostile runs the hostile programs, each in a sandbox of SizeSmall of its own, in parallel, and fails on
// any attack that worked, or on fewer attacks reported stopped than each case makes. b must give SizeSmall
// HostileLimits. It needs python3 in the sandbox and a Linux host.
func Hostile(t *testing.T, b sandbox.Backend, o HostileOptions) {
	for _, tc := range hostileCases(t, o) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := b.Create(ctx, sandbox.CreateOptions{Size: sandbox.SizeSmall})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(context.Background()) })
			if err := s.WriteFile(ctx, "attack.py", []byte(prelude+tc.program)); err != nil {
				t.Fatal(err)
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			r, err := s.Exec(ctx, "python3 attack.py", sandbox.ExecOptions{Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			var nBlocked int
			for _, line := range strings.Split(r.Stdout, "\n") {
				switch {
				case strings.HasPrefix(line, "ESCAPED"):
					t.Errorf("attack worked: %s", line)
				case strings.HasPrefix(line, "BLOCKED"):
					nBlocked++
				}
			}
			if nBlocked < tc.blocked {
				t.Errorf("%d attacks reported blocked, want %d; exit %d\nstdout: %s\nstderr: %s", nBlocked, tc.blocked, r.ExitCode, longTail(r.Stdout), longTail(r.Stderr))
			}
			if tc.check != nil {
				tc.check(t, s, r)
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("exit %d timedOut %v\nstdout: %s\nstderr: %s", r.ExitCode, r.TimedOut, longTail(r.Stdout), longTail(r.Stderr))
			}
		})
	}
}

// longTail is the last 3000 bytes of a program's output, where a failure shows.
func longTail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}
