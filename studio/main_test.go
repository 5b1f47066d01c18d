package studio_test

import (
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	local.Init() // the sandbox helper re-executes this binary
	os.Exit(m.Run())
}
