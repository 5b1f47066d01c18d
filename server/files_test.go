package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// dirFiles keeps each thread's files in a directory of its own under root,
// reached through os.Root so that no name leaves it.
type dirFiles struct{ root string }

func (d dirFiles) open(threadID string) (*os.Root, error) {
	if !fs.ValidPath(threadID) || strings.Contains(threadID, "/") {
		return nil, fs.ErrNotExist
	}
	return os.OpenRoot(filepath.Join(d.root, threadID))
}

func (d dirFiles) ReadDir(ctx context.Context, threadID, dir string) ([]fs.FileInfo, error) {
	r, err := d.open(threadID)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := fs.ReadDir(r.FS(), dir)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			out = append(out, fi)
		}
	}
	return out, nil
}

func (d dirFiles) CopyFile(ctx context.Context, threadID, name string, w io.Writer) (int64, error) {
	r, err := d.open(threadID)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	f, err := r.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, errors.Join(fs.ErrInvalid, err)
	}
	return io.Copy(w, f)
}

func TestThreadFiles(t *testing.T) {
	root := t.TempDir()
	for name, data := range map[string]string{"t/a.txt": "alpha", "t/img/dot.svg": "<svg/>", "t/.venv/lib/x.py": "x", "outside.txt": "secret"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saver := checkpoint.NewMemory()
	s, err := New(WithGraph("echo", echoGraph(t, saver)), WithSaver(saver), WithThreadFiles(dirFiles{root}))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer func() {
		ts.Close()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()

	code, body, _ := call(t, ts, "GET", "/threads/t/files", "")
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	var list []fileEntry
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range list {
		paths = append(paths, f.Path)
	}
	if got, want := strings.Join(paths, " "), ".venv a.txt img img/dot.svg"; got != want {
		t.Errorf("listed %q, want %q (sorted, hidden directories not entered)", got, want)
	}
	if list[1].Size != 5 || list[1].IsDir || !list[2].IsDir || list[1].Modified.IsZero() {
		t.Errorf("entries: %+v", list)
	}

	for _, c := range []struct {
		thread, path string
		status       int
		body, ctype  string
	}{
		{"t", "a.txt", 200, "alpha", "text/plain; charset=utf-8"},
		{"t", "/img/dot.svg", 200, "<svg/>", "image/svg+xml"},
		{"t", "nope.txt", 404, "", ""},
		{"u", "a.txt", 404, "", ""},
		{"t", "img", 400, "", ""},
		{"t", "../outside.txt", 400, "", ""},
		{"t", "img/../../outside.txt", 400, "", ""},
		{"t", "", 400, "", ""},
	} {
		code, body, h := call(t, ts, "GET", "/threads/"+c.thread+"/files/content?path="+url.QueryEscape(c.path), "")
		if code != c.status || (c.status == 200 && (body != c.body || h.Get("Content-Type") != c.ctype)) {
			t.Errorf("thread %s path %q: %d %q %q, want %d %q %q", c.thread, c.path, code, h.Get("Content-Type"), body, c.status, c.ctype, c.body)
		}
		if c.status == 200 && h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", c.path)
		}
	}
	if code, body, _ := call(t, ts, "GET", "/threads/u/files", ""); code != 200 || body != "[]" {
		t.Errorf("list of a thread without files: %d %s, want 200 []", code, body)
	}
	if code, body, _ := call(t, ts, "GET", "/info", ""); code != 200 || !strings.Contains(body, `"thread_files":true`) {
		t.Errorf("/info: %d %s, want flags.thread_files", code, body)
	}
}

// Without WithThreadFiles there are no file routes.
func TestNoThreadFiles(t *testing.T) {
	ts := newTestServer(t)
	if code, body, _ := call(t, ts, "GET", "/threads/t/files", ""); code != http.StatusNotFound {
		t.Errorf("GET /threads/t/files: %d %s, want 404", code, body)
	}
	if code, body, _ := call(t, ts, "GET", "/info", ""); code != 200 || !strings.Contains(body, `"thread_files":false`) {
		t.Errorf("/info: %d %s, want flags.thread_files false", code, body)
	}
}
