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

// A sandbox made before home and /tmp moved under the disk directory keeps
// its files and goes on working.
func TestOlderLayoutMovesIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the layouts differ only as root")
	}
	root := t.TempDir()
	b := newBackend(t, local.WithRoot(root), local.WithoutDiskImages())
	ctx := context.Background()
	sb, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Delete(ctx)
	if err := sb.WriteFile(ctx, "/home/user/kept.txt", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	// Lay it out as an older version did: home and tmp beside sandbox.json.
	dir := filepath.Join(root, sb.ID())
	for _, d := range []string{"home", "tmp"} {
		if err := os.Rename(filepath.Join(dir, "disk", d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "disk")); err != nil {
		t.Fatal(err)
	}
	again, err := newBackend(t, local.WithRoot(root), local.WithoutDiskImages()).Get(ctx, sb.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := again.Exec(ctx, "cat kept.txt && echo more > main.py && cat main.py", sandbox.ExecOptions{})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "kept") || !strings.Contains(res.Stdout, "more") {
		t.Fatalf("exec after the move: %+v %v", res, err)
	}
}
