package sandboxtool_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandboxtool"
	"github.com/agentgraph/agentgraph/server"
)

// filesServer serves an Agent Server whose thread files are reg's sandboxes.
func filesServer(t *testing.T, reg *sandboxtool.Registry) *httptest.Server {
	t.Helper()
	saver := checkpoint.NewMemory()
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("noop", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			return graph.Updates(prebuilt.Messages.Add(model.Assistant("ok"))), nil
		}).
		AddEdge(graph.START, "noop").AddEdge("noop", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.WithGraph("noop", g), server.WithSaver(saver), server.WithThreadFiles(reg))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return ts
}

func get(t *testing.T, u string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// The server lists and serves a thread's sandbox files, and nothing outside its home.
func TestThreadFilesOverHTTP(t *testing.T) {
	reg := sandboxtool.New(openBackend(t, t.TempDir()))
	closeAll(t, reg)
	ts := filesServer(t, reg)
	ctx := onThread("t1")
	call(t, reg.RunPython(), ctx, `
import os
os.makedirs("out/deep", exist_ok=True)
open("out/deep/data.csv", "w").write("a,b\n1,2\n")
open("/tmp/secret.txt", "w").write("tmp")
os.makedirs(".cache/pip", exist_ok=True)
open(".cache/pip/x", "w").write("x")
os.symlink("/etc/passwd", "passwd")
os.symlink("/tmp", "tmplink")
print("ok")`)
	if err := mustSandbox(t, reg, "t1").WriteFile(context.Background(), "pic.png", []byte("\x89PNG\r\n\x1a\nfake")); err != nil {
		t.Fatal(err)
	}

	code, _, body := get(t, ts.URL+"/threads/t1/files")
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	var list []struct {
		Path     string `json:"path"`
		Size     int64  `json:"size"`
		Modified string `json:"modified"`
		IsDir    bool   `json:"is_dir"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range list {
		got[f.Path] = f.IsDir
		if f.Modified == "" {
			t.Errorf("%s: no modified time", f.Path)
		}
		if f.Path == "out/deep/data.csv" && f.Size != 8 {
			t.Errorf("data.csv size %d, want 8", f.Size)
		}
	}
	for p, dir := range map[string]bool{"main.py": false, "pic.png": false, "out": true, "out/deep": true, "out/deep/data.csv": false, ".cache": true, "passwd": false} {
		if isDir, ok := got[p]; !ok || isDir != dir {
			t.Errorf("list has %s: %v (dir %v), want dir %v; list %s", p, ok, isDir, dir, body)
		}
	}
	if _, ok := got[".cache/pip"]; ok {
		t.Errorf("list enters the hidden .cache: %s", body)
	}

	code, h, body := get(t, ts.URL+"/threads/t1/files/content?path=pic.png")
	if code != 200 || string(body) != "\x89PNG\r\n\x1a\nfake" || h.Get("Content-Type") != "image/png" {
		t.Errorf("pic.png: %d %q %q", code, h.Get("Content-Type"), body)
	}
	if cd := h.Get("Content-Disposition"); !strings.Contains(cd, `filename=pic.png`) || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("pic.png headers: %v", h)
	}
	code, _, body = get(t, ts.URL+"/threads/t1/files/content?path="+url.QueryEscape("/out/deep/data.csv"))
	if code != 200 || string(body) != "a,b\n1,2\n" {
		t.Errorf("/out/deep/data.csv: %d %q", code, body)
	}

	for _, c := range []struct {
		thread, path string
		want         int
	}{
		{"t1", "missing.txt", 404},
		{"nobody", "main.py", 404},
		{"t1", "", 400},
		{"t1", "out", 400}, // a directory
		{"t1", "../../etc/passwd", 400},
		{"t1", "/../etc/passwd", 400},
		{"t1", "out/../../tmp/secret.txt", 400},
		{"t1", "out/./deep/data.csv", 400},
		{"t1", "out//deep/data.csv", 400},
		{"t1", "..", 400},
		{"t1", ".", 400},
		{"t1", `..\..\etc\passwd`, 400},
		{"t1", "main.py\x00.png", 400},
		{"t1", "passwd", 400},             // a symlink the program planted
		{"t1", "tmplink/secret.txt", 400}, // a path through one
	} {
		code, _, body := get(t, ts.URL+"/threads/"+c.thread+"/files/content?path="+url.QueryEscape(c.path))
		if code != c.want {
			t.Errorf("thread %s path %q: %d %s, want %d", c.thread, c.path, code, body, c.want)
		}
		if strings.Contains(string(body), "root:") {
			t.Errorf("thread %s path %q leaked %q", c.thread, c.path, body)
		}
	}
	if code, _, body := get(t, ts.URL+"/threads/nobody/files"); code != 200 || string(body) != "[]" {
		t.Errorf("list of a thread without a sandbox: %d %s, want 200 []", code, body)
	}
}

// A stopped sandbox's files are served without resuming it, and without the Registry creating any.
func TestThreadFilesOfStoppedSandbox(t *testing.T) {
	root := t.TempDir()
	first := sandboxtool.New(openBackend(t, root), sandboxtool.WithStopOnClose())
	call(t, first.RunPython(), onThread("s"), "open('kept.txt', 'w').write('kept')")
	if _, err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := openBackend(t, root)
	reg := sandboxtool.New(b)
	closeAll(t, reg)
	ts := filesServer(t, reg)
	if code, _, body := get(t, ts.URL+"/threads/s/files/content?path=kept.txt"); code != 200 || string(body) != "kept" {
		t.Fatalf("kept.txt of a stopped sandbox: %d %q", code, body)
	}
	get(t, ts.URL+"/threads/other/files")
	infos, err := b.List(context.Background(), sandbox.Filter{})
	if err != nil || len(infos) != 1 || infos[0].State != sandbox.StateStopped {
		t.Errorf("sandboxes after reading files: %v, %v; want the one, still stopped", infos, err)
	}
}

func mustSandbox(t *testing.T, reg *sandboxtool.Registry, thread string) sandbox.Sandbox {
	t.Helper()
	sb, err := reg.Sandbox(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}
