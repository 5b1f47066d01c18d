//go:build linux

package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"golang.org/x/sys/unix"
)

// loopDevicesUnder lists the loop devices whose backing file lies under dir.
func loopDevicesUnder(dir string) []string {
	var out []string
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.HasPrefix(string(data), dir+"/") {
			out = append(out, f)
		}
	}
	return out
}

func mountsUnder(t testing.TB, dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// TestDiskQuotaHeldByKernel fills a sandbox's disk from inside, with one file and with many, and checks the
// file system stops it at the quota, that a full sandbox still takes a new main.py, runs commands and frees
// space, and that nothing of the disk is left after Delete.
func TestDiskQuotaHeldByKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("disk images need root")
	}
	ctx := context.Background()
	const quota = 48 << 20
	root := t.TempDir()
	b := newBackend(t, local.WithRoot(root), local.WithSizeLimits(sandbox.SizeSmall,
		sandbox.Limits{CPUs: 1, MemoryBytes: 256 << 20, DiskBytes: quota, Pids: 64}))
	s, err := b.Create(ctx, sandbox.CreateOptions{Size: sandbox.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(root, s.ID(), "disk", "home"), &st); err != nil {
		t.Fatal(err)
	}
	if avail := int64(st.Bavail) * int64(st.Bsize); avail < quota-(1<<20) || avail > quota {
		t.Errorf("a new sandbox has %d bytes available, want about %d", avail, quota)
	}

	fill := []struct{ name, program string }{
		{"one file", `
with open("big", "wb") as f:
    while True:
        f.write(b"\1" * (1 << 20))
`},
		{"many files", `
import os
os.makedirs("/tmp/many", exist_ok=True)
i = 0
while True:
    with open(f"/tmp/many/{i}", "wb") as f:
        f.write(b"\1" * 65536)
    i += 1
`},
	}
	for _, f := range fill {
		if err := s.WriteFile(ctx, "fill.py", []byte(f.program)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Exec(ctx, "python3 fill.py", sandbox.ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != 1 || !strings.Contains(r.Stderr, "No space left on device") || r.Ending != sandbox.EndExited || !r.DiskFull {
			t.Errorf("%s: %+v, want exit 1 with ENOSPC, ending exited, disk full", f.name, r)
		}
		du, err := s.Exec(ctx, "du -sk ~ /tmp | awk '{s+=$1} END {print s}'", sandbox.ExecOptions{})
		if err != nil {
			t.Fatalf("%s: a full sandbox does not run commands: %v", f.name, err)
		}
		var kib int64
		if _, err := fmt.Sscan(du.Stdout, &kib); err != nil || kib<<10 > quota+(2<<20) {
			t.Errorf("%s: home and /tmp hold %q KiB, quota %d KiB", f.name, du.Stdout, quota>>10)
		}
		// Full: the host can still replace main.py, and the code runs and frees space.
		if err := s.WriteFile(ctx, "main.py", []byte("import os, shutil\nshutil.rmtree('/tmp/many', ignore_errors=True)\n"+
			"if os.path.exists('big'): os.remove('big')\nprint('freed')\n")); err != nil {
			t.Fatalf("%s: writing main.py into a full sandbox: %v", f.name, err)
		}
		if err := s.WriteFile(ctx, "huge", make([]byte, 8<<20)); !errors.Is(err, sandbox.ErrQuota) {
			t.Errorf("%s: WriteFile of 8 MiB into a full sandbox = %v, want ErrQuota", f.name, err)
		}
		r, err = s.Exec(ctx, "python3 main.py", sandbox.ExecOptions{})
		if err != nil || r.Stdout != "freed\n" {
			t.Fatalf("%s: cleaning up = %+v, %v", f.name, r, err)
		}
		if r.DiskFull {
			t.Errorf("%s: still full after cleaning up", f.name)
		}
	}

	// The mount table inside shows the sandbox's own file system, not where it lives on the host.
	r, err := s.Exec(ctx, "cat /proc/self/mountinfo", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Stdout, root) || strings.Contains(r.Stdout, s.ID()) {
		t.Errorf("mountinfo shows the host path:\n%s", r.Stdout)
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("mounted after Stop: %v", m)
	}
	if _, err := s.ReadFile(ctx, "main.py"); err != nil { // a stopped sandbox's files stay readable
		t.Fatal(err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("mounted after Delete: %v", m)
	}
	if l := loopDevicesUnder(root); len(l) != 0 {
		t.Errorf("loop devices after Delete: %v", l)
	}
}
