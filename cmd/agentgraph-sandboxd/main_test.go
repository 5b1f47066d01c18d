package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

// syncBuffer is written by the server goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestKeysCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	var out, errOut bytes.Buffer
	if code, err := run(context.Background(), []string{"keys", "add", "-keys", file, "-name", "ci", "-max-sandboxes", "2"}, &out, &errOut); code != 0 || err != nil {
		t.Fatalf("keys add: %d %v", code, err)
	}
	secret := strings.TrimSpace(out.String())
	if !regexp.MustCompile(`^sbx_live_[0-9a-f]{40}$`).MatchString(secret) {
		t.Fatalf("keys add printed %q", secret)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), secret) {
		t.Error("the key file holds the secret")
	}
	out.Reset()
	run(context.Background(), []string{"keys", "list", "-keys", file}, &out, &errOut)
	if !strings.Contains(out.String(), " ci ") || strings.Contains(out.String(), secret) || !strings.Contains(out.String(), "2 ") {
		t.Errorf("keys list:\n%s", out.String())
	}
	if code, err := run(context.Background(), []string{"keys", "remove", "-keys", file, "ci"}, &out, &errOut); code != 0 || err != nil {
		t.Errorf("keys remove: %d %v", code, err)
	}
	if code, _ := run(context.Background(), []string{"serve"}, &out, &errOut); code != 2 {
		t.Errorf("serve without -keys: exit %d; want 2", code)
	}
}

// serve answers the client, and shutting it down stops no sandbox.
func TestServeAndShutdown(t *testing.T) {
	dir := t.TempDir()
	keyFile, root := filepath.Join(dir, "keys.json"), filepath.Join(dir, "sandboxes")
	var secret bytes.Buffer
	if _, err := run(context.Background(), []string{"keys", "add", "-keys", keyFile, "-name", "t"}, &secret, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, []string{"serve", "-keys", keyFile, "-root", root, "-addr", "127.0.0.1:0"}, &bytes.Buffer{}, logs)
		done <- err
	}()
	var url string
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/api/v1)`)
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no URL in the log:\n%s", logs.String())
	}
	b, err := sandboxer.New(sandboxer.WithAPIKey(strings.TrimSpace(secret.String())), sandboxer.WithBaseURL(url))
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Create(context.Background(), sandbox.CreateOptions{Name: "survivor"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Exec(context.Background(), "echo up", sandbox.ExecOptions{}); err != nil || r.Stdout != "up\n" {
		t.Fatalf("Exec = %+v, %v", r, err)
	}
	b.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	if strings.Contains(logs.String(), strings.TrimSpace(secret.String())) {
		t.Error("the server logged a key")
	}
	lb, err := local.New(local.WithRoot(root), local.WithReapInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	infos, err := lb.List(context.Background(), sandbox.Filter{Name: "survivor"})
	if err != nil || len(infos) != 1 || infos[0].State != sandbox.StateRunning {
		t.Errorf("after shutdown the backend holds %+v (%v); want the sandbox still running", infos, err)
	}
}
