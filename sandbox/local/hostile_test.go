//go:build linux

package local_test

import (
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

// TestHostile runs the programs of docs/security.md's hostile list; TestUnprivileged runs it again as an
// unprivileged user.
func TestHostile(t *testing.T) {
	b := newBackend(t, local.WithSizeLimits(sandbox.SizeSmall, sandboxtest.HostileLimits))
	sandboxtest.Hostile(t, b, sandboxtest.HostileOptions{})
}
