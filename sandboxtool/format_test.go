package sandboxtool_test

import (
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

func TestFormat(t *testing.T) {
	long := strings.Repeat("é", sandboxtool.OutputLimit) // two bytes each: the tail counts characters
	for _, tc := range []struct {
		name string
		res  sandbox.ExecResult
		want string
	}{
		{"exit 0", sandbox.ExecResult{Stdout: "hello\n"}, "[sb_1] exit code 0\nhello"},
		{"failure", sandbox.ExecResult{ExitCode: 1, Stdout: "partial\n", Stderr: "Traceback\n"}, "[sb_1] exit code 1\npartial\nTraceback"},
		{"killed", sandbox.ExecResult{ExitCode: -9}, "[sb_1] exit code -9"},
		{"timed out", sandbox.ExecResult{ExitCode: 137, TimedOut: true, Stdout: "tick\n"}, "[sb_1] timed out\ntick"},
		{"long output", sandbox.ExecResult{Stdout: "head " + long, Stderr: "!"}, "[sb_1] exit code 0\n" + long[2:] + "!"},
	} {
		if got := sandboxtool.Format("sb_1", tc.res); got != tc.want {
			t.Errorf("%s: Format = %q; want %q", tc.name, got, tc.want)
		}
	}
}
