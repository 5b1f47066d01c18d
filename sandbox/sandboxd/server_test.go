package sandboxd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

// server runs sandboxd over a fresh local backend, with one key per limits given, and returns the URL of
// the API and the keys' secrets.
func server(t *testing.T, opts []sandboxd.Option, limits ...sandboxd.Limits) (string, []string) {
	t.Helper()
	lb, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAll(t, lb); lb.Close() })
	keys := &sandboxd.Keys{}
	var secrets []string
	for _, l := range limits {
		secret, _, err := keys.Add("test", l)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret)
	}
	opts = append([]sandboxd.Option{sandboxd.WithKeys(keys), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	srv, err := sandboxd.New(lb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL + sandboxd.Prefix, secrets
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %q", a.status, a.body)
	}
	return m
}

func call(t *testing.T, method, url, key, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, data}
}

var requestID = regexp.MustCompile(`"requestId":"req_[0-9a-f]{32}"`)

// wantError checks an error answer byte for byte, the request id aside, and that the header carries the
// same id.
func wantError(t *testing.T, a answer, status int, want string) {
	t.Helper()
	got := strings.TrimSpace(string(a.body))
	id := requestID.FindString(got)
	if a.status != status || id == "" || requestID.ReplaceAllString(got, `"requestId":"req_X"`) != want {
		t.Errorf("answer %d\n%s\nwant %d\n%s", a.status, got, status, want)
	}
	if id != "" && !strings.Contains(id, a.header.Get("X-Request-Id")) {
		t.Errorf("X-Request-Id %q is not the envelope's %s", a.header.Get("X-Request-Id"), id)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
}

func envelope(status int, code, msg, details string) string {
	if details == "" {
		details = `{"error":"` + code + `"}`
	}
	s := `{"ok":false,"type":"sandbox.error","status":` + itoa(status) + `,"code":"` + code + `","message":"` + msg +
		`","error":{"code":"` + code + `","message":"` + msg + `","status":` + itoa(status) + `,"details":` + details + `},"requestId":"req_X"}`
	return s
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func create(t *testing.T, url, key, body string) string {
	t.Helper()
	a := call(t, "POST", url+"/sandboxes", key, body)
	if a.status != http.StatusAccepted {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	sb := a.json(t)["sandbox"].(map[string]any)
	return sb["id"].(string)
}

func TestErrorEnvelopes(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{})
	k := keys[0]
	id := create(t, url, k, `{"type":"small","ttlSeconds":600,"name":"envelopes"}`)
	cases := []struct {
		name          string
		method, path  string
		key, body     string
		header        []string
		status        int
		code, message string
		details       string
	}{
		{"no key", "GET", "/sandboxes", "", "", nil, 401, "unauthorized", "missing or unknown API key: send Authorization: Bearer sbx_live_...", ""},
		{"wrong key", "GET", "/sandboxes", "sbx_live_0000000000000000000000000000000000000000", "", nil, 401, "unauthorized", "missing or unknown API key: send Authorization: Bearer sbx_live_...", ""},
		{"unknown sandbox", "GET", "/sandboxes/sb_doesnotexist", k, "", nil, 404, "not_found", "sandbox sb_doesnotexist not found", ""},
		{"unknown route", "GET", "/boxes", k, "", nil, 404, "not_found", "no such route", ""},
		{"method", "PATCH", "/sandboxes/" + id + "/stop", k, "", nil, 405, "method_not_allowed", "PATCH is not allowed here: use POST", ""},
		{"bad json", "POST", "/sandboxes", k, `{"type":`, nil, 400, "invalid_json", "Request body must be valid JSON.", ""},
		{"bad type", "POST", "/sandboxes", k, `{"type":"huge"}`, nil, 400, "invalid_type", "type must be small, default or large", ""},
		{"bad ttl", "POST", "/sandboxes", k, `{"ttlSeconds":0}`, nil, 400, "invalid_ttl", "ttlSeconds must be a whole number from 1 to 2592000, or null", ""},
		{"bad env", "POST", "/sandboxes", k, `{"env":{"1X":"y"}}`, nil, 400, "invalid_env", `environment variable names must match [A-Za-z_][A-Za-z0-9_]{0,127}: \"1X\"`, ""},
		{"timeout 601", "POST", "/sandboxes/" + id + "/commands", k, `{"command":"true","timeoutSeconds":601}`, nil, 400, "invalid_timeout", "timeoutSeconds must be a whole number from 1 to 600", ""},
		{"timeout 1.5", "POST", "/sandboxes/" + id + "/commands", k, `{"command":"true","timeoutSeconds":1.5}`, nil, 400, "invalid_timeout", "timeoutSeconds must be a whole number from 1 to 600", ""},
		{"no command", "POST", "/sandboxes/" + id + "/commands", k, `{"command":" "}`, nil, 400, "invalid_command", "command must be a non-empty shell command", ""},
		{"path outside", "GET", "/sandboxes/" + id + "/files?path=/etc/passwd", k, "", nil, 400, "invalid_path", `invalid sandbox path: \"/etc/passwd\" resolves to /etc/passwd, outside /home/user and /tmp`, ""},
		{"missing file", "GET", "/sandboxes/" + id + "/files?path=nothing.txt", k, "", nil, 404, "file_not_found", "read /home/user/nothing.txt: file does not exist", ""},
		{"delete unconfirmed", "DELETE", "/sandboxes/" + id, k, "", nil, 409, "delete_confirmation_required", "set X-Ascii-Confirm-Delete to the id of the sandbox to delete: " + id, `{"error":"delete_confirmation_required","targetId":"` + id + `"}`},
		{"delete mismatched", "DELETE", "/sandboxes/" + id, k, "", []string{sandboxd.ConfirmDeleteHeader, "sb_other"}, 409, "delete_confirmation_required", "set X-Ascii-Confirm-Delete to the id of the sandbox to delete: " + id, `{"error":"delete_confirmation_required","targetId":"` + id + `"}`},
		{"bad limit", "GET", "/sandboxes?limit=201", k, "", nil, 400, "invalid_limit", "limit must be a whole number from 1 to 200", ""},
		{"bad cursor", "GET", "/sandboxes?cursor=xyz", k, "", nil, 400, "invalid_cursor", "cursor is not one this server gave out: start again without it", ""},
		{"too large", "POST", "/sandboxes/" + id + "/commands", k, `{"command":"` + strings.Repeat("x", 2<<20) + `"}`, nil, 413, "payload_too_large", "request body larger than 1048576 bytes", `{"error":"payload_too_large","limit":1048576}`},
		{"unknown command", "GET", "/sandboxes/" + id + "/commands/7", k, "", nil, 404, "not_found", "no command 7 in sandbox " + id, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, c.method, url+c.path, c.key, c.body, c.header...)
			wantError(t, a, c.status, envelope(c.status, c.code, c.message, c.details))
		})
	}
	// Stopped: commands are refused with 409 machine_not_running until a resume.
	if a := call(t, "POST", url+"/sandboxes/"+id+"/stop", k, `{"force":false}`); a.status != 202 || a.json(t)["type"] != "sandbox.stopping" {
		t.Fatalf("stop: %d %s", a.status, a.body)
	}
	wantError(t, call(t, "POST", url+"/sandboxes/"+id+"/commands", k, `{"command":"true"}`), 409,
		envelope(409, "machine_not_running", "the sandbox is stopped: resume it first", ""))
}

func TestSandboxLifecycle(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{})
	k := keys[0]
	a := call(t, "POST", url+"/sandboxes", k, `{"type":"small","ttlSeconds":600,"name":"life","env":{"GREETING":"hi"}}`)
	m := a.json(t)
	if a.status != 202 || m["ok"] != true || m["type"] != "sandbox.created" || m["status"] != "ready" || m["ttlSeconds"] != 600.0 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	sb := m["sandbox"].(map[string]any)
	id := sb["id"].(string)
	var keysOf []string
	for k := range sb {
		keysOf = append(keysOf, k)
	}
	slices.Sort(keysOf)
	want := []string{"archiveAfter", "createdAt", "desktopAvailable", "error", "hostNetwork", "id", "limits", "memoryGB", "name", "snapshotAvailable", "state", "type", "updatedAt", "vcpu"}
	if !slices.Equal(keysOf, want) || sb["state"] != "running" || sb["type"] != "small" || sb["vcpu"] != 1.0 || sb["memoryGB"] != 1.0 || sb["name"] != "life" {
		t.Errorf("sandbox object %s", a.body)
	}

	a = call(t, "POST", url+"/sandboxes/"+id+"/commands", k, `{"command":"echo $GREETING; pwd; echo e >&2; exit 3","cwd":"","timeoutSeconds":10}`)
	m = a.json(t)
	if a.status != 200 || m["type"] != "command.finished" || m["success"] != false || m["exitCode"] != 3.0 || m["stdout"] != "hi\n/home/user\n" ||
		m["stderr"] != "e\n" || m["timedOut"] != false || m["signal"] != nil || m["cwd"] != "/home/user" {
		t.Errorf("command: %d %s", a.status, a.body)
	}
	a = call(t, "POST", url+"/sandboxes/"+id+"/commands", k, `{"command":"sleep 30","timeoutSeconds":1}`)
	if m = a.json(t); m["timedOut"] != true || m["exitCode"] != nil || m["success"] != false {
		t.Errorf("timed-out command: %s", a.body)
	}

	// Files: utf8 and base64, both ways.
	a = call(t, "PUT", url+"/sandboxes/"+id+"/files", k, `{"path":"d/a.txt","content":"héllo\n"}`)
	if a.status != 200 || string(a.body) != `{"ok":true,"type":"file.written","success":true,"path":"/home/user/d/a.txt","encoding":"utf8","size":7}`+"\n" {
		t.Errorf("write: %d %s", a.status, a.body)
	}
	a = call(t, "GET", url+"/sandboxes/"+id+"/files?path=d/a.txt", k, "")
	if string(a.body) != `{"ok":true,"type":"file.read","success":true,"path":"/home/user/d/a.txt","encoding":"utf8","size":7,"content":"héllo\n"}`+"\n" {
		t.Errorf("read: %s", a.body)
	}
	call(t, "PUT", url+"/sandboxes/"+id+"/files", k, `{"path":"/tmp/b.bin","content":"AP8=","encoding":"base64"}`)
	a = call(t, "GET", url+"/sandboxes/"+id+"/files?path=/tmp/b.bin&encoding=base64", k, "")
	if m = a.json(t); m["content"] != "AP8=" || m["size"] != 2.0 {
		t.Errorf("read base64: %s", a.body)
	}
	wantError(t, call(t, "GET", url+"/sandboxes/"+id+"/files?path=/tmp/b.bin", k, ""), 400,
		envelope(400, "invalid_encoding", "/tmp/b.bin is not UTF-8 text: read it with encoding=base64", ""))
	a = call(t, "GET", url+"/sandboxes/"+id+"/artifacts?path=/tmp/b.bin", k, "")
	if a.status != 200 || string(a.body) != "\x00\xff" || a.header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("artifact: %d %q %v", a.status, a.body, a.header)
	}
	a = call(t, "GET", url+"/sandboxes/"+id+"/files/list?path=d", k, "")
	if m = a.json(t); a.status != 200 || m["type"] != "file.list" || len(m["files"].([]any)) != 1 {
		t.Errorf("list: %d %s", a.status, a.body)
	}
	if a = call(t, "DELETE", url+"/sandboxes/"+id+"/files?path=d", k, ""); a.status != 200 || a.json(t)["type"] != "file.deleted" {
		t.Errorf("remove: %d %s", a.status, a.body)
	}

	// Stop, resume, delete.
	a = call(t, "POST", url+"/sandboxes/"+id+"/stop", k, "")
	if m = a.json(t); a.status != 202 || m["type"] != "sandbox.stopping" || m["id"] != id || m["status"] != "stopped" {
		t.Errorf("stop: %d %s", a.status, a.body)
	}
	a = call(t, "POST", url+"/sandboxes/"+id+"/resume", k, "{}")
	if m = a.json(t); a.status != 202 || m["type"] != "sandbox.resuming" || m["status"] != "running" {
		t.Errorf("resume: %d %s", a.status, a.body)
	}
	a = call(t, "DELETE", url+"/sandboxes/"+id, k, "", sandboxd.ConfirmDeleteHeader, id)
	m = a.json(t)
	op, _ := m["operation"].(map[string]any)
	if a.status != 202 || m["type"] != "sandbox.deleting" || op["targetId"] != id || op["kind"] != "sandbox" || op["status"] != "completed" ||
		!regexp.MustCompile(`^bdop_[0-9a-f]{32}$`).MatchString(op["id"].(string)) {
		t.Errorf("delete: %d %s", a.status, a.body)
	}
	wantError(t, call(t, "GET", url+"/sandboxes/"+id, k, ""), 404, envelope(404, "not_found", "sandbox "+id+" not found", ""))
}

// Each key sees, uses and deletes only its own sandboxes; another's are not found.
func TestKeysApart(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{}, sandboxd.Limits{})
	a, b := keys[0], keys[1]
	id := create(t, url, a, `{}`)
	for _, c := range []struct{ method, path, header string }{
		{"GET", "/sandboxes/" + id, ""}, {"POST", "/sandboxes/" + id + "/commands", ""}, {"POST", "/sandboxes/" + id + "/stop", ""},
		{"GET", "/sandboxes/" + id + "/files?path=x", ""}, {"DELETE", "/sandboxes/" + id, id},
	} {
		got := call(t, c.method, url+c.path, b, `{"command":"true"}`, sandboxd.ConfirmDeleteHeader, c.header)
		wantError(t, got, 404, envelope(404, "not_found", "sandbox "+id+" not found", ""))
	}
	if got := call(t, "GET", url+"/sandboxes", b, "").json(t)["sandboxes"].([]any); len(got) != 0 {
		t.Errorf("key b lists %v", got)
	}
	if got := call(t, "GET", url+"/sandboxes", a, "").json(t)["sandboxes"].([]any); len(got) != 1 {
		t.Errorf("key a lists %v", got)
	}
}

func TestLimits(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{Sandboxes: 1, Commands: 1})
	k := keys[0]
	id := create(t, url, k, `{}`)
	wantError(t, call(t, "POST", url+"/sandboxes", k, `{}`), 429, envelope(429, "limit_reached",
		"this key may have 1 sandboxes at once and has 1: stop or finish some first",
		`{"current":1,"error":"limit_reached","limit":1,"resource":"sandboxes"}`))
	// A stopped sandbox does not count; resuming it does.
	call(t, "POST", url+"/sandboxes/"+id+"/stop", k, "")
	other := create(t, url, k, `{}`)
	wantError(t, call(t, "POST", url+"/sandboxes/"+id+"/resume", k, ""), 429, envelope(429, "limit_reached",
		"this key may have 1 sandboxes at once and has 1: stop or finish some first",
		`{"current":1,"error":"limit_reached","limit":1,"resource":"sandboxes"}`))

	// One command at a time: a detached command holds the slot until it ends.
	a := call(t, "POST", url+"/sandboxes/"+other+"/commands", k, `{"command":"sleep 60","detached":true}`)
	m := a.json(t)
	if a.status != 200 || m["type"] != "command.started" || m["processId"] != 1.0 || m["command"] != "sleep 60" {
		t.Fatalf("detached: %d %s", a.status, a.body)
	}
	wantError(t, call(t, "POST", url+"/sandboxes/"+other+"/commands", k, `{"command":"true"}`), 429, envelope(429, "limit_reached",
		"this key may have 1 commands at once and has 1: stop or finish some first",
		`{"current":1,"error":"limit_reached","limit":1,"resource":"commands"}`))
	if a = call(t, "POST", url+"/sandboxes/"+other+"/commands/1/kill", k, ""); string(a.body) != `{"ok":true,"type":"command.killed","success":true,"processId":1}`+"\n" {
		t.Errorf("kill: %d %s", a.status, a.body)
	}
	a = call(t, "GET", url+"/sandboxes/"+other+"/commands/1?tailBytes=10", k, "")
	if m = a.json(t); m["type"] != "command.status" || m["status"] != "exited" || m["running"] != false {
		t.Errorf("status after kill: %s", a.body)
	}
	if a = call(t, "POST", url+"/sandboxes/"+other+"/commands", k, `{"command":"echo free"}`); a.json(t)["stdout"] != "free\n" {
		t.Errorf("after the kill: %d %s", a.status, a.body)
	}
}

func TestIdempotencyKey(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{})
	k := keys[0]
	first := call(t, "POST", url+"/sandboxes", k, `{"name":"once"}`, "Idempotency-Key", "k1")
	again := call(t, "POST", url+"/sandboxes", k, `{"name":"once"}`, "Idempotency-Key", "k1")
	id1 := first.json(t)["sandbox"].(map[string]any)["id"]
	if id2 := again.json(t)["sandbox"].(map[string]any)["id"]; again.status != 202 || id1 != id2 {
		t.Errorf("same key and body: %v then %v", id1, id2)
	}
	wantError(t, call(t, "POST", url+"/sandboxes", k, `{"name":"twice"}`, "Idempotency-Key", "k1"), 409, envelope(409,
		"idempotency_key_reused", "this Idempotency-Key was used with another request body: use a new key", ""))
	if n := len(call(t, "GET", url+"/sandboxes", k, "").json(t)["sandboxes"].([]any)); n != 1 {
		t.Errorf("%d sandboxes; want 1", n)
	}
}

func TestPages(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{})
	k := keys[0]
	var ids []string
	for range 3 {
		ids = append(ids, create(t, url, k, `{}`))
	}
	page := func(q string) (got []string, next any, more any) {
		m := call(t, "GET", url+"/sandboxes?"+q, k, "").json(t)
		for _, s := range m["sandboxes"].([]any) {
			got = append(got, s.(map[string]any)["id"].(string))
		}
		pi := m["pageInfo"].(map[string]any)
		return got, pi["nextCursor"], pi["hasMore"]
	}
	got, next, more := page("limit=2&sort=asc")
	if !slices.Equal(got, ids[:2]) || more != true || next == nil {
		t.Fatalf("page 1 = %v %v %v; want %v", got, next, more, ids[:2])
	}
	got, next, more = page("limit=2&sort=asc&cursor=" + next.(string))
	if !slices.Equal(got, ids[2:]) || more != false || next != nil {
		t.Errorf("page 2 = %v %v %v; want %v", got, next, more, ids[2:])
	}
	if got, _, _ = page(""); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) {
		t.Errorf("default order %v; want newest first", got)
	}
}

func TestStream(t *testing.T) {
	url, keys := server(t, nil, sandboxd.Limits{})
	k := keys[0]
	id := create(t, url, k, `{}`)
	req, _ := http.NewRequest("POST", url+"/sandboxes/"+id+"/commands", strings.NewReader(`{"command":"echo a; sleep 0.3; echo b >&2; exit 3","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+k)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("stream answer %d %s", resp.StatusCode, ct)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	want := []string{`{"type":"started"}`, `{"type":"stdout","data":"a\n"}`, `{"type":"stderr","data":"b\n"}`,
		`{"type":"exit","exitCode":3,"success":false,"timedOut":false}`}
	if !slices.Equal(lines, want) {
		t.Errorf("frames\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	keys := &sandboxd.Keys{}
	secret, key, err := keys.Add("ci", sandboxd.Limits{Sandboxes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sbx_live_[0-9a-f]{40}$`).MatchString(secret) {
		t.Errorf("secret %q", secret)
	}
	if err := keys.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	data, _ := os.ReadFile(path)
	if fi.Mode().Perm() != 0o600 || strings.Contains(string(data), secret) || !strings.Contains(string(data), key.Hash) {
		t.Errorf("key file mode %v, holds the secret: %v", fi.Mode(), strings.Contains(string(data), secret))
	}
	back, err := sandboxd.ReadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := back.Lookup(secret); !ok || got.ID != key.ID || got.Limits.Sandboxes != 3 {
		t.Errorf("Lookup = %+v, %v", got, ok)
	}
	if _, ok := back.Lookup(secret[:len(secret)-1] + "0"); ok && !strings.HasSuffix(secret, "0") {
		t.Error("a wrong secret was accepted")
	}
	if err := back.Remove("ci"); err != nil || len(back.List()) != 0 {
		t.Errorf("Remove: %v, %d left", err, len(back.List()))
	}
}

// With a state file, a restarted server still knows whose sandboxes are whose.
func TestStateFile(t *testing.T) {
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	lb, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { deleteAll(t, lb); lb.Close() }()
	keys := &sandboxd.Keys{}
	secret, _, _ := keys.Add("k", sandboxd.Limits{})
	start := func() string {
		srv, err := sandboxd.New(lb, sandboxd.WithKeys(keys), sandboxd.WithStateFile(state), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		return hs.URL + sandboxd.Prefix
	}
	id := create(t, start(), secret, `{}`)
	if a := call(t, "GET", start()+"/sandboxes/"+id, secret, ""); a.status != 200 {
		t.Errorf("after a restart: %d %s", a.status, a.body)
	}
}

// deleteAll deletes every sandbox of the backend, so a test leaves no
// sandbox, mount or cgroup behind.
func deleteAll(t *testing.T, b *local.Backend) {
	t.Helper()
	ctx := context.Background()
	infos, err := b.List(ctx, sandbox.Filter{})
	if err != nil {
		t.Errorf("list: %v", err)
		return
	}
	for _, in := range infos {
		sb, err := b.Get(ctx, in.ID)
		if err == nil {
			err = sb.Delete(ctx)
		}
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("delete %s: %v", in.ID, err)
		}
	}
}
