package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

func cli(t *testing.T, root, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := run(context.Background(), append([]string{"-root", root}, args...), strings.NewReader(stdin), &out, &errOut)
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return code, out.String(), errOut.String()
}

func TestCLI(t *testing.T) {
	root := t.TempDir()
	code, id, stderr := cli(t, root, "", "create", "-name", "cli", "-size", "small", "-env", "GREETING=hello")
	id = strings.TrimSpace(id)
	if code != 0 || !strings.HasPrefix(id, "sb_") {
		t.Fatalf("create: %d %q %s", code, id, stderr)
	}
	if code, _, stderr := cli(t, root, "print('from stdin')\n", "put", id, "main.py"); code != 0 {
		t.Fatalf("put: %d %s", code, stderr)
	}
	if code, out, _ := cli(t, root, "", "exec", id, "python3 main.py; echo $GREETING; exit 5"); code != 5 || out != "from stdin\nhello\n" {
		t.Errorf("exec: code %d, out %q", code, out)
	}
	if code, _, _ := cli(t, root, "", "exec", "-timeout", "1s", id, "sleep 30"); code != 124 {
		t.Errorf("exec past its timeout: code %d, want 124", code)
	}
	if code, out, _ := cli(t, root, "", "cat", id, "main.py"); code != 0 || out != "print('from stdin')\n" {
		t.Errorf("cat: %d %q", code, out)
	}
	if code, out, _ := cli(t, root, "", "ls", id); code != 0 || !strings.Contains(out, "main.py") {
		t.Errorf("ls: %d %q", code, out)
	}
	if code, out, _ := cli(t, root, "", "list", "-state", "running"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "cli") {
		t.Errorf("list: %d %q", code, out)
	}
	if code, out, _ := cli(t, root, "", "inspect", id); code != 0 || !strings.Contains(out, `"state": "running"`) {
		t.Errorf("inspect: %d %q", code, out)
	}
	if code, _, _ := cli(t, root, "", "stop", id); code != 0 {
		t.Errorf("stop: %d", code)
	}
	if code, _, stderr := cli(t, root, "", "exec", id, "true"); code == 0 || !strings.Contains(stderr, "stopped") {
		t.Errorf("exec on a stopped sandbox: %d %q", code, stderr)
	}
	if code, _, _ := cli(t, root, "", "resume", id); code != 0 {
		t.Errorf("resume: %d", code)
	}
	if code, _, _ := cli(t, root, "", "rm", id, "main.py"); code != 0 {
		t.Errorf("rm: %d", code)
	}

	// gc stops what expired; gc -delete removes it.
	code, old, _ := cli(t, root, "", "create", "-ttl", "1ms")
	old = strings.TrimSpace(old)
	if code != 0 {
		t.Fatal("create -ttl 1ms failed")
	}
	if code, out, _ := cli(t, root, "", "gc"); code != 0 || !strings.Contains(out, "stopped "+old) {
		t.Errorf("gc: %d %q", code, out)
	}
	if code, out, _ := cli(t, root, "", "gc", "-delete"); code != 0 || !strings.Contains(out, "deleted "+old) {
		t.Errorf("gc -delete: %d %q", code, out)
	}
	if code, _, _ := cli(t, root, "", "delete", id); code != 0 {
		t.Errorf("delete: %d", code)
	}
	if code, out, _ := cli(t, root, "", "list"); code != 0 || strings.Contains(out, "sb_") {
		t.Errorf("list after delete: %d %q", code, out)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("root still holds %v", entries)
	}
}

// With -backend sandboxer the CLI manages the sandboxes of an API server: here agentgraph-sandboxd on loopback.
func TestRemoteBackend(t *testing.T) {
	lb, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	keys := &sandboxd.Keys{}
	secret, _, _ := keys.Add("cli", sandboxd.Limits{})
	srv, err := sandboxd.New(lb, sandboxd.WithKeys(keys), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("SANDBOXER_API_KEY", secret)
	t.Setenv("SANDBOXER_API_URL", hs.URL+sandboxd.Prefix)
	t.Setenv("SANDBOXER_ORG", "")
	remote := func(stdin string, args ...string) (int, string, string) {
		return cli(t, t.TempDir(), stdin, append([]string{"-backend", "sandboxer"}, args...)...)
	}
	code, id, stderr := remote("", "create", "-name", "remote", "-size", "small")
	id = strings.TrimSpace(id)
	if code != 0 || !strings.HasPrefix(id, "sb_") {
		t.Fatalf("create: %d %q %s", code, id, stderr)
	}
	if code, out, stderr := remote("", "list"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "remote") {
		t.Errorf("list: %d %q %s", code, out, stderr)
	}
	if code, out, _ := remote("", "exec", id, "echo hi"); code != 0 || out != "hi\n" {
		t.Errorf("exec: %d %q", code, out)
	}
	if code, out, _ := remote("", "inspect", id); code != 0 || !strings.Contains(out, `"state": "running"`) {
		t.Errorf("inspect: %d %q", code, out)
	}
	if code, _, stderr := remote("", "stop", id); code != 0 {
		t.Errorf("stop: %d %s", code, stderr)
	}
	if code, out, _ := remote("", "list", "-state", "stopped"); code != 0 || !strings.Contains(out, id) {
		t.Errorf("list stopped: %d %q", code, out)
	}
	if code, _, stderr := remote("", "gc"); code != 2 || !strings.Contains(stderr, "local backend") {
		t.Errorf("gc: %d %s", code, stderr)
	}
	if code, _, stderr := remote("", "delete", id); code != 0 {
		t.Errorf("delete: %d %s", code, stderr)
	}
	if infos, _ := lb.List(context.Background(), sandbox.Filter{}); len(infos) != 0 {
		t.Errorf("after delete the server holds %v", infos)
	}
}
