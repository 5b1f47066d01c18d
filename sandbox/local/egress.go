package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// EgressPort is where, inside a sandbox with egress, the host's proxy listens on 127.0.0.1; HTTP_PROXY and
// HTTPS_PROXY point there.
const EgressPort = 3128

// WithEgress lets code in sandboxes without HostNetwork reach the named hosts, and only those, through an
// HTTP proxy that runs in this process: the sandbox keeps its own network namespace with nothing but
// loopback, where the proxy listens, and HTTP_PROXY/HTTPS_PROXY point at it (pip, requests and urllib use
// them). A name is exact ("pypi.org") or a suffix ("*.pythonhosted.org"). The proxy resolves names on the
// host and refuses any that resolve to a loopback, private, link-local or otherwise non-public address, so
// an allowed name cannot be pointed at the host's own services. Plain HTTP requests and CONNECT tunnels
// (HTTPS) are served; nothing else leaves. Root only: the proxy's socket is made in the sandbox's network
// namespace.
func WithEgress(hosts ...string) Option {
	return func(c *config) { c.egress = append(c.egress, hosts...) }
}

// PythonPackageIndex names the hosts pip needs for the Python Package Index, for WithEgress.
var PythonPackageIndex = []string{"pypi.org", "files.pythonhosted.org"}

// WithEgressDialer replaces how the egress proxy connects to an allowed host once the name has passed the
// allow-list; the default resolves it on the host and refuses non-public addresses. It exists for tests,
// which route an allowed name to a server on loopback.
func WithEgressDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *config) { c.egressDial = dial }
}

// egressAllowed reports whether host (no port) is on the allow-list.
func egressAllowed(list []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range list {
		h = strings.ToLower(h)
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// publicAddr reports whether a is an address on the public internet.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// nonPublic are ranges IsGlobalUnicast lets through that no public service lives in.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64, which could reach IPv4 private ranges
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // site-local
	netip.MustParsePrefix("2002::/16"),      // 6to4, which embeds IPv4 addresses
	netip.MustParsePrefix("100::/64"),       // discard
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, including cloud metadata services
}

// publicDial resolves host on the host and connects to its first public address, refusing any other.
func publicDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	for _, ip := range ips {
		if publicAddr(ip) {
			return d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		}
	}
	return nil, fmt.Errorf("%s resolves to no public address (%v)", host, ips)
}

// egressProxy serves one command's proxy listener.
type egressProxy struct {
	allow []string
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	srv   *http.Server
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{} // tunnels, closed on stop
}

// serveEgress serves the proxy on l until stop is called.
func serveEgress(l net.Listener, allow []string, dial func(context.Context, string, string) (net.Conn, error)) (stop func()) {
	if dial == nil {
		dial = publicDial
	}
	p := &egressProxy{allow: allow, dial: dial, conns: map[net.Conn]struct{}{}}
	transport := &http.Transport{DialContext: p.dialAllowed, Proxy: nil, ResponseHeaderTimeout: time.Minute}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.handle(w, r, transport)
	}), ReadHeaderTimeout: 30 * time.Second}
	p.wg.Go(func() { p.srv.Serve(l) })
	return func() {
		p.srv.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		transport.CloseIdleConnections()
	}
}

var errNotAllowed = errors.New("host not on the sandbox's egress allow-list")

func (p *egressProxy) dialAllowed(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !egressAllowed(p.allow, host) {
		return nil, fmt.Errorf("%s: %w", host, errNotAllowed)
	}
	return p.dial(ctx, "tcp", addr)
}

func (p *egressProxy) handle(w http.ResponseWriter, r *http.Request, transport *http.Transport) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "sandbox egress proxy: send absolute http:// URLs or CONNECT", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	resp, err := transport.RoundTrip(out)
	if err != nil {
		p.refuse(w, err)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func (p *egressProxy) refuse(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	if errors.Is(err, errNotAllowed) {
		code = http.StatusForbidden
	}
	http.Error(w, "sandbox egress proxy: "+err.Error(), code)
}

// tunnel serves CONNECT: a TCP stream to an allowed host, for TLS the proxy does not see into.
func (p *egressProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	upstream, err := p.dialAllowed(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.refuse(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "sandbox egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[upstream] = struct{}{}, struct{}{}
	p.mu.Unlock()
	client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	var done sync.WaitGroup
	done.Go(func() { io.Copy(upstream, buf); closeWrite(upstream) })
	done.Go(func() { io.Copy(client, upstream); closeWrite(client) })
	done.Wait()
	client.Close()
	upstream.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, upstream)
	p.mu.Unlock()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
}
