package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Run runs the suite. newBackend is called once per subtest; the suite deletes every sandbox it creates.
// Subtests run in parallel.
func Run(t *testing.T, newBackend func(t *testing.T) sandbox.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b sandbox.Backend)
	}{
		{"CreateInfo", testCreateInfo},
		{"GetList", testGetList},
		{"ExecOutput", testExecOutput},
		{"ExecPython", testExecPython},
		{"ExecEnvCwd", testExecEnvCwd},
		{"ExecTimeout", testExecTimeout},
		{"ExecInvalidTimeout", testExecInvalidTimeout},
		{"ExecCancel", testExecCancel},
		{"ExecOutputTail", testExecOutputTail},
		{"ExecConcurrent", testExecConcurrent},
		{"Files", testFiles},
		{"FilePaths", testFilePaths},
		{"FileSymlinks", testFileSymlinks},
		{"FileTooLarge", testFileTooLarge},
		{"StopResume", testStopResume},
		{"Delete", testDelete},
		{"SandboxesApart", testSandboxesApart},
		{"Download", testDownload},
		{"ListRemove", testListRemove},
		{"Detached", testDetached},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newBackend(t))
		})
	}
}

func create(t *testing.T, b sandbox.Backend, opts sandbox.CreateOptions) sandbox.Sandbox {
	t.Helper()
	s, err := b.Create(context.Background(), opts)
	if err != nil {
		t.Fatalf("Create(%+v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := s.Delete(context.Background()); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Delete(%s): %v", s.ID(), err)
		}
	})
	return s
}

func exec(t *testing.T, s sandbox.Sandbox, command string, opts sandbox.ExecOptions) sandbox.ExecResult {
	t.Helper()
	r, err := s.Exec(context.Background(), command, opts)
	if err != nil {
		t.Fatalf("Exec(%q): %v", command, err)
	}
	return r
}

func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

func testCreateInfo(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	name := uniqueName(t)
	before := time.Now().Add(-time.Second)
	s := create(t, b, sandbox.CreateOptions{Name: name, Size: sandbox.SizeSmall, TTL: 10 * time.Minute})
	if s.ID() == "" {
		t.Fatal("empty id")
	}
	in, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != s.ID() || in.Name != name || in.State != sandbox.StateRunning || in.Size != sandbox.SizeSmall {
		t.Errorf("Info = %+v, want id %s, name %s, running, small", in, s.ID(), name)
	}
	if in.CreatedAt.Before(before) || in.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt = %v, want about now", in.CreatedAt)
	}
	if d := in.ExpiresAt.Sub(in.CreatedAt); d < 9*time.Minute || d > 11*time.Minute {
		t.Errorf("ExpiresAt - CreatedAt = %v, want the 10m TTL", d)
	}
	def := create(t, b, sandbox.CreateOptions{})
	in, err = def.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.Size != sandbox.SizeDefault {
		t.Errorf("default Size = %q, want %q", in.Size, sandbox.SizeDefault)
	}
	if d := in.ExpiresAt.Sub(in.CreatedAt); d < sandbox.DefaultTTL-time.Minute || d > sandbox.DefaultTTL+time.Minute {
		t.Errorf("default TTL = %v, want %v", d, sandbox.DefaultTTL)
	}
	if _, err := b.Create(ctx, sandbox.CreateOptions{Size: "huge"}); !errors.Is(err, sandbox.ErrInvalidArgument) {
		t.Errorf("Create(size huge) error = %v, want ErrInvalidArgument", err)
	}
}

func testGetList(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	name := uniqueName(t)
	s1 := create(t, b, sandbox.CreateOptions{Name: name})
	s2 := create(t, b, sandbox.CreateOptions{Name: name})
	got, err := b.Get(ctx, s1.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != s1.ID() {
		t.Errorf("Get(%s).ID() = %s", s1.ID(), got.ID())
	}
	if _, err := b.Get(ctx, "sb_doesnotexist"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get(unknown) error = %v, want ErrNotFound", err)
	}
	if err := s2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ids := func(f sandbox.Filter) []string {
		infos, err := b.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range infos {
			if in.Name == name {
				out = append(out, in.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	want := []string{s1.ID(), s2.ID()}
	slices.Sort(want)
	if got := ids(sandbox.Filter{Name: name}); !slices.Equal(got, want) {
		t.Errorf("List(name) = %v, want %v", got, want)
	}
	if got := ids(sandbox.Filter{Name: name, State: sandbox.StateRunning}); !slices.Equal(got, []string{s1.ID()}) {
		t.Errorf("List(name, running) = %v, want [%s]", got, s1.ID())
	}
	if got := ids(sandbox.Filter{Name: name, State: sandbox.StateStopped}); !slices.Equal(got, []string{s2.ID()}) {
		t.Errorf("List(name, stopped) = %v, want [%s]", got, s2.ID())
	}
}

func testExecOutput(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	r := exec(t, s, "echo out; echo err >&2; exit 3", sandbox.ExecOptions{})
	if r.Stdout != "out\n" || r.Stderr != "err\n" || r.ExitCode != 3 || r.TimedOut {
		t.Errorf("result = %+v, want out/err/3", r)
	}
	if r.Duration <= 0 {
		t.Errorf("Duration = %v, want > 0", r.Duration)
	}
	r = exec(t, s, "pwd; whoami 2>/dev/null || id -un", sandbox.ExecOptions{})
	if !strings.HasPrefix(r.Stdout, sandbox.Home+"\n") {
		t.Errorf("pwd = %q, want %s", r.Stdout, sandbox.Home)
	}
}

func testExecPython(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	if err := s.WriteFile(ctx, "main.py", []byte("import sys\nprint(sum(range(10)), sys.version_info[0])\n")); err != nil {
		t.Fatal(err)
	}
	r := exec(t, s, "python3 main.py", sandbox.ExecOptions{})
	if r.Stdout != "45 3\n" || r.ExitCode != 0 {
		t.Errorf("python3 main.py = %+v, want 45 3", r)
	}
	r = exec(t, s, `python3 -c 'raise SystemExit("boom")'`, sandbox.ExecOptions{})
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "boom") {
		t.Errorf("failing python = %+v, want exit 1 and boom", r)
	}
}

func testExecEnvCwd(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{Env: map[string]string{"A": "sandbox", "B": "sandbox"}})
	if err := s.WriteFile(ctx, "sub/dir/f.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	r := exec(t, s, `echo "$A $B $C"; pwd; ls`, sandbox.ExecOptions{Cwd: "sub/dir", Env: map[string]string{"B": "exec", "C": "exec"}})
	if want := "sandbox exec exec\n" + sandbox.Home + "/sub/dir\nf.txt\n"; r.Stdout != want {
		t.Errorf("stdout = %q, want %q", r.Stdout, want)
	}
	if _, err := s.Exec(ctx, "pwd", sandbox.ExecOptions{Cwd: "../.."}); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Errorf("Exec(cwd ../..) error = %v, want ErrInvalidPath", err)
	}
}

func testExecTimeout(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	// The command takes a lock that its background child inherits; once everything it started is dead the
	// lock is free again. The timeout grows until the command gets as far as "locked" before it passes, so a
	// slow machine cannot fail the test, only lengthen it.
	const cmd = "exec 9>held.lock && flock 9 && (sleep 600 &) && echo locked; sleep 600"
	var r sandbox.ExecResult
	for _, timeout := range []time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 64 * time.Second} {
		start := time.Now()
		r = exec(t, s, cmd, sandbox.ExecOptions{Timeout: timeout})
		if !r.TimedOut {
			t.Fatalf("result = %+v, want timed out", r)
		}
		if el := time.Since(start); el < timeout {
			t.Errorf("a %v timeout returned after %v", timeout, el)
		}
		if r.Stdout == "locked\n" {
			break
		}
	}
	if r.Stdout != "locked\n" {
		t.Fatalf("result = %+v, want timed out after printing locked", r)
	}
	// Timed out means everything the command started is gone by now, the background sleep included.
	if r := exec(t, s, "flock -n held.lock echo free", sandbox.ExecOptions{}); r.Stdout != "free\n" {
		t.Errorf("after the timeout the lock is still held (%+v): a process the timed-out command started survived", r)
	}
}

func testExecCancel(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Exec(ctx, "sleep 60", sandbox.ExecOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec with a context that expires: error = %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("cancelled Exec returned after %v", el)
	}
	if r := exec(t, s, "echo still usable", sandbox.ExecOptions{}); r.Stdout != "still usable\n" {
		t.Errorf("after a cancelled Exec: %+v", r)
	}
}

func testExecInvalidTimeout(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 601 * time.Second} {
		if _, err := s.Exec(context.Background(), "true", sandbox.ExecOptions{Timeout: d}); !errors.Is(err, sandbox.ErrInvalidArgument) {
			t.Errorf("Exec(timeout %v) error = %v, want ErrInvalidArgument", d, err)
		}
	}
}

func testExecOutputTail(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	const n = 8 << 20
	r := exec(t, s, fmt.Sprintf(`python3 -c 'import sys; sys.stdout.write("x"*%d + "END\n"); sys.stderr.write("e"*%d + "END\n")'`, n, n), sandbox.ExecOptions{})
	if r.ExitCode != 0 {
		t.Fatalf("result = exit %d, stderr tail %q", r.ExitCode, tail(r.Stderr))
	}
	for _, o := range []struct {
		name      string
		out       string
		truncated bool
	}{{"stdout", r.Stdout, r.StdoutTruncated}, {"stderr", r.Stderr, r.StderrTruncated}} {
		if !o.truncated || len(o.out) >= n || !strings.HasSuffix(o.out, "END\n") {
			t.Errorf("%s: truncated=%v len=%d suffix %q; want the tail of 8 MiB, truncated", o.name, o.truncated, len(o.out), tail(o.out))
		}
	}
}

func tail(s string) string {
	if len(s) > 200 {
		return s[len(s)-200:]
	}
	return s
}

func testExecConcurrent(t *testing.T, b sandbox.Backend) {
	s := create(t, b, sandbox.CreateOptions{})
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			r, err := s.Exec(context.Background(), fmt.Sprintf("echo %d", i), sandbox.ExecOptions{})
			if err == nil && r.Stdout != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("exec %d: stdout %q", i, r.Stdout)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func testFiles(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	data := []byte("hello\x00\xffworld\n")
	for _, p := range []string{"a.bin", "deep/er/b.bin", sandbox.Home + "/c.bin", sandbox.Tmp + "/d.bin"} {
		if err := s.WriteFile(ctx, p, data); err != nil {
			t.Fatalf("WriteFile(%s): %v", p, err)
		}
		got, err := s.ReadFile(ctx, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", p, got, err, data)
		}
	}
	if err := s.WriteFile(ctx, "a.bin", []byte("short")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadFile(ctx, "a.bin"); string(got) != "short" {
		t.Errorf("overwritten file = %q, want short", got)
	}
	r := exec(t, s, "cat deep/er/b.bin /tmp/d.bin | wc -c; echo made-inside > inside.txt", sandbox.ExecOptions{})
	if strings.TrimSpace(r.Stdout) != fmt.Sprint(2*len(data)) {
		t.Errorf("files seen inside: wc -c = %q, want %d", r.Stdout, 2*len(data))
	}
	if got, err := s.ReadFile(ctx, "inside.txt"); err != nil || string(got) != "made-inside\n" {
		t.Errorf("ReadFile(inside.txt) = %q, %v", got, err)
	}
	if _, err := s.ReadFile(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v, want fs.ErrNotExist", err)
	}
}

func testFilePaths(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	for _, p := range []string{"../x", "/etc/passwd", sandbox.Home + "/../x", "a/../../x", "/", "/tmpx/y", ""} {
		if err := s.WriteFile(ctx, p, []byte("x")); !errors.Is(err, sandbox.ErrInvalidPath) {
			t.Errorf("WriteFile(%q) error = %v, want ErrInvalidPath", p, err)
		}
		if _, err := s.ReadFile(ctx, p); !errors.Is(err, sandbox.ErrInvalidPath) {
			t.Errorf("ReadFile(%q) error = %v, want ErrInvalidPath", p, err)
		}
	}
}

func testFileSymlinks(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	r := exec(t, s, "ln -s /etc/passwd link && ln -s / rootlink && mkdir d && ln -s ../.. d/up && echo ok", sandbox.ExecOptions{})
	if r.Stdout != "ok\n" {
		t.Fatalf("planting symlinks: %+v", r)
	}
	for _, p := range []string{"link", "rootlink/etc/passwd", "d/up/x"} {
		if _, err := s.ReadFile(ctx, p); !errors.Is(err, sandbox.ErrInvalidPath) {
			t.Errorf("ReadFile(%s) error = %v, want ErrInvalidPath", p, err)
		}
		if err := s.WriteFile(ctx, p, []byte("pwned")); !errors.Is(err, sandbox.ErrInvalidPath) {
			t.Errorf("WriteFile(%s) error = %v, want ErrInvalidPath", p, err)
		}
	}
	if err := s.WriteFile(ctx, "rootlink/newdir/x", []byte("pwned")); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Errorf("WriteFile(rootlink/newdir/x) error = %v, want ErrInvalidPath", err)
	}
}

func testFileTooLarge(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	exec(t, s, fmt.Sprintf("head -c %d /dev/zero > big", sandbox.MaxReadFileSize+1), sandbox.ExecOptions{})
	if _, err := s.ReadFile(ctx, "big"); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("ReadFile(5 MiB + 1) error = %v, want ErrTooLarge", err)
	}
}

func testStopResume(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{TTL: time.Hour})
	if err := s.WriteFile(ctx, "keep.txt", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := s.Info(ctx); in.State != sandbox.StateStopped {
		t.Errorf("state after Stop = %q", in.State)
	}
	if _, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrStopped) {
		t.Errorf("Exec on stopped sandbox error = %v, want ErrStopped", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	in, _ := s.Info(ctx)
	if in.State != sandbox.StateRunning {
		t.Errorf("state after Resume = %q", in.State)
	}
	if r := exec(t, s, "cat keep.txt", sandbox.ExecOptions{}); r.Stdout != "kept" {
		t.Errorf("file after Stop/Resume = %q, want kept", r.Stdout)
	}
}

func testDelete(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	exec(t, s, "echo x > f", sandbox.ExecOptions{})
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, s.ID()); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get after Delete error = %v, want ErrNotFound", err)
	}
	if _, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Exec after Delete error = %v, want ErrNotFound", err)
	}
	if _, err := s.ReadFile(ctx, "f"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("ReadFile after Delete error = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("second Delete error = %v, want ErrNotFound", err)
	}
}

func testSandboxesApart(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	a := create(t, b, sandbox.CreateOptions{})
	c := create(t, b, sandbox.CreateOptions{})
	if err := a.WriteFile(ctx, "secret.txt", []byte("a's secret")); err != nil {
		t.Fatal(err)
	}
	exec(t, a, "echo tmp-secret > /tmp/secret.txt", sandbox.ExecOptions{})
	r := exec(t, c, "cat secret.txt /tmp/secret.txt 2>&1; ls -a ~ /tmp", sandbox.ExecOptions{})
	if strings.Contains(r.Stdout, "secret") && strings.Contains(r.Stdout, "a's") || strings.Contains(r.Stdout, "tmp-secret") {
		t.Errorf("sandbox %s read %s's files: %q", c.ID(), a.ID(), r.Stdout)
	}
	if _, err := c.ReadFile(ctx, "secret.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of the other sandbox's file: error = %v, want fs.ErrNotExist", err)
	}
}

func testDownload(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	d, ok := s.(sandbox.Downloader)
	if !ok {
		t.Skip("no Downloader")
	}
	exec(t, s, "head -c 6000000 /dev/urandom > big && sha256sum big | cut -c1-64 > big.sum", sandbox.ExecOptions{})
	var buf bytes.Buffer
	n, err := d.Download(ctx, "big", &buf)
	if err != nil || n != 6000000 || buf.Len() != 6000000 {
		t.Fatalf("Download = %d, %v (buffer %d)", n, err, buf.Len())
	}
	if err := s.WriteFile(ctx, "copy", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := exec(t, s, "sha256sum copy | cut -c1-64 | cmp - big.sum && echo same", sandbox.ExecOptions{})
	if r.Stdout != "same\n" {
		t.Errorf("downloaded bytes differ: %+v", r)
	}
	if _, err := d.Download(ctx, "../x", &buf); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Errorf("Download(../x) error = %v, want ErrInvalidPath", err)
	}
}

func testListRemove(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	l, ok := s.(sandbox.FileLister)
	rm, ok2 := s.(sandbox.FileRemover)
	if !ok || !ok2 {
		t.Skip("no FileLister or FileRemover")
	}
	exec(t, s, "mkdir -p d/e && echo 12345 > d/f && echo x > d/e/g && ln -s /etc d/l", sandbox.ExecOptions{})
	files, err := l.ListFiles(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sandbox.FileInfo{}
	for _, f := range files {
		got[f.Name] = f
	}
	if len(got) != 3 || !got["e"].IsDir || got["f"].Size != 6 || got["f"].Path != sandbox.Home+"/d/f" || got["l"].IsDir {
		t.Errorf("ListFiles(d) = %+v", files)
	}
	if _, err := l.ListFiles(ctx, "d/l"); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Errorf("ListFiles through a symlink: error = %v, want ErrInvalidPath", err)
	}
	if err := rm.RemoveFile(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if r := exec(t, s, "ls -A; ls /etc >/dev/null && echo etc-intact", sandbox.ExecOptions{}); r.Stdout != "etc-intact\n" {
		t.Errorf("after RemoveFile(d): %q", r.Stdout)
	}
	if err := rm.RemoveFile(ctx, "."); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Errorf("RemoveFile(home) error = %v, want ErrInvalidPath", err)
	}
}

func testDetached(t *testing.T, b sandbox.Backend) {
	ctx := context.Background()
	s := create(t, b, sandbox.CreateOptions{})
	st, ok := s.(sandbox.Starter)
	if !ok {
		t.Skip("no Starter")
	}
	quick, err := st.Start(ctx, "echo done; exit 7", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := waitExited(t, st, quick)
	if status.ExitCode != 7 || status.Stdout != "done\n" {
		t.Errorf("quick command status = %+v, want exit 7 and done", status)
	}
	long, err := st.Start(ctx, "echo up; sleep 300", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, err = st.Status(ctx, long)
		if err != nil {
			t.Fatal(err)
		}
		if status.Stdout == "up\n" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status.State != sandbox.CommandRunning || status.Stdout != "up\n" {
		t.Errorf("long command status = %+v, want running with output up", status)
	}
	if err := st.Kill(ctx, long); err != nil {
		t.Fatal(err)
	}
	if status = waitExited(t, st, long); status.State != sandbox.CommandExited {
		t.Errorf("after Kill: %+v", status)
	}
	again, err := st.Start(ctx, "sleep 300", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if status, err := st.Status(ctx, again); err == nil && status.State == sandbox.CommandRunning {
		t.Errorf("a detached command runs after Stop: %+v", status)
	}
	if _, err := st.Status(ctx, "cmd_unknown"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Status(unknown) error = %v, want ErrNotFound", err)
	}
}

func waitExited(t *testing.T, st sandbox.Starter, id string) sandbox.CommandStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, err := st.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if status.State != sandbox.CommandRunning || time.Now().After(deadline) {
			return status
		}
		time.Sleep(10 * time.Millisecond)
	}
}
