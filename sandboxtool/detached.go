package sandboxtool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
)

// Names the model calls the tools for long work by.
const (
	StartToolName  = "start_python"
	StatusToolName = "command_status"
)

const startDescription = "Starts a whole Python 3 program in the background in this conversation's sandbox and " +
	"returns at once with a command id. Use it for work that may run longer than " + ToolName + "'s timeout; " +
	"then call " + StatusToolName + " with the id to see whether it has finished and what it printed so far. " +
	"Files it writes stay in the sandbox, as with " + ToolName + "."

const statusDescription = "Reports on a program started with " + StartToolName + ": running or its exit code, " +
	"followed by the last part of what it has printed so far."

// StartPythonArgs are start_python's arguments.
type StartPythonArgs struct {
	Code string `json:"code" jsonschema:"description=The complete Python 3 program to run in the background; it is saved under a name of its own in the sandbox's home directory, so later calls do not overwrite it."`
}

// CommandStatusArgs are command_status's arguments.
type CommandStatusArgs struct {
	CommandID string `json:"command_id" jsonschema:"description=The command id start_python answered with."`
}

// ErrNoDetached reports a backend whose sandboxes cannot run detached commands (they do not implement
// sandbox.Starter).
var ErrNoDetached = errors.New("sandboxtool: this sandbox backend cannot run programs in the background " +
	"(its sandboxes do not implement sandbox.Starter): give the model run_python alone")

// StartPython returns the start_python tool, the guide's answer to work longer than one run's timeout: it
// writes code to a file of its own in the thread's sandbox, starts `python3 <file>` detached and answers
//
//	[<sandbox id>] started <command id>
//
// and a line telling the model to call command_status. The program runs until it ends, is killed, or the
// sandbox stops (its TTL bounds it); it needs a backend whose sandboxes implement sandbox.Starter, and the
// registry and command_status of the same process, since detached commands are known to the process that
// started them.
func (r *Registry) StartPython() prebuilt.Tool {
	return prebuilt.MustTool(StartToolName, startDescription, func(ctx context.Context, a StartPythonArgs) (string, error) {
		return r.Start(ctx, a.Code)
	})
}

// CommandStatus returns the command_status tool: for a command start_python started on the same thread it
// answers
//
//	[<sandbox id>] <command id> running      or      [<sandbox id>] <command id> exit code N
//
// then a newline and the last OutputLimit characters of stdout followed by stderr so far. An id the thread's
// sandbox does not know (a typo, another thread's command, one that ended with a stopped sandbox) is an
// answer saying so, which the model can act on.
func (r *Registry) CommandStatus() prebuilt.Tool {
	return prebuilt.MustTool(StatusToolName, statusDescription, func(ctx context.Context, a CommandStatusArgs) (string, error) {
		return r.Status(ctx, a.CommandID)
	})
}

// Start is the body of start_python: it starts code detached in the sandbox of ctx's thread.
func (r *Registry) Start(ctx context.Context, code string) (string, error) {
	threadID := graph.ThreadIDFrom(ctx)
	if threadID == "" {
		return "", fmt.Errorf("%w: %s runs code in the thread's own sandbox, so it needs the run's thread id: "+
			"invoke the graph with graph.WithThread(id), or call the tool with a ctx from graph.ContextWithConfig", graph.ErrNoThread, StartToolName)
	}
	var buf [6]byte
	rand.Read(buf[:])
	file := "bg_" + hex.EncodeToString(buf[:]) + ".py"
	for attempt := 0; ; attempt++ {
		e, err := r.entry(ctx, threadID)
		if err != nil {
			return "", err
		}
		st, ok := e.sb.(sandbox.Starter)
		if !ok {
			return "", ErrNoDetached
		}
		var id string
		err = e.sb.WriteFile(ctx, file, []byte(code))
		if err == nil {
			id, err = st.Start(ctx, "python3 "+file, sandbox.ExecOptions{})
		}
		if err == nil {
			return fmt.Sprintf("[%s] started %s\nIt runs in the background: call %s with command_id %q to see "+
				"whether it has finished and what it printed.", e.sb.ID(), id, StatusToolName, id), nil
		}
		if attempt == 0 && errors.Is(err, sandbox.ErrStopped) {
			if rerr := e.sb.Resume(ctx); rerr != nil {
				return "", fmt.Errorf("sandboxtool: resume stopped sandbox %s of thread %q: %w", e.sb.ID(), threadID, rerr)
			}
			continue
		}
		if attempt == 0 && errors.Is(err, sandbox.ErrNotFound) {
			r.forget(threadID, e.sb)
			continue
		}
		return "", fmt.Errorf("sandboxtool: start %s in sandbox %s of thread %q: %w", file, e.sb.ID(), threadID, err)
	}
}

// Status is the body of command_status: it reports on a command of the sandbox of ctx's thread.
func (r *Registry) Status(ctx context.Context, commandID string) (string, error) {
	threadID := graph.ThreadIDFrom(ctx)
	if threadID == "" {
		return "", fmt.Errorf("%w: %s looks in the thread's own sandbox, so it needs the run's thread id: "+
			"invoke the graph with graph.WithThread(id), or call the tool with a ctx from graph.ContextWithConfig", graph.ErrNoThread, StatusToolName)
	}
	e, err := r.entry(ctx, threadID)
	if err != nil {
		return "", err
	}
	st, ok := e.sb.(sandbox.Starter)
	if !ok {
		return "", ErrNoDetached
	}
	commandID = strings.TrimSpace(commandID)
	s, err := st.Status(ctx, commandID)
	if errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, sandbox.ErrInvalidArgument) {
		return fmt.Sprintf("[%s] no command %q in this conversation's sandbox: use the id %s answered with "+
			"(programs started before the sandbox stopped are gone)", e.sb.ID(), commandID, StartToolName), nil
	}
	if err != nil {
		return "", fmt.Errorf("sandboxtool: status of %s in sandbox %s of thread %q: %w", commandID, e.sb.ID(), threadID, err)
	}
	return FormatStatus(e.sb.ID(), s), nil
}

// FormatStatus renders a detached command's status as command_status answers it.
func FormatStatus(sandboxID string, s sandbox.CommandStatus) string {
	state := string(s.State)
	switch s.State {
	case sandbox.CommandExited:
		state = fmt.Sprintf("exit code %d", s.ExitCode)
	case sandbox.CommandLost:
		state = "lost (the sandbox no longer knows how it ended)"
	}
	return strings.TrimSpace(fmt.Sprintf("[%s] %s %s\n%s", sandboxID, s.ID, state, tail(s.Stdout+s.Stderr, OutputLimit)))
}
