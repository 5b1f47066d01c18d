package sandboxtool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
)

// ToolName is the name the model calls the tool by.
const ToolName = "run_python"

const toolDescription = "Runs a whole Python 3 program in a sandbox that belongs to this conversation and returns " +
	"its exit status followed by what it printed. Files the program writes and packages it installs are still " +
	"there in later calls of the same conversation."

// RunPythonArgs are the tool's arguments: the one thing the model sends.
type RunPythonArgs struct {
	Code string `json:"code" jsonschema:"description=The complete Python 3 program to run; it is saved as main.py in the sandbox's home directory and run with python3 main.py."`
}

// RunPython returns the run_python tool. Each call takes the thread id from the run config
// (graph.ConfigFrom: a ToolNode passes the graph's; call it directly with a ctx from graph.ContextWithConfig), gets
// the thread's sandbox from the Registry, writes code to main.py in the sandbox's home and runs
// `python3 main.py` under the run timeout. It answers
//
//	[<sandbox id>] exit code N      or      [<sandbox id>] timed out
//
// then a newline and the last OutputLimit characters of stdout followed by stderr, the whole trimmed of
// surrounding white space; when the sandbox's memory or disk ran out, or something other than the program
// ended it, a last line in brackets says so and what to do. A program that fails is an answer, not an error. A call without a thread id, or
// whose sandbox cannot be had, returns an error, which a ToolNode hands back to the model as an error tool
// message. Calls on one thread run one at a time, since they share main.py. A sandbox found stopped (its TTL passed) is resumed, and one deleted behind the Registry's back is
// replaced, once per call.
func (r *Registry) RunPython() prebuilt.Tool {
	return prebuilt.MustTool(ToolName, toolDescription, func(ctx context.Context, a RunPythonArgs) (string, error) {
		return r.Run(ctx, a.Code)
	})
}

// Run is the body of the run_python tool: it runs code in the sandbox of ctx's thread and returns the tool's
// answer.
func (r *Registry) Run(ctx context.Context, code string) (string, error) {
	threadID := graph.ThreadIDFrom(ctx)
	if threadID == "" {
		return "", fmt.Errorf("%w: %s runs code in the thread's own sandbox, so it needs the run's thread id: "+
			"invoke the graph with graph.WithThread(id), or call the tool with a ctx from graph.ContextWithConfig", graph.ErrNoThread, ToolName)
	}
	timeout, err := r.runTimeout()
	if err != nil {
		return "", err
	}
	var res sandbox.ExecResult
	var sb sandbox.Sandbox
	for attempt := 0; ; attempt++ {
		var e *entry
		e, err = r.entry(ctx, threadID)
		if err != nil {
			return "", err
		}
		sb = e.sb
		res, err = e.runMain(ctx, code, timeout)
		if err == nil || attempt > 0 {
			break
		}
		switch {
		case errors.Is(err, sandbox.ErrStopped):
			if rerr := sb.Resume(ctx); rerr != nil {
				return "", fmt.Errorf("sandboxtool: resume stopped sandbox %s of thread %q: %w", sb.ID(), threadID, rerr)
			}
			continue
		case errors.Is(err, sandbox.ErrNotFound):
			r.forget(threadID, sb)
			continue
		}
		break
	}
	if err == nil && ctx.Err() != nil {
		// A backend may report a command killed by cancellation as a result; it is not the program's answer.
		err = context.Cause(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("sandboxtool: run main.py in sandbox %s of thread %q: %w", sb.ID(), threadID, err)
	}
	return Format(sb.ID(), res), nil
}

// runMain writes code to main.py and runs it. Calls on one thread take turns, or one call's program could
// overwrite main.py before the other's python3 reads it.
func (e *entry) runMain(ctx context.Context, code string, timeout time.Duration) (sandbox.ExecResult, error) {
	select {
	case e.turn <- struct{}{}:
		defer func() { <-e.turn }()
	case <-ctx.Done():
		return sandbox.ExecResult{}, context.Cause(ctx)
	}
	if err := e.sb.WriteFile(ctx, "main.py", []byte(code)); err != nil {
		return sandbox.ExecResult{}, err
	}
	return e.sb.Exec(ctx, "python3 main.py", sandbox.ExecOptions{Timeout: timeout})
}

// Format renders a run as the tool answers it: "[id] exit code N" or "[id] timed out", a newline, the
// last OutputLimit characters of stdout+stderr, and, when something other than the program ended it or
// the sandbox's memory or disk ran out, a last line saying so and what to do, all trimmed.
func Format(sandboxID string, res sandbox.ExecResult) string {
	status := fmt.Sprintf("exit code %d", res.ExitCode)
	if res.TimedOut {
		status = "timed out"
	}
	out := tail(res.Stdout+res.Stderr, OutputLimit)
	if why := endingNote(res); why != "" {
		if out = strings.TrimRight(out, " \t\r\n"); out != "" {
			out += "\n"
		}
		out += why
	}
	return strings.TrimSpace(fmt.Sprintf("[%s] %s\n%s", sandboxID, status, out))
}

// endingNote says, in words the model can act on, why a program died when the exit code alone does not.
func endingNote(res sandbox.ExecResult) string {
	switch {
	case res.Ending == sandbox.EndOOM || (res.OOMKilled && res.ExitCode != 0):
		return "[the sandbox ran out of memory and the kernel killed the program: process the data in smaller " +
			"pieces or free memory (del large objects) and run again]"
	case res.Ending == sandbox.EndDisk || (res.DiskFull && res.ExitCode != 0) || res.Signal == sigXFSZ:
		return "[the sandbox's disk (home and /tmp together) is full, so writing failed: delete files you no " +
			"longer need (os.remove, shutil.rmtree) and run again]"
	case res.Ending == sandbox.EndStopped:
		return "[the sandbox was stopped while the program ran, which killed it]"
	case res.Ending == sandbox.EndDeleted:
		return "[the sandbox was deleted while the program ran, which killed it]"
	case res.Ending == sandbox.EndSignaled && res.Signal > 0:
		if name := signalNames[res.Signal]; name != "" {
			return fmt.Sprintf("[the program was killed by signal %d (%s)]", res.Signal, name)
		}
		return fmt.Sprintf("[the program was killed by signal %d]", res.Signal)
	}
	return ""
}

// sigXFSZ is Linux's "file size limit exceeded" signal, which a write past the disk space left raises.
const sigXFSZ = 25

// signalNames are Linux's numbers of the signals a crashing program dies of.
var signalNames = map[int]string{4: "SIGILL, illegal instruction", 6: "SIGABRT, aborted", 7: "SIGBUS, bus error",
	8: "SIGFPE, arithmetic error", 9: "SIGKILL", 11: "SIGSEGV, segmentation fault", 15: "SIGTERM",
	24: "SIGXCPU, CPU time limit exceeded"}

// tail returns the last n characters of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
