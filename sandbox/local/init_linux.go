package local

import (
	"os"
	"sync/atomic"
)

// sandboxUID is the user (and group) id sandboxed code runs as.
const sandboxUID = 1000

var initCalled atomic.Bool

// Init must be the first statement of main (and of TestMain in tests). In the ordinary process it returns at
// once. The program is re-executed once, as the zygote: a small process that forks every command's process
// and sets its sandbox up; there Init never returns. Create fails with a clear error when Init was not
// called.
func Init() {
	initCalled.Store(true)
	if len(os.Args) == 1 && os.Args[0] == zygoteArg0 && os.Getenv("AGENTGRAPH_SANDBOX_ZYGOTE") == "1" {
		zygoteMain()
		os.Exit(0)
	}
}

// childConfig is everything the zygote needs to set a command's sandbox up; the parent sends it as JSON.
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
	Wrappers    map[string]string // /opt/agentgraph/bin: name -> script, or "symlink:" and a target
	Symlinks    map[string]string // root-level symlinks: name -> target (the merged-usr links)
	Landlock    bool
	EgressPort  int // a proxy listens on 127.0.0.1 at this port; landlock lets TCP connect there only
	// SandboxNetwork says the command joins the network namespace its sandbox's forker thread holds (see
	// forkers), whose loopback is up already, rather than a new one of its own.
	SandboxNetwork bool
	// MountFDs says the home and /tmp descriptors are detached mounts (open_tree clones made by a root
	// parent, because the sandbox's uid may not walk the host path); otherwise the child clones HomeSrc and
	// TmpSrc itself, as the calling user, inside its own mount namespace.
	MountFDs        bool
	HomeSrc, TmpSrc string
}

type rlimitSpec struct {
	Resource int
	Cur, Max uint64
}
