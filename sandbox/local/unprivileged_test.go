//go:build linux

package local_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnprivileged runs the conformance, hostile and cleanup tests again as uid 65534, so the path without
// cgroups or a dedicated uid range is proven on every root CI run.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: the whole suite runs that way")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	// A directory nobody may use, holding a copy of this binary (go test's build directory is 0700).
	dir, err := os.MkdirTemp("", "agentgraph-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "local.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	for _, p := range []string{dir, tmp} {
		os.MkdirAll(p, 0o755)
		os.Chown(p, 65534, 65534)
	}
	os.Chmod(dir, 0o755)
	cmd := exec.Command(bin, "-test.run=^(TestConformance|TestHostile|TestAnotherProcessSeesAndStops|TestTTLReapedPeriodically|TestNothingLeftBehind)$",
		"-test.count=1", "-test.v", "-test.short")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, failures(string(out)))
	}
	if !strings.Contains(string(out), "--- PASS: TestHostile") || strings.Contains(string(out), "--- SKIP: TestConformance") {
		t.Fatalf("as uid 65534 the suites did not run:\n%s", out)
	}
}

// failures keeps the lines that explain a failed run.
func failures(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "FAIL") || strings.Contains(l, "_test.go") || strings.Contains(l, "ESCAPED") || strings.Contains(l, "panic") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
