package local

import (
	"fmt"
	"os"
	"runtime"
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
// A command's parent-death signal follows the thread that forked it, so the thread lives while any of its
// commands does. It ends (and so leaves the cgroups, which can then be removed) once it has none and either
// the backend released the sandbox (Stop, Delete) or no command came for forkerIdle; a Stop from another
// process waits that long at most for the cgroups to empty.
const forkerIdle = 500 * time.Millisecond

// forkers are the zygote's threads in sandboxes' cgroups, by the cgroup directories they joined and
// whether they hold a network namespace.
type forkers struct {
	mu    sync.Mutex
	byKey map[string]*forker
}

type forker struct {
	key      string
	jobs     chan func(joinErr error)
	wake     chan struct{}
	ready    chan struct{} // closed once the thread has joined the cgroups and made its namespace, or failed
	network  bool          // the thread holds a network namespace of its own; set before ready closes
	live     int           // uses: commands being forked or not yet reaped; under forkers.mu
	released bool          // under forkers.mu
}

// forkerKey names the forker of dirs, with its own network namespace or without.
func forkerKey(dirs []string, network bool) string {
	key := strings.Join(dirs, "\x00")
	if network {
		key += "\x00network"
	}
	return key
}

// acquire returns the forker of dirs (holding a network namespace if network is set), starting one if
// there is none, and counts one use of it, which release ends. The forker has not necessarily joined the
// cgroups or made its namespace yet: run's jobs find out.
func (fs *forkers) acquire(dirs []string, network bool) *forker {
	key := forkerKey(dirs, network)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.byKey[key]
	if f == nil {
		if fs.byKey == nil {
			fs.byKey = map[string]*forker{}
		}
		f = &forker{key: key, jobs: make(chan func(error)), wake: make(chan struct{}, 1), ready: make(chan struct{})}
		fs.byKey[key] = f
		go fs.run(f, dirs, network)
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
	for _, network := range []bool{false, true} {
		key := forkerKey(dirs, network)
		fs.mu.Lock()
		f := fs.byKey[key]
		if f != nil {
			f.released = true
			delete(fs.byKey, key)
		}
		fs.mu.Unlock()
		if f != nil {
			f.poke()
		}
	}
}

// run joins dirs on a thread of its own (and with network, moves it to a new network namespace) and runs
// f's jobs there, telling each whether that worked. It returns, and the thread ends with it (a goroutine
// that exits locked takes its thread along, and its namespaces with it), when f is not used and was
// dropped, idle, or could not join.
func (fs *forkers) run(f *forker, dirs []string, network bool) {
	runtime.LockOSThread() // never unlocked: see above
	joinErr := joinThread(dirs)
	if joinErr == nil && network {
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
