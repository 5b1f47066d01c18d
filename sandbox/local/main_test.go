package local_test

import (
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	// The child run of TestInitMissing leaves Init out on purpose.
	if os.Getenv("AGENTGRAPH_TEST_SKIP_INIT") != "1" {
		local.Init()
	}
	os.Exit(m.Run())
}
