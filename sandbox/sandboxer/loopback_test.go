package sandboxer_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
	"github.com/agentgraph/agentgraph/sandbox/sandboxtest"
)

// loopback serves a local backend with sandboxd on a loopback port and returns a client of it, with the key's
// limits; everything is closed when the test ends.
func loopback(t testing.TB, limits sandboxd.Limits, opts ...sandboxer.Option) (*sandboxer.Backend, *local.Backend) {
	t.Helper()
	lb, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Close() })
	keys := &sandboxd.Keys{}
	secret, _, err := keys.Add("test", limits)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sandboxd.New(lb, sandboxd.WithKeys(keys), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b, err := sandboxer.New(append([]sandboxer.Option{sandboxer.WithAPIKey(secret), sandboxer.WithBaseURL(hs.URL + sandboxd.Prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, lb
}

// The client passes the conformance suite against sandboxd serving the local backend, over loopback.
func TestConformance(t *testing.T) {
	b, _ := loopback(t, sandboxd.Limits{Sandboxes: 100, Commands: 100})
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend { return b })
}
