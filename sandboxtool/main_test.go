package sandboxtool_test

import (
	"os"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}
