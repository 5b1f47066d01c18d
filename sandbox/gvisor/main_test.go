//go:build linux

package gvisor_test

import (
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

// The benchmark runs the local backend beside this one, and the local backend re-executes the test binary.
func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}
