package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// serverGroup is the -gobench group that runs the Agent Server comparison.
const serverGroup = "server"

// ServerResult is the Agent Server comparison (bench/agentserver):
// agentgraph's server beside LangGraph's JS server.
type ServerResult struct {
	Command string          `json:"command"` // reproduces the figures, from bench/
	Figures json.RawMessage `json:"figures,omitempty"`
	Table   string          `json:"table,omitempty"` // as agentserver printed it
	Skipped string          `json:"skipped,omitempty"`
}

// runServerBench runs `go run ./agentserver` as a child process, first
// installing LangGraph's server (pinned in agentserver/package-lock.json)
// when it is missing, and reads the figures it writes.
func runServerBench(ctx context.Context, quick bool) (ServerResult, error) {
	args := []string{"run", "./agentserver"}
	if quick {
		args = append(args, "-trials", "1", "-first-events", "20")
	}
	res := ServerResult{Command: "go " + strings.Join(args, " ")}
	if _, err := os.Stat(filepath.Join("agentserver", "node_modules")); errors.Is(err, os.ErrNotExist) {
		if _, err := exec.LookPath("npm"); err != nil {
			res.Skipped = "no npm to install LangGraph's JS server with (Node 20 or newer)"
			return res, nil
		}
		progress("npm ci", "agentserver", "")
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = "agentserver"
		npm.Stdout, npm.Stderr = os.Stderr, os.Stderr
		if err := npm.Run(); err != nil {
			return res, fmt.Errorf("npm ci in agentserver: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "agentserver")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "figures.json")
	progress("agentserver", "agentgraph, langgraphjs", "")
	cmd := exec.CommandContext(ctx, "go", append(args, "-json", out)...)
	cmd.Stderr = os.Stderr
	// Its own process group, so that an interrupt reaches the program go run
	// started (which stops the servers it started) and not only go run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	table, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("go run ./agentserver: %w", err)
	}
	res.Table = string(table)
	if res.Figures, err = os.ReadFile(out); err != nil {
		return res, fmt.Errorf("go run ./agentserver wrote no figures: %w", err)
	}
	return res, nil
}

// serverMarkdown renders the comparison under the command that reproduces it.
func serverMarkdown(r *ServerResult) string {
	if r == nil {
		return ""
	}
	b := section("The Agent Server beside LangGraph's JS server", "(cd bench/agentserver && npm ci) && cd bench && "+r.Command, r.Skipped)
	if r.Skipped == "" {
		b.WriteString(r.Table)
	}
	return b.String()
}

// section starts a section of the printed report: its title, the command that reproduces it, and why it was
// skipped when it was.
func section(title, command, skipped string) *strings.Builder {
	b := &strings.Builder{}
	fmt.Fprintf(b, "\n## %s\n\n    %s\n\n", title, command)
	if skipped != "" {
		fmt.Fprintf(b, "skipped: %s\n", skipped)
	}
	return b
}
