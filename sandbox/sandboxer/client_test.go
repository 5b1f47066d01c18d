package sandboxer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
)

const testKey = "sbx_live_secretsecretsecret"

// wire is a stand-in for the hosted API: it answers each request with the next scripted answer for its
// route and records what it was sent.
type wire struct {
	mu       sync.Mutex
	answers  map[string][]func(w http.ResponseWriter, r *http.Request)
	requests []recorded
}

type recorded struct {
	method, path, query, body string
	header                    http.Header
}

func (s *wire) on(route string, answers ...func(w http.ResponseWriter, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[string][]func(http.ResponseWriter, *http.Request){}
	}
	s.answers[route] = append(s.answers[route], answers...)
}

func (s *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/api/v1")
	s.mu.Lock()
	s.requests = append(s.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Clone()})
	var answer func(http.ResponseWriter, *http.Request)
	if q := s.answers[route]; len(q) > 0 {
		answer, s.answers[route] = q[0], q[1:]
	}
	s.mu.Unlock()
	if answer == nil {
		status(404, `{"ok":false,"type":"sandbox.error","status":404,"code":"not_found","message":"not_found","error":{"code":"not_found","message":"not_found","status":404,"details":{"error":"not_found"}},"requestId":"req_a322cc73a1b549da9edd7ca0f9cb3f01"}`)(w, r)
		return
	}
	answer(w, r)
}

func (s *wire) sent() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// hangUp breaks the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }

func errBody(status int, code, msg string) string {
	return fmt.Sprintf(`{"ok":false,"type":"sandbox.error","status":%d,"code":%q,"message":%q,"error":{"code":%q,"message":%q,"status":%d,"details":{"error":%q}},"requestId":"req_0e883963e5a64734b8979050cfebe620"}`,
		status, code, msg, code, msg, status, code)
}

const readySandbox = `{"ok":true,"type":"sandbox.info","sandbox":{"id":"sb_g6jl6xmzhc","name":"langgraph-1","state":"ready","error":null,"type":"small","vcpu":2,"memoryGB":4,"createdAt":"2026-10-27T10:00:00.000Z","updatedAt":"2026-10-27T10:00:01.000Z","archiveAfter":"2026-10-27T10:30:00.000Z","desktopAvailable":false,"snapshotAvailable":true}}`

func newWire(t *testing.T, opts ...sandboxer.Option) (*wire, *sandboxer.Backend) {
	t.Helper()
	w := &wire{}
	hs := httptest.NewServer(w)
	t.Cleanup(hs.Close)
	b, err := sandboxer.New(append([]sandboxer.Option{sandboxer.WithAPIKey(testKey), sandboxer.WithBaseURL(hs.URL + "/api/v1"),
		sandboxer.WithRetries(3, time.Millisecond, 5*time.Millisecond), sandboxer.WithPollInterval(time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return w, b
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	t.Run("reads retry 429, 503 and broken connections", func(t *testing.T) {
		w, b := newWire(t)
		w.on("GET /sandboxes/sb_g6jl6xmzhc", status(429, errBody(429, "rate_limited", "slow down")), hangUp,
			status(503, errBody(503, "out_of_capacity", "busy")), status(200, readySandbox))
		in, err := b.Sandbox("sb_g6jl6xmzhc").Info(ctx)
		if err != nil || in.Name != "langgraph-1" {
			t.Fatalf("Info = %+v, %v", in, err)
		}
		if n := len(w.sent()); n != 4 {
			t.Errorf("%d requests; want 4", n)
		}
	})
	t.Run("gives up after the retries", func(t *testing.T) {
		w, b := newWire(t)
		for range 5 {
			w.on("GET /sandboxes/sb_g6jl6xmzhc", status(503, errBody(503, "out_of_capacity", "busy")))
		}
		_, err := b.Get(ctx, "sb_g6jl6xmzhc")
		if !errors.Is(err, sandboxer.ErrUnavailable) || len(w.sent()) != 4 {
			t.Errorf("error %v after %d requests; want ErrUnavailable after 4", err, len(w.sent()))
		}
	})
	t.Run("commands are never repeated", func(t *testing.T) {
		w, b := newWire(t)
		w.on("POST /sandboxes/sb_g6jl6xmzhc/commands", status(503, errBody(503, "out_of_capacity", "busy")), status(200, `{"ok":true}`))
		_, err := b.Sandbox("sb_g6jl6xmzhc").Exec(ctx, "true", sandbox.ExecOptions{})
		if !errors.Is(err, sandboxer.ErrUnavailable) || len(w.sent()) != 1 {
			t.Errorf("error %v after %d requests; want ErrUnavailable after 1", err, len(w.sent()))
		}
		w.on("POST /sandboxes/sb_g6jl6xmzhc/stop", hangUp)
		if err := b.Sandbox("sb_g6jl6xmzhc").Stop(ctx); err == nil || len(w.sent()) != 2 {
			t.Errorf("stop over a broken connection: %v after %d requests; want an error and no retry", err, len(w.sent()))
		}
	})
	t.Run("creates retry under one Idempotency-Key", func(t *testing.T) {
		w, b := newWire(t)
		created := strings.Replace(strings.Replace(readySandbox, `"sandbox.info"`, `"sandbox.created","status":"provisioning","ttlSeconds":1800`, 1), `"ready"`, `"provisioning"`, 1)
		w.on("POST /sandboxes", hangUp, status(409, errBody(409, "idempotency_in_progress", "wait")), status(202, created))
		w.on("PATCH /sandboxes/sb_g6jl6xmzhc", status(200, readySandbox))
		w.on("GET /sandboxes/sb_g6jl6xmzhc", status(200, strings.Replace(readySandbox, `"ready"`, `"cloning"`, 1)), status(200, readySandbox))
		s, err := b.Create(ctx, sandbox.CreateOptions{Name: "renamed", Size: sandbox.SizeSmall, TTL: 30 * time.Minute, Env: map[string]string{"A": "1"}})
		if err != nil || s.ID() != "sb_g6jl6xmzhc" {
			t.Fatalf("Create = %v, %v", s, err)
		}
		sent := w.sent()
		if len(sent) != 6 {
			t.Fatalf("%d requests; want 3 creates, a PATCH and 2 polls", len(sent))
		}
		key := sent[0].header.Get("Idempotency-Key")
		for _, r := range sent[:3] {
			if r.header.Get("Idempotency-Key") != key || len(key) != 36 || r.body != `{"type":"small","ttlSeconds":1800,"name":"renamed","env":{"A":"1"}}` {
				t.Errorf("create %q with key %q; want the same body and key every time", r.body, r.header.Get("Idempotency-Key"))
			}
		}
		if sent[3].method != "PATCH" || sent[3].body != `{"name":"renamed"}` {
			t.Errorf("rename: %s %s", sent[3].method, sent[3].body)
		}
	})
}

func TestErrorsMatchSentinels(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{404, "not_found", sandbox.ErrNotFound},
		{404, "file_not_found", fs.ErrNotExist},
		{409, "machine_not_running", sandbox.ErrStopped},
		{400, "invalid_path", sandbox.ErrInvalidPath},
		{400, "invalid_timeout", sandbox.ErrInvalidArgument},
		{400, "invalid_json", sandbox.ErrInvalidArgument},
		{413, "file_too_large", sandbox.ErrTooLarge},
		{507, "quota_exceeded", sandbox.ErrQuota},
		{401, "unauthorized", sandboxer.ErrUnauthorized},
		{403, "forbidden", sandboxer.ErrForbidden},
		{409, "delete_confirmation_required", sandboxer.ErrConflict},
		{429, "limit_reached", sandboxer.ErrRateLimited},
		{501, "not_implemented", errors.ErrUnsupported},
	}
	for _, c := range cases {
		w, b := newWire(t, sandboxer.WithRetries(0, 0, 0))
		w.on("GET /sandboxes/sb_x/files", status(c.status, errBody(c.status, c.code, "it went wrong")))
		_, err := b.Sandbox("sb_x").ReadFile(context.Background(), "f")
		var apiErr *sandboxer.APIError
		if !errors.Is(err, c.want) || !errors.As(err, &apiErr) || apiErr.Status != c.status || apiErr.Code != c.code ||
			apiErr.RequestID != "req_0e883963e5a64734b8979050cfebe620" || apiErr.Message != "it went wrong" {
			t.Errorf("%d %s: error %v; want one matching %v", c.status, c.code, err, c.want)
		}
	}
}

// The hosted API's list objects: states fold into running and stopped, archiveAfter is the expiry, and List
// reads every page.
func TestListPages(t *testing.T) {
	w, b := newWire(t)
	obj := func(id, name, state string) string {
		return `{"id":"` + id + `","name":"` + name + `","state":"` + state + `","error":null,"type":"default","vcpu":4,"memoryGB":8,"createdAt":"2026-08-23T03:36:21.439Z","updatedAt":"2026-08-23T03:37:50.554Z","archiveAfter":null,"desktopAvailable":true,"snapshotAvailable":true}`
	}
	w.on("GET /sandboxes",
		status(200, `{"ok":true,"type":"sandbox.list","sandboxes":[`+obj("bx_1", "a", "archived")+`,`+obj("bx_2", "b", "idle")+`],"pageInfo":{"nextCursor":"MjAy","hasMore":true,"limit":2}}`),
		status(200, `{"ok":true,"type":"sandbox.list","sandboxes":[`+obj("bx_3", "a", "running")+`],"pageInfo":{"nextCursor":null,"hasMore":false,"limit":2}}`))
	infos, err := b.List(context.Background(), sandbox.Filter{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].State != sandbox.StateStopped || infos[1].State != sandbox.StateRunning ||
		infos[0].Limits.CPUs != 4 || infos[0].Limits.MemoryBytes != 8<<30 || infos[0].Size != sandbox.SizeDefault {
		t.Errorf("List = %+v", infos)
	}
	sent := w.sent()
	if len(sent) != 2 || sent[0].query != "limit=200&sort=asc" || sent[1].query != "cursor=MjAy&limit=200&sort=asc" {
		t.Errorf("queries %+v", sent)
	}
}

func TestRequestHeaders(t *testing.T) {
	w, b := newWire(t, sandboxer.WithOrg("team_42"))
	w.on("DELETE /sandboxes/sb_g6jl6xmzhc", status(202, `{"ok":true,"type":"sandbox.deleting","operation":{"id":"bdop_0","status":"pending"}}`))
	if err := b.Sandbox("sb_g6jl6xmzhc").Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := w.sent()[0].header
	if h.Get("Authorization") != "Bearer "+testKey || h.Get("X-Sandboxer-Org") != "team_42" || h.Get("X-Ascii-Confirm-Delete") != "sb_g6jl6xmzhc" {
		t.Errorf("headers %v", h)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	t.Setenv("SANDBOXER_API_KEY", "")
	t.Setenv("SANDBOXER_TOKEN", "")
	if _, err := sandboxer.New(sandboxer.OptionsFromEnv()...); err == nil || !strings.Contains(err.Error(), "SANDBOXER_API_KEY") {
		t.Errorf("New without a key: %v", err)
	}
	w := &wire{}
	w.on("GET /sandboxes/sb_1", status(200, readySandbox))
	hs := httptest.NewServer(w)
	defer hs.Close()
	t.Setenv("SANDBOXER_TOKEN", "sbx_live_fromtoken")
	t.Setenv("SANDBOXER_API_URL", hs.URL+"/api/v1")
	t.Setenv("SANDBOXER_ORG", "acme")
	b, err := sandboxer.New(sandboxer.OptionsFromEnv()...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Get(context.Background(), "sb_1"); err != nil {
		t.Fatal(err)
	}
	if h := w.sent()[0].header; h.Get("Authorization") != "Bearer sbx_live_fromtoken" || h.Get("X-Sandboxer-Org") != "acme" {
		t.Errorf("headers %v", h)
	}
}

// The key goes into the Authorization header and nowhere else: not into errors, logs or printed values.
func TestKeyNeverShown(t *testing.T) {
	var logs bytes.Buffer
	oldSlog, oldLog := slog.Default(), log.Writer()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.SetOutput(&logs)
	defer func() { slog.SetDefault(oldSlog); log.SetOutput(oldLog) }()

	w, b := newWire(t, sandboxer.WithRetries(1, time.Millisecond, time.Millisecond))
	// A server that echoes the header back in its error must not make the client show it either way.
	w.on("GET /sandboxes/sb_1", status(401, errBody(401, "unauthorized", "unauthorized")))
	w.on("GET /sandboxes/sb_2", hangUp, hangUp)
	ctx := context.Background()
	var shown []string
	for _, id := range []string{"sb_1", "sb_2", "sb_3"} {
		_, err := b.Get(ctx, id)
		if err == nil {
			t.Fatalf("Get(%s) succeeded", id)
		}
		shown = append(shown, err.Error(), fmt.Sprintf("%+v %#v", err, err))
	}
	s := b.Sandbox("sb_1")
	shown = append(shown, fmt.Sprintf("%v %+v %#v %s", b, b, b, b), fmt.Sprintf("%v %+v %#v", s, s, s),
		fmt.Sprint(sandboxer.OptionsFromEnv()), logs.String())
	_, err := sandboxer.New(sandboxer.WithAPIKey(testKey), sandboxer.WithBaseURL("ftp://x"))
	shown = append(shown, err.Error())
	for _, text := range shown {
		if strings.Contains(text, "secretsecret") {
			t.Errorf("the key shows in %q", text)
		}
	}
	if !strings.Contains(shown[0], "check the API key") {
		t.Errorf("401 error %q does not say what to do", shown[0])
	}
}

// ExecStream yields the output as the command prints it, through sandboxd over loopback.
func TestExecStream(t *testing.T) {
	b, _ := loopback(t, sandboxd.Limits{})
	ctx := context.Background()
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	sb := s.(*sandboxer.Sandbox)
	var out, errOut strings.Builder
	var frames []string
	var firstAt, exitAt time.Duration
	start := time.Now()
	for f, err := range sb.ExecStream(ctx, `echo "$X one"; sleep 1; echo two >&2; exit 4`, sandbox.ExecOptions{Env: map[string]string{"X": "it's"}}) {
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f.Type)
		switch f.Type {
		case "stdout":
			if firstAt == 0 {
				firstAt = time.Since(start)
			}
			out.WriteString(f.Data)
		case "stderr":
			errOut.WriteString(f.Data)
		case "exit":
			exitAt = time.Since(start)
			if f.ExitCode != 4 || f.Success || f.TimedOut {
				t.Errorf("exit frame %+v", f)
			}
		}
	}
	if out.String() != "it's one\n" || errOut.String() != "two\n" || frames[0] != "started" || frames[len(frames)-1] != "exit" {
		t.Errorf("frames %v, stdout %q, stderr %q", frames, out.String(), errOut.String())
	}
	if exitAt-firstAt < 800*time.Millisecond {
		t.Errorf("first output at %v, exit at %v: the output did not come while the command ran", firstAt, exitAt)
	}
	for f, err := range sb.ExecStream(ctx, "sleep 10", sandbox.ExecOptions{Timeout: time.Second}) {
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == "exit" && (!f.TimedOut || f.ExitCode != -1) {
			t.Errorf("timed-out exit frame %+v", f)
		}
	}
}

// Limits of the server come back as errors that say what to do.
func TestLimitReached(t *testing.T) {
	b, _ := loopback(t, sandboxd.Limits{Sandboxes: 1}, sandboxer.WithRetries(1, time.Millisecond, time.Millisecond))
	ctx := context.Background()
	s, err := b.Create(ctx, sandbox.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx)
	_, err = b.Create(ctx, sandbox.CreateOptions{})
	if !errors.Is(err, sandboxer.ErrRateLimited) || !strings.Contains(err.Error(), "stop or delete sandboxes") {
		t.Errorf("second Create: %v", err)
	}
}
