package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The zygote is a small copy of this program (re-executed, so its heap is nearly empty) that forks the
// isolation helpers. Go cannot use vfork when it creates a user namespace, so it copies the whole address
// space of the forking process: from a large agent process that costs tens of milliseconds per command and
// stalls the parent with copy-on-write faults; from the zygote it costs next to nothing.
const zygoteArg0 = "agentgraph-sandbox-zygote"

// zmsg is one message on the zygote's socket (SOCK_SEQPACKET, so one message per read). Descriptors travel
// beside it as SCM_RIGHTS: with "spawn", stdout, stderr and the helper's four ExtraFiles; with "started",
// a pidfd of the helper.
type zmsg struct {
	Kind       string // spawn, started, exited
	ID         uint64
	Cloneflags uintptr `json:",omitempty"`
	HostUID    int     `json:",omitempty"`
	HostGID    int     `json:",omitempty"`
	Pid        int     `json:",omitempty"`
	Status     int     `json:",omitempty"` // syscall.WaitStatus of an exited helper
	Err        string  `json:",omitempty"`
}

const spawnFDs = 6

// helperCmd is the one place the helper's process attributes are set.
func helperCmd(m zmsg, files []*os.File) *exec.Cmd {
	return &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{helperArg0},
		Env:        []string{"AGENTGRAPH_SANDBOX_HELPER=1", "GOMAXPROCS=1"},
		Dir:        "/",
		Stdout:     files[0],
		Stderr:     files[1],
		ExtraFiles: files[2:],
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  m.Cloneflags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: sandboxUID, HostID: m.HostUID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: sandboxUID, HostID: m.HostGID, Size: 1}},
			// setgroups stays denied, so the sandbox cannot drop a group the host uses to deny access.
			GidMappingsEnableSetgroups: false,
			// The helper is the sandbox user from the start; the namespace capabilities it needs to build the
			// root survive its execve as ambient capabilities, and it drops them all before the final exec.
			Credential:  &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, NoSetGroups: true},
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
			Pdeathsig:   syscall.SIGKILL,
			Setsid:      true,
		},
	}
}

// zygoteMain serves spawn requests until the parent closes the socket (or dies), then exits; the helpers
// it started die with it (Pdeathsig).
func zygoteMain() {
	c, err := net.FileConn(os.NewFile(3, "zygote"))
	if err != nil {
		os.Exit(3)
	}
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
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(spawnFDs*4))
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			os.Exit(0)
		}
		var m zmsg
		fds := parseRights(oob[:oobn])
		if json.Unmarshal(buf[:n], &m) != nil || m.Kind != "spawn" || len(fds) != spawnFDs {
			for _, fd := range fds {
				unix.Close(fd)
			}
			send(zmsg{Kind: "started", ID: m.ID, Err: "malformed spawn request"})
			continue
		}
		go func() {
			files := make([]*os.File, len(fds))
			for i, fd := range fds {
				files[i] = os.NewFile(uintptr(fd), "spawn")
			}
			cmd := helperCmd(m, files)
			err := cmd.Start()
			for _, f := range files {
				f.Close()
			}
			if err != nil {
				send(zmsg{Kind: "started", ID: m.ID, Err: err.Error()})
				return
			}
			// Opened before Wait can reap the helper, so the pidfd always names it.
			pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				send(zmsg{Kind: "started", ID: m.ID, Err: "pidfd_open: " + err.Error()})
				return
			}
			send(zmsg{Kind: "started", ID: m.ID, Pid: cmd.Process.Pid}, pidfd)
			unix.Close(pidfd)
			cmd.Wait()
			send(zmsg{Kind: "exited", ID: m.ID, Status: int(cmd.ProcessState.Sys().(syscall.WaitStatus))})
		}()
	}
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
	exits   map[uint64]chan syscall.WaitStatus
	err     error // why the zygote is gone
}

type zstart struct {
	pid   int
	pidfd *os.File
	err   error
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
		started: map[uint64]chan zstart{}, exits: map[uint64]chan syscall.WaitStatus{}}
	go z.read()
	return z, nil
}

func (z *zygote) read() {
	defer close(z.done)
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
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
					delete(z.exits, m.ID)
				} else if len(fds) == 1 {
					st.pidfd = os.NewFile(uintptr(fds[0]), "pidfd")
					fds = nil
				}
				ch <- st
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
	for id, ch := range z.exits {
		ch <- syscall.WaitStatus(syscall.SIGKILL) // "terminated by SIGKILL"
		delete(z.exits, id)
	}
}

// spawn asks the zygote for a helper with these descriptors (stdout, stderr, then the ExtraFiles). It returns
// the helper's pid and pidfd, and a channel that receives its wait status.
func (z *zygote) spawn(m zmsg, files []*os.File) (zstart, <-chan syscall.WaitStatus) {
	started := make(chan zstart, 1)
	exited := make(chan syscall.WaitStatus, 1)
	z.mu.Lock()
	if z.err != nil {
		z.mu.Unlock()
		return zstart{err: z.err}, nil
	}
	z.nextID++
	m.Kind, m.ID = "spawn", z.nextID
	z.started[m.ID] = started
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
		delete(z.exits, m.ID)
		z.mu.Unlock()
		return zstart{err: fmt.Errorf("talk to the sandbox zygote: %w", err)}, nil
	}
	st := <-started
	if st.err != nil {
		return st, nil
	}
	return st, exited
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
