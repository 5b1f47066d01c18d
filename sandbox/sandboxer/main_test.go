package sandboxer_test

import (
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	local.Init() // the loopback tests run real sandboxes of the local backend behind agentgraph-sandboxd's server
	os.Exit(m.Run())
}
