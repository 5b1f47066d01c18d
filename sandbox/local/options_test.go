//go:build linux

package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// run runs command in a fresh sandbox of b.
func run(t *testing.T, b *local.Backend, command string) sandbox.ExecResult {
	t.Helper()
	ctx := context.Background()
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(context.Background()) })
	r, err := s.Exec(ctx, command, sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWithPython(t *testing.T) {
	const flags = `import sys; print(sys.executable, sys.flags.isolated, sys.flags.no_site)`
	for _, tc := range []struct {
		name string
		opts []local.Option
		want string
	}{
		{"default", nil, "/usr/bin/python3 1 0"},
		{"with -S", []local.Option{local.WithPython("/usr/bin/python3", "-I", "-S")}, "/usr/bin/python3 1 1"},
	} {
		b := newBackend(t, tc.opts...)
		for _, name := range []string{"python3", "python"} {
			r := run(t, b, name+" -c '"+flags+"'")
			if got := strings.TrimSpace(r.Stdout); r.ExitCode != 0 || got != tc.want {
				t.Errorf("%s: %s prints %q (exit %d, stderr %q); want %q", tc.name, name, got, r.ExitCode, r.Stderr, tc.want)
			}
		}
	}
}

func TestWithOutputLimit(t *testing.T) {
	b := newBackend(t, local.WithOutputLimit(100))
	r := run(t, b, `head -c 1000 /dev/zero | tr '\0' o; printf END; head -c 1000 /dev/zero | tr '\0' e >&2; printf END >&2`)
	if want := strings.Repeat("o", 97) + "END"; r.Stdout != want {
		t.Errorf("stdout %q; want its last 100 bytes %q", r.Stdout, want)
	}
	if want := strings.Repeat("e", 97) + "END"; r.Stderr != want {
		t.Errorf("stderr %q; want its last 100 bytes %q", r.Stderr, want)
	}
}

func TestRoot(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, filepath.Join(dir, "sandboxes"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, local.WithRoot(rel))
	if got, want := b.Root(), filepath.Join(dir, "sandboxes"); got != want {
		t.Errorf("Root() = %q with WithRoot(%q); want the absolute %q", got, rel, want)
	}
	if fi, err := os.Stat(b.Root()); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o711 {
		t.Errorf("root directory: %v, %v; want a directory with mode 0711", fi, err)
	}
}

func TestDefaultRoot(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	want := filepath.Join(state, "agentgraph", "sandboxes")
	if os.Geteuid() == 0 {
		want = "/var/lib/agentgraph/sandboxes"
	}
	if got := local.DefaultRoot(); got != want {
		t.Errorf("DefaultRoot() = %q; want %q", got, want)
	}
}
