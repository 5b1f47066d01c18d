//go:build linux

package local_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
)

func TestCreateNames(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	for _, name := range []string{"a/b", "..", "x..y", "nul\x00byte", strings.Repeat("n", 129), "bell\a", "\xff"} {
		if s, err := b.Create(ctx, sandbox.CreateOptions{Name: name}); !errors.Is(err, sandbox.ErrInvalidArgument) {
			t.Errorf("Create(name %q) error = %v, want ErrInvalidArgument", name, err)
			if s != nil {
				s.Delete(ctx)
			}
		}
	}
	for _, name := range []string{"", "thread-42", "Ünïcode name", strings.Repeat("n", 128), "a.b"} {
		s, err := b.Create(ctx, sandbox.CreateOptions{Name: name})
		if err != nil {
			t.Errorf("Create(name %q): %v", name, err)
			continue
		}
		s.Delete(ctx)
	}
}

func TestExecInvalidArguments(t *testing.T) {
	ctx := context.Background()
	s, err := newBackend(t).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	if err := s.WriteFile(ctx, "file.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, "ln -s /etc link", sandbox.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		opts    sandbox.ExecOptions
		want    error
	}{
		{"pwd", sandbox.ExecOptions{Cwd: "missing"}, sandbox.ErrInvalidArgument},
		{"pwd", sandbox.ExecOptions{Cwd: "file.txt"}, sandbox.ErrInvalidArgument},
		{"pwd", sandbox.ExecOptions{Cwd: "link"}, sandbox.ErrInvalidPath},
		{"echo a\x00b", sandbox.ExecOptions{}, sandbox.ErrInvalidArgument},
		{"pwd", sandbox.ExecOptions{Env: map[string]string{"A": "x\x00y"}}, sandbox.ErrInvalidArgument},
	} {
		if _, err := s.Exec(ctx, c.command, c.opts); !errors.Is(err, c.want) {
			t.Errorf("Exec(%q, %+v) error = %v, want %v", c.command, c.opts, err, c.want)
		}
	}
	if r, err := s.Exec(ctx, "pwd", sandbox.ExecOptions{Cwd: "/tmp"}); err != nil || r.Stdout != "/tmp\n" {
		t.Errorf("Exec(cwd /tmp) = %+v, %v", r, err)
	}
}
