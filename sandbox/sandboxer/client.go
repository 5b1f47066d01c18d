package sandboxer

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is the hosted Sandboxer API.
const DefaultBaseURL = "https://sandboxer.com/api/v1"

// Headers and environment variables of the API.
const (
	// OrgHeader names the organization billed for a request.
	OrgHeader = "X-Sandboxer-Org"
	// ConfirmDeleteHeader must carry the sandbox's id on a delete; the server refuses the delete without it.
	ConfirmDeleteHeader = "X-Ascii-Confirm-Delete"
	// IdempotencyKeyHeader makes a create safe to repeat: the same key and body give the same sandbox.
	IdempotencyKeyHeader = "Idempotency-Key"

	EnvAPIKey = "SANDBOXER_API_KEY"
	EnvToken  = "SANDBOXER_TOKEN" // read when SANDBOXER_API_KEY is unset
	EnvURL    = "SANDBOXER_API_URL"
	EnvOrg    = "SANDBOXER_ORG"
)

type config struct {
	key            string
	baseURL        string
	org            string
	hc             *http.Client
	retries        int
	backoff        time.Duration
	maxBackoff     time.Duration
	requestTimeout time.Duration
	poll           time.Duration
}

// Option configures New.
type Option func(*config)

// WithAPIKey sets the key sent as a Bearer token.
func WithAPIKey(key string) Option { return func(c *config) { c.key = key } }

// WithBaseURL sets the API's base URL, such as http://host:8470/api/v1 for an agentgraph-sandboxd; the
// default is DefaultBaseURL.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithOrg sets the organization billed for every request (the OrgHeader).
func WithOrg(org string) Option { return func(c *config) { c.org = org } }

// WithHTTPClient sets the HTTP client; its Timeout should be zero, since each call sets its own deadline.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.hc = hc } }

// WithRetries sets how many times a call that is safe to repeat is retried after a 429, a 503 or a broken
// connection (default 3), and the backoff: the n-th wait is a random time up to min(base·2ⁿ, max), or what
// the server's Retry-After says, up to max. The defaults are 500 ms and 8 s.
func WithRetries(n int, base, max time.Duration) Option {
	return func(c *config) { c.retries, c.backoff, c.maxBackoff = n, base, max }
}

// WithRequestTimeout bounds each HTTP request (default 60 s). A command's request gets its own timeout on top.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// WithPollInterval sets how often Create and Resume ask whether a sandbox that is starting up is ready
// (default 500 ms).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// OptionsFromEnv returns the options the environment sets: the key from SANDBOXER_API_KEY (else
// SANDBOXER_TOKEN), the base URL from SANDBOXER_API_URL and the organization from SANDBOXER_ORG. Unset
// variables give no option. Put options after it to override the environment.
func OptionsFromEnv() []Option {
	var opts []Option
	if k := os.Getenv(EnvAPIKey); k != "" {
		opts = append(opts, WithAPIKey(k))
	} else if k := os.Getenv(EnvToken); k != "" {
		opts = append(opts, WithAPIKey(k))
	}
	if u := os.Getenv(EnvURL); u != "" {
		opts = append(opts, WithBaseURL(u))
	}
	if o := os.Getenv(EnvOrg); o != "" {
		opts = append(opts, WithOrg(o))
	}
	return opts
}

// Backend creates and finds sandboxes through the API. It is safe for concurrent use.
type Backend struct {
	cfg    config
	base   *url.URL
	ownsHC bool
}

// New returns a Backend. It fails without an API key or with a base URL that is not http(s).
func New(opts ...Option) (*Backend, error) {
	cfg := config{baseURL: DefaultBaseURL, retries: 3, backoff: 500 * time.Millisecond, maxBackoff: 8 * time.Second,
		requestTimeout: 60 * time.Second, poll: 500 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.key == "" {
		return nil, errors.New("sandboxer: no API key: pass sandboxer.WithAPIKey, or set " + EnvAPIKey +
			" and pass sandboxer.OptionsFromEnv()")
	}
	base, err := url.Parse(strings.TrimRight(cfg.baseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("sandboxer: base URL %q: want http(s)://host[:port]/path, such as %s", cfg.baseURL, DefaultBaseURL)
	}
	b := &Backend{cfg: cfg, base: base}
	if b.cfg.hc == nil {
		b.cfg.hc = &http.Client{}
		b.ownsHC = true
	}
	if b.cfg.retries < 0 {
		b.cfg.retries = 0
	}
	return b, nil
}

// String names the backend by its URL; the key is never shown.
func (b *Backend) String() string { return "sandboxer.Backend(" + b.base.String() + ")" }

// GoString is String, so that %#v shows no key either.
func (b *Backend) GoString() string { return b.String() }

// Close releases idle connections of the backend's own HTTP client. Sandboxes stay.
func (b *Backend) Close() error {
	if b.ownsHC {
		b.cfg.hc.CloseIdleConnections()
	}
	return nil
}

// call is one API request.
type call struct {
	method  string
	path    string // below the base URL, already escaped
	query   url.Values
	body    any // JSON-encoded once; nil for none
	header  http.Header
	retry   bool          // safe to repeat
	timeout time.Duration // on top of the request timeout (commands)
	ok      []int         // accepted statuses; default 200 and 202
}

// do runs c and decodes a successful JSON answer into out (unless nil).
func (b *Backend) do(ctx context.Context, c call, out any) error {
	resp, err := b.send(ctx, c)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("sandboxer: %s %s: %w", c.method, c.path, ctx.Err())
		}
		return fmt.Errorf("sandboxer: %s %s: decode the answer: %w", c.method, c.path, err)
	}
	return nil
}

// send runs c, retrying where that is safe, and returns a successful response whose body the caller must
// close. Failures come back as *APIError or a transport error.
func (b *Backend) send(ctx context.Context, c call) (*http.Response, error) {
	var body []byte
	if c.body != nil {
		var err error
		if body, err = json.Marshal(c.body); err != nil {
			return nil, fmt.Errorf("sandboxer: encode request: %w", err)
		}
	}
	u := b.base.JoinPath()
	u.Path += c.path
	u.RawPath = ""
	q := c.query
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	for attempt := 0; ; attempt++ {
		resp, err := b.attempt(ctx, c, u.String(), body)
		var wait time.Duration
		switch {
		case err == nil && (slicesContains(c.ok, resp.StatusCode) || (len(c.ok) == 0 && (resp.StatusCode == 200 || resp.StatusCode == 202))):
			return resp, nil
		case err != nil:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sandboxer: %s %s: %w", c.method, c.path, ctx.Err())
			}
			err = fmt.Errorf("sandboxer: %s %s: %w", c.method, c.path, err)
		default:
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			apiErr := parseError(resp.StatusCode, data, resp.Header.Get("X-Request-Id"))
			err = apiErr
			if !retryable(apiErr) {
				return nil, err
			}
			wait = retryAfter(resp.Header.Get("Retry-After"))
		}
		if !c.retry || attempt >= b.cfg.retries {
			return nil, err
		}
		if wait <= 0 {
			wait = b.backoff(attempt)
		}
		wait = min(wait, b.cfg.maxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("sandboxer: %s %s: %w (while waiting to retry after: %v)", c.method, c.path, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// retryable says whether the server refused the request in a way that asks to try again later.
func retryable(e *APIError) bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable ||
		e.Code == "idempotency_in_progress"
}

func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return time.Until(t)
	}
	return 0
}

// backoff is full jitter: a uniform wait up to min(base·2ⁿ, max), so that many clients do not retry in step.
func (b *Backend) backoff(attempt int) time.Duration {
	ceil := b.cfg.backoff << min(attempt, 20)
	if ceil <= 0 || ceil > b.cfg.maxBackoff {
		ceil = b.cfg.maxBackoff
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil) + 1
}

// attempt sends one request. The returned body cancels the request's deadline when closed.
func (b *Backend) attempt(ctx context.Context, c call, u string, body []byte) (*http.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, b.cfg.requestTimeout+c.timeout)
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, c.method, u, r)
	if err != nil {
		cancel()
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+b.cfg.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agentgraph-sandboxer/1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.cfg.org != "" {
		req.Header.Set(OrgHeader, b.cfg.org)
	}
	resp, err := b.cfg.hc.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelBody) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// newIdempotencyKey returns a random UUID (version 4).
func newIdempotencyKey() string {
	var u [16]byte
	crand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
