package local

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup v1 hierarchy lets each thread belong to its own cgroup, and a forked process starts in the
// cgroups of the thread that forked it. The zygote therefore forks a sandbox's commands from a thread of
// its own that has joined the sandbox's cgroups, instead of moving every new process into them: a move
// takes the kernel's cgroup write lock, which waits for an RCU grace period, milliseconds on a busy
// machine, for every command.
//
// The thread of a sandbox without network also holds the sandbox's network namespace: it unshares one
// (loopback only) when it starts, its commands are forked into it, and it goes when the thread and its
// commands have. A sandbox's commands thus share a loopback, as the processes of one container do; landlock
// still forbids them TCP, and scopes abstract unix sockets to each command.
//
// A command's new mount namespace starts as a copy of the thread's, and its old root, that copy, is detached
// once the command's own root is in place: both cost in proportion to the mounts copied, and the host's
// mount table holds every mounted sandbox disk. So a thread whose commands need no host path (their root
// and home come as descriptors) moves to a mount namespace of its own that keeps only / and /proc (a new
// /proc may be mounted in a user namespace only where one is fully visible already).
//
// A command's parent-death signal follows the thread that forked it, so the thread lives while any of its
// commands does. It ends (and so leaves the cgroups, which can then be removed) once it has none and either
// the backend released the sandbox (Stop, Delete) or no command came for forkerIdle; a Stop from another
// process waits that long at most for the cgroups to empty.
const forkerIdle = 500 * time.Millisecond

// forkers are the zygote's threads in sandboxes' cgroups, by the cgroup directories they joined and the
// namespaces they hold.
type forkers struct {
	mu    sync.Mutex
	byKey map[string]*forker
}

// forkerKind says which namespaces of its own a forker's thread makes.
type forkerKind struct {
	network bool // a network namespace, loopback only
	mounts  bool // a mount namespace holding / and /proc only
}

type forker struct {
	key      string
	cgroups  string // the cgroup directories, joined
	jobs     chan func(joinErr error)
	wake     chan struct{}
	ready    chan struct{} // closed once the thread has joined the cgroups and made its namespaces, or failed
	network  bool          // the thread holds a network namespace of its own; set before ready closes
	live     int           // uses: commands being forked or not yet reaped; under forkers.mu
	released bool          // under forkers.mu
}

// acquire returns the forker of dirs of that kind, starting one if there is none, and counts one use of
// it, which release ends. The forker has not necessarily joined the cgroups or made its namespaces yet:
// run's jobs find out.
func (fs *forkers) acquire(dirs []string, kind forkerKind) *forker {
	cgroups := strings.Join(dirs, "\x00")
	key := fmt.Sprintf("%s\x00%v", cgroups, kind)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.byKey[key]
	if f == nil {
		if fs.byKey == nil {
			fs.byKey = map[string]*forker{}
		}
		f = &forker{key: key, cgroups: cgroups, jobs: make(chan func(error)), wake: make(chan struct{}, 1),
			ready: make(chan struct{})}
		fs.byKey[key] = f
		go fs.run(f, dirs, kind)
	}
	f.live++
	return f
}

// release ends one use of f.
func (fs *forkers) release(f *forker) {
	fs.mu.Lock()
	f.live--
	fs.mu.Unlock()
	f.poke()
}

func (f *forker) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// drop lets the forkers of dirs end as soon as they have no commands: the sandbox is being stopped or
// deleted.
func (fs *forkers) drop(dirs []string) {
	cgroups := strings.Join(dirs, "\x00")
	var dropped []*forker
	fs.mu.Lock()
	for key, f := range fs.byKey {
		if f.cgroups == cgroups {
			f.released = true
			delete(fs.byKey, key)
			dropped = append(dropped, f)
		}
	}
	fs.mu.Unlock()
	for _, f := range dropped {
		f.poke()
	}
}

// run joins dirs on a thread of its own, makes the namespaces kind asks for, and runs f's jobs there,
// telling each whether that worked. It returns, and the thread ends with it (a goroutine that exits locked
// takes its thread along, and its namespaces with it), when f is not used and was dropped, idle, or could
// not join.
func (fs *forkers) run(f *forker, dirs []string, kind forkerKind) {
	runtime.LockOSThread() // never unlocked: see above
	joinErr := joinThread(dirs)
	if joinErr == nil && kind.mounts {
		ownMounts() // best effort: a full copy costs time, not safety
	}
	if joinErr == nil && kind.network {
		// Without the privilege to make one (unshare fails and the thread is as it was), each command
		// makes its own namespace instead; a namespace made but left without loopback fails its commands.
		var made bool
		if made, joinErr = ownNetwork(); made && joinErr == nil {
			f.network = true
		} else if !made {
			joinErr = nil
		}
	}
	close(f.ready)
	idle := time.NewTimer(forkerIdle)
	defer idle.Stop()
	for {
		timedOut := false
		select {
		case job := <-f.jobs:
			job(joinErr)
		case <-f.wake:
		case <-idle.C:
			timedOut = true
		}
		fs.mu.Lock()
		if f.live == 0 && (f.released || timedOut || joinErr != nil) {
			if fs.byKey[f.key] == f {
				delete(fs.byKey, f.key)
			}
			fs.mu.Unlock()
			return
		}
		fs.mu.Unlock()
		idle.Reset(forkerIdle)
	}
}

// joinThread moves the calling thread (only it) into the cgroups at dirs.
func joinThread(dirs []string) error {
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for _, d := range dirs {
		if err := os.WriteFile(d+"/tasks", tid, 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// ownNetwork moves the calling thread (only it) into a new network namespace and brings its loopback up.
// made says whether the thread left the namespace it was in.
func ownNetwork() (made bool, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return false, fmt.Errorf("make the sandbox's network namespace: %w", err)
	}
	return true, loopbackUp()
}

// ownMounts moves the calling thread (only it: a mount namespace comes with the thread's own root and
// working directory) into a private copy of its mount namespace and detaches every mount but / and /proc
// and what lies under /proc. It gives up quietly: the thread then works as before, with more to copy.
func ownMounts() {
	if unix.Unshare(unix.CLONE_NEWNS) != nil {
		return
	}
	if unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") != nil {
		return
	}
	data, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMountPoint(f[4])
		if p != "/" && p != "/proc" && !strings.HasPrefix(p, "/proc/") {
			points = append(points, p)
		}
	}
	// Deepest first, so a mount goes before the one it lies on.
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, p := range points {
		unix.Unmount(p, unix.MNT_DETACH)
	}
}

// unescapeMountPoint undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMountPoint(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// holdsNetwork waits until f's thread is set up and says whether it holds a network namespace of its own.
func (f *forker) holdsNetwork() bool {
	<-f.ready
	return f.network
}

// do runs job on f's thread and waits for it; job gets the error of joining the cgroups, if any.
func (f *forker) do(job func(joinErr error)) {
	done := make(chan struct{})
	f.jobs <- func(joinErr error) {
		job(joinErr)
		close(done)
	}
	<-done
}
