//go:build linux

package local_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// probeWheel builds a minimal wheel of the package agentgraph_egress_probe.
func probeWheel(t *testing.T) []byte {
	t.Helper()
	files := map[string]string{
		"agentgraph_egress_probe/__init__.py":                 "VALUE = 42\n",
		"agentgraph_egress_probe-0.1.dist-info/METADATA":      "Metadata-Version: 2.1\nName: agentgraph-egress-probe\nVersion: 0.1\n",
		"agentgraph_egress_probe-0.1.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"agentgraph_egress_probe-0.1.dist-info/top_level.txt": "agentgraph_egress_probe\n",
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, name := range []string{"agentgraph_egress_probe/__init__.py", "agentgraph_egress_probe-0.1.dist-info/METADATA",
		"agentgraph_egress_probe-0.1.dist-info/WHEEL", "agentgraph_egress_probe-0.1.dist-info/top_level.txt"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(files[name]))
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	record.WriteString("agentgraph_egress_probe-0.1.dist-info/RECORD,,\n")
	w, _ := zw.Create("agentgraph_egress_probe-0.1.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEgressProxy installs a package with pip from an index served on this machine's loopback, which the
// sandbox reaches only by a name on its allow-list, through the host-side proxy; every other way out stays
// shut. The test's dialer routes the allowed name to loopback, so nothing leaves this machine.
func TestEgressProxy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the egress proxy needs root")
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pip"); err != nil {
		t.Skip("no pip for /usr/bin/python3 (Debian package python3-pip)")
	}
	wheel := probeWheel(t)
	sum := sha256.Sum256(wheel)
	const whl = "agentgraph_egress_probe-0.1-py3-none-any.whl"
	var requests atomic.Int64
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/simple/agentgraph-egress-probe/":
			fmt.Fprintf(w, `<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, whl, hex.EncodeToString(sum[:]), whl)
		case "/files/" + whl:
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	}))
	defer index.Close()
	const name = "pypi.sandbox.test"
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if host != name {
			return nil, fmt.Errorf("test dialer: unexpected %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, index.Listener.Addr().String())
	}
	ctx := context.Background()
	b := newBackend(t, local.WithEgress(name), local.WithEgressDialer(dial))
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	_, port, _ := net.SplitHostPort(index.Listener.Addr().String())
	url := fmt.Sprintf("http://%s:%s/simple", name, port)
	r, err := s.Exec(ctx, "python3 -m pip install --user --no-cache-dir --disable-pip-version-check --break-system-packages "+
		"--trusted-host "+name+" --index-url "+url+" agentgraph-egress-probe && /usr/bin/python3 -c 'import agentgraph_egress_probe as p; print(p.VALUE)'",
		sandbox.ExecOptions{Timeout: 120e9})
	if err != nil || r.ExitCode != 0 || !strings.HasSuffix(r.Stdout, "42\n") {
		t.Fatalf("pip install through the proxy: %+v, %v", r, err)
	}
	if requests.Load() < 2 {
		t.Errorf("the index saw %d requests", requests.Load())
	}
	// The install persists in home for the next command.
	if r, err := s.Exec(ctx, "ls ~/.local/lib/python3*/site-packages", sandbox.ExecOptions{}); err != nil || !strings.Contains(r.Stdout, "agentgraph_egress_probe") {
		t.Errorf("site-packages after the install: %+v, %v", r, err)
	}

	// What stays shut: names off the list, the index's own address, the proxy for anything but HTTP.
	seen := requests.Load()
	probe := `
import socket, urllib.request, urllib.error
def get(u):
    try:
        with urllib.request.urlopen(u, timeout=5) as r:
            return "OPEN " + str(r.status)
    except urllib.error.HTTPError as e:
        return "HTTP " + str(e.code)
    except Exception as e:
        return "FAILED " + type(e).__name__
print("offlist", get("http://example.com/"))
print("by address", get("http://ADDR/simple/agentgraph-egress-probe/"))
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("HOST", PORT))
    print("direct OPEN")
except Exception as e:
    print("direct FAILED", type(e).__name__)
`
	host, _, _ := net.SplitHostPort(index.Listener.Addr().String())
	r, err = s.Exec(ctx, "python3 -c '"+strings.NewReplacer("ADDR", index.Listener.Addr().String(), "HOST", host, "PORT", port, "'", `'\''`).Replace(probe)+"'", sandbox.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"offlist HTTP 403", "by address HTTP 403", "direct FAILED"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("probe printed %q, want %q (stderr %q)", r.Stdout, want, r.Stderr)
		}
	}
	if requests.Load() != seen {
		t.Errorf("the index saw %d more requests from denied attempts", requests.Load()-seen)
	}
}

// TestEgressRefusesNonPublicAddresses allows a name that resolves to loopback with the default dialer: the
// proxy must refuse it, so an allowed name cannot be turned against the host's own services.
func TestEgressRefusesNonPublicAddresses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the egress proxy needs root")
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx := context.Background()
	s, err := newBackend(t, local.WithEgress("localhost")).Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	r, err := s.Exec(ctx, `python3 -c '
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://localhost:`+port+`/", timeout=5)
    print("OPEN")
except urllib.error.HTTPError as e:
    print("HTTP", e.code)
'`, sandbox.ExecOptions{})
	if err != nil || r.Stdout != "HTTP 502\n" || hits.Load() != 0 {
		t.Errorf("an allowed name on loopback: %+v, %v, %d hits", r, err, hits.Load())
	}
}
