package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

func newTestServer(t *testing.T) (*server, *local.Backend) {
	t.Helper()
	b, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := newServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return s, b
}

// names lists the names of the backend's sandboxes.
func names(t *testing.T, b sandbox.Backend) []string {
	t.Helper()
	infos, err := b.List(context.Background(), sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.Name)
	}
	return out
}

// TestTypeScriptClient drives the server over streamable HTTP with the
// official MCP TypeScript SDK, then checks that the session's sandbox was
// deleted when the session ended and the thread's when the server closed.
func TestTypeScriptClient(t *testing.T) {
	s, b := newTestServer(t)
	ts := httptest.NewServer(s.handler())
	defer ts.Close()
	runNode(t, "client.mjs", ts.URL+"/mcp")

	deadline := time.Now().Add(10 * time.Second)
	for {
		left := names(t, b)
		if len(left) == 1 && left[0] == "mcp-thread-team" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the session ended the backend holds %v, want only the thread's sandbox", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := names(t, b); len(left) != 0 {
		t.Fatalf("after close the backend holds %v", left)
	}
}

// runNode runs node jstest/script with arg and fails the test if the
// script does. Without jstest/node_modules it skips, or fails under CI.
func runNode(t *testing.T, script, arg string) {
	t.Helper()
	dir, err := filepath.Abs("jstest")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || statErr != nil {
		msg := "node or cmd/agentgraph-mcp/jstest/node_modules missing: run `npm ci --prefix cmd/agentgraph-mcp/jstest` to drive the server with @modelcontextprotocol/sdk"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script), arg)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	if testing.Verbose() {
		t.Logf("node %s:\n%s", script, out)
	}
}
