//go:build linux

package gvisor_test

import (
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/gvisor"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

func TestHostile(t *testing.T) {
	b := newBackend(t, gvisor.WithSizeLimits(sandbox.SizeSmall, sandboxtest.HostileLimits))
	sandboxtest.Hostile(t, b, sandboxtest.HostileOptions{
		// Locks live in each container's own kernel, so a second command's lock probe proves nothing
		// here; the daemon lived in the finished command's container, which must be gone.
		DaemonGone: func(t *testing.T, s sandbox.Sandbox) {
			for _, c := range containers(t, b) {
				if strings.HasPrefix(c, s.ID()+"-") {
					t.Errorf("container %s of the finished command is still recorded: the daemon may have outlived it", c)
				}
			}
		},
		// gVisor's kernel refuses the fork past RLIMIT_NPROC; a runsc whose processes cost more memory may
		// reach the memory limit first, which ends the whole container.
		ForkBombMayOOM: true,
	})
}
