package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The zygote is a small copy of this program (re-executed, so its heap is nearly empty) that forks every
// command's process. Go cannot use vfork when it creates a user namespace, so it copies the whole address
// space of the forking process: from a large agent process that costs tens of milliseconds per command and
// stalls the parent with copy-on-write faults; from the zygote it costs next to nothing.
const zygoteArg0 = "agentgraph-sandbox-zygote"

// zmsg is one message on the zygote's socket (SOCK_SEQPACKET, so one message per read). Descriptors travel
// beside it as SCM_RIGHTS: with "spawn", the command's stdout and stderr, the read end of its go-ahead pipe
// and its home and /tmp; with "started", a pidfd of the command's process.
type zmsg struct {
	Kind       string // spawn, started, execd, exited, drop
	ID         uint64
	Cloneflags uintptr         `json:",omitempty"`
	HostUID    int             `json:",omitempty"`
	HostGID    int             `json:",omitempty"`
	Config     json.RawMessage `json:",omitempty"` // childConfig
	Pid        int             `json:",omitempty"`
	Status     int             `json:",omitempty"` // syscall.WaitStatus of an exited process
	Err        string          `json:",omitempty"`
	Egress     bool            `json:",omitempty"` // spawn: make the egress proxy's listener in the new network
	// Cgroups are the sandbox's cgroup directories (root only): with spawn, the process starts in them;
	// with drop, the zygote's thread in them ends once their commands have.
	Cgroups []string `json:",omitempty"`
	// SandboxNetwork (spawn): the forker thread of Cgroups holds a network namespace of its own, and
	// the command is forked into it instead of a new one.
	SandboxNetwork bool `json:",omitempty"`
}

const spawnFDs = 5

// zygoteMain serves spawn requests until the parent closes the socket (or dies), then exits; the processes
// it started die with it (their parent-death signal).
func zygoteMain() {
	// The main thread stays with this goroutine, so no forker (see forkers) ever runs on it: a goroutine
	// that exits locked to the main thread leaves that thread parked rather than ended, and it would stay
	// in a sandbox's cgroups.
	runtime.LockOSThread()
	c, err := net.FileConn(os.NewFile(3, "zygote"))
	if err != nil {
		os.Exit(3)
	}
	if os.Geteuid() == 0 {
		// Commands must not inherit root's supplementary groups; the zygote needs none.
		syscall.Setgroups(nil)
	}
	statics, staticsErr := loadStatics()
	templates := &rootTemplates{}
	threads := &forkers{}
	uc := c.(*net.UnixConn)
	var wmu sync.Mutex
	send := func(m zmsg, fds ...int) {
		data, _ := json.Marshal(m)
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		wmu.Lock()
		uc.WriteMsgUnix(data, oob, nil)
		wmu.Unlock()
	}
	buf := make([]byte, 256<<10)
	oob := make([]byte, unix.CmsgSpace(spawnFDs*4))
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			os.Exit(0)
		}
		var m zmsg
		fds := parseRights(oob[:oobn])
		if len(fds) == 0 && json.Unmarshal(buf[:n], &m) == nil && m.Kind == "drop" {
			threads.drop(m.Cgroups)
			continue
		}
		if json.Unmarshal(buf[:n], &m) != nil || m.Kind != "spawn" || len(fds) != spawnFDs || staticsErr != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			why := "malformed spawn request"
			if staticsErr != nil {
				why = staticsErr.Error()
			}
			send(zmsg{Kind: "started", ID: m.ID, Err: why})
			continue
		}
		go spawnChild(m, fds, statics, templates, threads, send)
	}
}

// spawnChild forks one command's process, maps its ids, reports it started, reports whether its setup
// reached the final exec, and reports its exit.
func spawnChild(m zmsg, fds []int, statics *sandboxStatics, templates *rootTemplates, threads *forkers, send func(zmsg, ...int)) {
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	fail := func(err error) {
		send(zmsg{Kind: "started", ID: m.ID, Err: err.Error()})
	}
	var cfg childConfig
	if err := json.Unmarshal(m.Config, &cfg); err != nil {
		closeAll()
		fail(err)
		return
	}
	if cfg.MountFDs {
		// A template of the root when this kernel builds one; otherwise the child builds its root itself.
		if fd, err := templates.clone(&cfg); err == nil {
			fds = append(fds, fd)
		}
	}
	template := -1
	if len(fds) > spawnFDs {
		template = fds[spawnFDs]
	}
	var forker *forker
	if len(m.Cgroups) > 0 {
		// A child given its root and home as descriptors needs no host path but /proc.
		kind := forkerKind{network: m.SandboxNetwork, mounts: cfg.MountFDs && template >= 0}
		forker = threads.acquire(m.Cgroups, kind)
		defer threads.release(forker) // after the wait below: the thread outlives its commands
		if m.SandboxNetwork && !forker.holdsNetwork() {
			// The thread could not make the sandbox's namespace: the command makes its own.
			m.Cloneflags |= unix.CLONE_NEWNET
			cfg.SandboxNetwork = false
		}
	}
	// errPipe carries a failed setup step (EOF once the command is exec'd), mapPipe the zygote's word that
	// the child's ids are mapped, alivePipe the child's word that it runs, so its pid is known.
	var errPipe, mapPipe, alivePipe [2]int
	pipes := []*[2]int{&errPipe, &mapPipe, &alivePipe}
	closePipes := func() {
		for _, p := range pipes {
			if p[0] > 0 {
				unix.Close(p[0])
				unix.Close(p[1])
			}
		}
	}
	for _, p := range pipes {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			closeAll()
			closePipes()
			fail(err)
			return
		}
	}
	prog, err := childProgramFor(&cfg, childFDs{stdout: fds[0], stderr: fds[1], mapped: mapPipe[0], goAhead: fds[2],
		errW: errPipe[1], alive: alivePipe[1], home: fds[3], tmp: fds[4], template: template}, statics)
	if err != nil {
		closeAll()
		closePipes()
		fail(err)
		return
	}
	// The clone runs on a goroutine of its own: where the child shares the zygote's memory, it returns only
	// once the command runs, and the child first needs its ids mapped, here.
	var tid int32
	forked := make(chan error, 1)
	// Once the child runs, it has copies of its descriptors and the zygote's go: the error pipe's EOF then
	// comes with the child's exec, not after the cloning thread has woken up.
	var handedOver sync.Once
	handOver := func() {
		handedOver.Do(func() {
			closeAll()
			unix.Close(errPipe[1])
			unix.Close(mapPipe[0])
			unix.Close(alivePipe[1])
		})
	}
	fork := func(joinErr error) {
		err := joinErr
		if err == nil {
			_, err = forkChild(m.Cloneflags, prog, errPipe[1], &tid)
		}
		handOver()
		forked <- err
	}
	if forker != nil {
		go forker.do(fork)
	} else {
		go fork(nil)
	}
	// Closed without a byte when setup fails here: the child then stops at its first step.
	defer unix.Close(mapPipe[1])
	defer unix.Close(errPipe[0])
	// One byte once the child runs; EOF if it never did (the clone failed, or the child died first).
	alive := readByte(alivePipe[0])
	handOver()
	unix.Close(alivePipe[0])
	pid := int(atomic.LoadInt32(&tid))
	if !alive {
		err := <-forked
		if err == nil {
			err = errors.New("the process died before its setup began")
			if pid > 0 {
				var ws unix.WaitStatus
				unix.Wait4(pid, &ws, 0, nil)
			}
		}
		fail(fmt.Errorf("start the process: %w", err))
		return
	}
	pidfd, listener := -1, -1
	if err = mapIDs(pid, m.HostUID, m.HostGID); err == nil {
		// Opened before wait4 can reap the process, so the pidfd always names it.
		pidfd, err = unix.PidfdOpen(pid, 0)
	}
	if err == nil && m.Egress {
		listener, err = listenIn(pid, EgressPort)
	}
	if err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		unix.Kill(pid, unix.SIGKILL)
		<-forked
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		fail(err)
		return
	}
	// The child sets its sandbox up from here, while the parent limits and records it; it waits for the
	// parent's go-ahead only before the final exec.
	unix.Write(mapPipe[1], []byte{1}) // a child that died already says why on its error pipe
	if listener >= 0 {
		send(zmsg{Kind: "started", ID: m.ID, Pid: pid}, pidfd, listener)
		unix.Close(listener)
	} else {
		send(zmsg{Kind: "started", ID: m.ID, Pid: pid}, pidfd)
	}
	unix.Close(pidfd)
	send(zmsg{Kind: "execd", ID: m.ID, Err: childError(errPipe[0], prog)})
	<-forked
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	send(zmsg{Kind: "exited", ID: m.ID, Status: int(ws)})
}

// readByte reads one byte from fd and says whether it got one (false at EOF or on an error).
func readByte(fd int) bool {
	b := make([]byte, 1)
	for {
		n, err := unix.Read(fd, b)
		if err != unix.EINTR {
			return n == 1
		}
	}
}

// mapIDs maps the sandbox user to the host user of the command's process; setgroups stays denied, so the
// sandbox cannot drop a group the host uses to deny access.
func mapIDs(pid, uid, gid int) error {
	dir := fmt.Sprintf("/proc/%d/", pid)
	for _, f := range []struct{ name, data string }{
		{"setgroups", "deny"},
		{"uid_map", fmt.Sprintf("%d %d 1\n", sandboxUID, uid)},
		{"gid_map", fmt.Sprintf("%d %d 1\n", sandboxUID, gid)},
	} {
		if err := os.WriteFile(dir+f.name, []byte(f.data), 0); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}

// childError waits until the child has exec'd its command (EOF on the pipe) or failed, and says which op
// failed and why.
func childError(errR int, prog *childProgram) string {
	var f childFailure
	buf := (*[unsafe.Sizeof(f)]byte)(unsafe.Pointer(&f))[:]
	n := 0
	for n < len(buf) {
		k, err := unix.Read(errR, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || k == 0 {
			break
		}
		n += k
	}
	switch {
	case n == 0:
		return ""
	case n < len(buf):
		return "the sandbox setup died"
	case int(f.Index) < len(prog.what):
		return fmt.Sprintf("%s: %v", prog.what[f.Index], syscall.Errno(f.Errno))
	}
	return fmt.Sprintf("step %d: %v", f.Index, syscall.Errno(f.Errno))
}

func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// zygote is the parent's handle on its zygote process.
type zygote struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	done chan struct{} // closed when the reader stops: the zygote is gone

	mu      sync.Mutex
	nextID  uint64
	started map[uint64]chan zstart
	execd   map[uint64]chan error
	exits   map[uint64]chan syscall.WaitStatus
	err     error // why the zygote is gone
}

type zstart struct {
	pid      int
	pidfd    *os.File
	listener *os.File // the egress proxy's listening socket in the process's network namespace
	err      error
}

var errZygoteGone = errors.New("the sandbox zygote process exited")

func startZygote() (*zygote, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	parentF, childF := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote")
	defer parentF.Close()
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{zygoteArg0},
		Env:         []string{"AGENTGRAPH_SANDBOX_ZYGOTE=1", "GOMAXPROCS=2"},
		Dir:         "/",
		Stderr:      os.Stderr, // a crash of the zygote must be visible somewhere
		ExtraFiles:  []*os.File{childF},
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	err = cmd.Start()
	childF.Close()
	if err != nil {
		return nil, fmt.Errorf("start the sandbox zygote: %w", err)
	}
	c, err := net.FileConn(parentF)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	z := &zygote{cmd: cmd, conn: c.(*net.UnixConn), done: make(chan struct{}),
		started: map[uint64]chan zstart{}, execd: map[uint64]chan error{}, exits: map[uint64]chan syscall.WaitStatus{}}
	go z.read()
	return z, nil
}

func (z *zygote) read() {
	defer close(z.done)
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := z.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			z.fail(errZygoteGone)
			return
		}
		fds := parseRights(oob[:oobn])
		var m zmsg
		if json.Unmarshal(buf[:n], &m) != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		z.mu.Lock()
		switch m.Kind {
		case "started":
			if ch := z.started[m.ID]; ch != nil {
				delete(z.started, m.ID)
				st := zstart{pid: m.Pid}
				if m.Err != "" {
					st.err = errors.New(m.Err)
					delete(z.execd, m.ID)
					delete(z.exits, m.ID)
				} else if len(fds) >= 1 {
					st.pidfd = os.NewFile(uintptr(fds[0]), "pidfd")
					if len(fds) == 2 {
						st.listener = os.NewFile(uintptr(fds[1]), "egress")
					}
					fds = nil
				}
				ch <- st
			}
		case "execd":
			if ch := z.execd[m.ID]; ch != nil {
				delete(z.execd, m.ID)
				var err error
				if m.Err != "" {
					err = errors.New(m.Err)
				}
				ch <- err
			}
		case "exited":
			if ch := z.exits[m.ID]; ch != nil {
				delete(z.exits, m.ID)
				ch <- syscall.WaitStatus(m.Status)
			}
		}
		z.mu.Unlock()
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// fail ends every pending request: helpers die with the zygote, so they count as killed.
func (z *zygote) fail(err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.err == nil {
		z.err = err
	}
	for id, ch := range z.started {
		ch <- zstart{err: err}
		delete(z.started, id)
	}
	for id, ch := range z.execd {
		ch <- err
		delete(z.execd, id)
	}
	for id, ch := range z.exits {
		ch <- syscall.WaitStatus(syscall.SIGKILL) // "terminated by SIGKILL"
		delete(z.exits, id)
	}
}

// spawn asks the zygote for a command's process with these descriptors (stdout, stderr, the go-ahead pipe's
// read end, home, /tmp). It returns the process's pid and pidfd, a channel that receives nil once the command
// runs or why its setup failed, and one that receives its wait status.
func (z *zygote) spawn(m zmsg, files []*os.File) (zstart, <-chan error, <-chan syscall.WaitStatus) {
	started := make(chan zstart, 1)
	execd := make(chan error, 1)
	exited := make(chan syscall.WaitStatus, 1)
	z.mu.Lock()
	if z.err != nil {
		z.mu.Unlock()
		return zstart{err: z.err}, nil, nil
	}
	z.nextID++
	m.Kind, m.ID = "spawn", z.nextID
	z.started[m.ID] = started
	z.execd[m.ID] = execd
	z.exits[m.ID] = exited
	z.mu.Unlock()
	data, _ := json.Marshal(m)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if _, _, err := z.conn.WriteMsgUnix(data, unix.UnixRights(fds...), nil); err != nil {
		z.mu.Lock()
		delete(z.started, m.ID)
		delete(z.execd, m.ID)
		delete(z.exits, m.ID)
		z.mu.Unlock()
		return zstart{err: fmt.Errorf("talk to the sandbox zygote: %w", err)}, nil, nil
	}
	st := <-started
	if st.err != nil {
		return st, nil, nil
	}
	return st, execd, exited
}

// drop tells the zygote that the sandbox with these cgroups is being stopped or deleted, so its thread in
// them ends as soon as their commands have.
func (z *zygote) drop(cgroups []string) {
	data, _ := json.Marshal(zmsg{Kind: "drop", Cgroups: cgroups})
	z.conn.WriteMsgUnix(data, nil, nil)
}

// close ends the zygote: it sees EOF, exits, and the helpers it started die with it.
func (z *zygote) close() {
	z.conn.Close()
	<-z.done
	z.cmd.Wait()
}

// zygote returns the backend's zygote, starting one if there is none or the last one died.
func (b *Backend) zygote() (*zygote, error) {
	b.zmu.Lock()
	defer b.zmu.Unlock()
	if b.zyg != nil {
		select {
		case <-b.zyg.done:
			b.zyg.cmd.Wait()
			b.zyg = nil
		default:
			return b.zyg, nil
		}
	}
	if b.closed {
		return nil, errors.New("the sandbox backend is closed")
	}
	z, err := startZygote()
	if err != nil {
		return nil, err
	}
	b.zyg = z
	return z, nil
}

// dropCgroups lets the zygote's thread in the sandbox's cgroups, if there is one, end once their commands
// have, so that the cgroups can be removed.
func (b *Backend) dropCgroups(id string) {
	b.zmu.Lock()
	z := b.zyg
	b.zmu.Unlock()
	if z == nil {
		return
	}
	var dirs []string
	for _, c := range cgroupControllers {
		dirs = append(dirs, cgroupDir(c, id))
	}
	z.drop(dirs)
}

// listenIn makes a TCP socket listening on 127.0.0.1:port in the network namespace of process pid (bringing
// its loopback up first), for the egress proxy. The calling thread enters that namespace and returns; a
// thread that cannot return is left locked, so the runtime ends it.
func listenIn(pid, port int) (int, error) {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return -1, err
	}
	defer unix.Close(self)
	target, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return -1, err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("enter the sandbox's network: %w", err)
	}
	fd, lerr := listenLoopback(port)
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("leave the sandbox's network: %w", err) // the thread stays locked and dies
	}
	runtime.UnlockOSThread()
	return fd, lerr
}

// loopbackUp brings up the loopback of the calling thread's network namespace.
func loopbackUp() error {
	ctl, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ifr, err := unix.NewIfreq("lo")
	if err == nil {
		ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
		err = unix.IoctlIfreq(ctl, unix.SIOCSIFFLAGS, ifr)
	}
	unix.Close(ctl)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

func listenLoopback(port int) (int, error) {
	if err := loopbackUp(); err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	err = unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	return fd, nil
}
