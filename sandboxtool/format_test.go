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
		{"oom", sandbox.ExecResult{ExitCode: 137, Signal: 9, Ending: sandbox.EndOOM, OOMKilled: true, Stdout: "big\n"},
			"[sb_1] exit code 137\nbig\n[the sandbox ran out of memory and the kernel killed the program: process the data in smaller pieces or free memory (del large objects) and run again]"},
		{"disk full", sandbox.ExecResult{ExitCode: 1, Ending: sandbox.EndExited, DiskFull: true, Stderr: "OSError: [Errno 28] No space left on device\n"},
			"[sb_1] exit code 1\nOSError: [Errno 28] No space left on device\n[the sandbox's disk (home and /tmp together) is full, so writing failed: delete files you no longer need (os.remove, shutil.rmtree) and run again]"},
		{"disk full but fine", sandbox.ExecResult{Ending: sandbox.EndExited, DiskFull: true, Stdout: "ok\n"}, "[sb_1] exit code 0\nok"},
		{"segfault", sandbox.ExecResult{ExitCode: 139, Signal: 11, Ending: sandbox.EndSignaled},
			"[sb_1] exit code 139\n[the program was killed by signal 11 (SIGSEGV, segmentation fault)]"},
		{"stopped", sandbox.ExecResult{ExitCode: 137, Signal: 9, Ending: sandbox.EndStopped},
			"[sb_1] exit code 137\n[the sandbox was stopped while the program ran, which killed it]"},
		{"long output", sandbox.ExecResult{Stdout: "head " + long, Stderr: "!"}, "[sb_1] exit code 0\n" + long[2:] + "!"},
	} {
		if got := sandboxtool.Format("sb_1", tc.res); got != tc.want {
			t.Errorf("%s: Format = %q; want %q", tc.name, got, tc.want)
		}
	}
}
