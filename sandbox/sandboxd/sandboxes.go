package sandboxd

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// The hosted API's bounds on a create.
const (
	maxTTLSeconds  = 2592000 // 30 days
	maxEnvVars     = 100
	maxEnvBytes    = 64 << 10
	maxNameLength  = 120
	maxIdemKeyLen  = 255
	idemKeyRetains = 24 * time.Hour
)

// apiSandbox is the API's sandbox object. limits and hostNetwork are this server's additions, exact where
// vcpu and memoryGB are whole numbers.
type apiSandbox struct {
	ID                string         `json:"id"`
	Name              string         `json:"name"`
	State             string         `json:"state"`
	Error             *string        `json:"error"`
	Type              string         `json:"type"`
	VCPU              int            `json:"vcpu"`
	MemoryGB          int            `json:"memoryGB"`
	CreatedAt         time.Time      `json:"createdAt"`
	UpdatedAt         time.Time      `json:"updatedAt"`
	ArchiveAfter      *time.Time     `json:"archiveAfter"`
	DesktopAvailable  bool           `json:"desktopAvailable"`
	SnapshotAvailable bool           `json:"snapshotAvailable"`
	Limits            sandbox.Limits `json:"limits"`
	HostNetwork       bool           `json:"hostNetwork"`
}

func toAPI(in sandbox.Info) apiSandbox {
	a := apiSandbox{ID: in.ID, Name: in.Name, State: string(in.State), Type: string(in.Size),
		VCPU: int(math.Ceil(in.Limits.CPUs)), MemoryGB: int(math.Round(float64(in.Limits.MemoryBytes) / (1 << 30))),
		CreatedAt: in.CreatedAt.UTC(), UpdatedAt: in.UpdatedAt.UTC(), Limits: in.Limits, HostNetwork: in.HostNetwork}
	if a.MemoryGB == 0 && in.Limits.MemoryBytes > 0 {
		a.MemoryGB = 1
	}
	if !in.ExpiresAt.IsZero() {
		t := in.ExpiresAt.UTC()
		a.ArchiveAfter = &t
	}
	return a
}

type infoBody struct {
	OK      bool       `json:"ok"`
	Type    string     `json:"type"`
	Sandbox apiSandbox `json:"sandbox"`
}

type createdBody struct {
	OK         bool       `json:"ok"`
	Type       string     `json:"type"`
	Status     string     `json:"status"`
	TTLSeconds int64      `json:"ttlSeconds"`
	Sandbox    apiSandbox `json:"sandbox"`
}

type actionBody struct {
	OK      bool       `json:"ok"`
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Status  string     `json:"status"`
	Sandbox apiSandbox `json:"sandbox"`
}

type pageInfo struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
	Limit      int     `json:"limit"`
}

type listBody struct {
	OK        bool         `json:"ok"`
	Type      string       `json:"type"`
	Sandboxes []apiSandbox `json:"sandboxes"`
	PageInfo  pageInfo     `json:"pageInfo"`
}

type deletingBody struct {
	OK        bool      `json:"ok"`
	Type      string    `json:"type"`
	Operation operation `json:"operation"`
}

type operation struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	TargetID     string    `json:"targetId"`
	Reason       string    `json:"reason"`
	Status       string    `json:"status"`
	Stage        string    `json:"stage"`
	AttemptCount int       `json:"attemptCount"`
	RequestedAt  time.Time `json:"requestedAt"`
	CompletedAt  time.Time `json:"completedAt"`
}

// list serves GET /sandboxes: the key's sandboxes, a page at a time, newest first unless sort=asc.
func (s *Server) list(rq *request) {
	q := rq.r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			s.fail(rq, http.StatusBadRequest, "invalid_limit", "limit must be a whole number from 1 to 200", nil)
			return
		}
		limit = n
	}
	sortOrder := q.Get("sort")
	if sortOrder == "" {
		sortOrder = "desc"
	}
	if sortOrder != "asc" && sortOrder != "desc" {
		s.fail(rq, http.StatusBadRequest, "invalid_sort", "sort must be asc or desc", nil)
		return
	}
	var after *cursor
	if v := q.Get("cursor"); v != "" {
		c, ok := parseCursor(v)
		if !ok {
			s.fail(rq, http.StatusBadRequest, "invalid_cursor", "cursor is not one this server gave out: start again without it", nil)
			return
		}
		after = &c
	}
	infos, err := s.backend.List(rq.r.Context(), sandbox.Filter{State: sandbox.State(q.Get("state")), Name: q.Get("name")})
	if err != nil {
		s.backendError(rq, err, "sandboxes")
		return
	}
	s.mu.Lock()
	mine := infos[:0]
	for _, in := range infos {
		if s.owners[in.ID] == rq.key.ID {
			mine = append(mine, in)
		}
	}
	s.mu.Unlock()
	cmp := func(a, b sandbox.Info) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	slices.SortFunc(mine, cmp)
	if sortOrder == "desc" {
		slices.Reverse(mine)
	}
	if after != nil {
		i := slices.IndexFunc(mine, func(in sandbox.Info) bool {
			c := cmp(in, sandbox.Info{CreatedAt: after.createdAt, ID: after.id})
			return (sortOrder == "asc" && c > 0) || (sortOrder == "desc" && c < 0)
		})
		if i < 0 {
			i = len(mine)
		}
		mine = mine[i:]
	}
	body := listBody{OK: true, Type: "sandbox.list", Sandboxes: []apiSandbox{}, PageInfo: pageInfo{Limit: limit}}
	for i, in := range mine {
		if i == limit {
			body.PageInfo.HasMore = true
			next := cursor{createdAt: mine[i-1].CreatedAt, id: mine[i-1].ID}.String()
			body.PageInfo.NextCursor = &next
			break
		}
		body.Sandboxes = append(body.Sandboxes, toAPI(in))
	}
	s.reply(rq, http.StatusOK, body)
}

// cursor is the position after which a page starts: the last sandbox of the previous page.
type cursor struct {
	createdAt time.Time
	id        string
}

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.createdAt.UTC().Format(time.RFC3339Nano) + "|" + c.id))
}

func parseCursor(v string) (cursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return cursor{}, false
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || id == "" {
		return cursor{}, false
	}
	return cursor{createdAt: t, id: id}, true
}

type createRequest struct {
	Type        string            `json:"type"`
	TTLSeconds  json.RawMessage   `json:"ttlSeconds"`
	Name        string            `json:"name"`
	Env         map[string]string `json:"env"`
	HostNetwork bool              `json:"hostNetwork"`
	Environment string            `json:"environment"`
	From        string            `json:"from"`
	SetupScript string            `json:"setupScript"`
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// idemRecord remembers a create made under an Idempotency-Key.
type idemRecord struct {
	bodyHash  [32]byte
	sandboxID string // empty while the create runs
	ttl       int64
	expires   time.Time
}

// create serves POST /sandboxes.
func (s *Server) create(rq *request) {
	var req createRequest
	data, ok := s.decode(rq, s.maxBody, &req, true)
	if !ok {
		return
	}
	opts, ttl, ok := s.createOptions(rq, req)
	if !ok {
		return
	}
	idemKey := rq.r.Header.Get("Idempotency-Key")
	if len(idemKey) > maxIdemKeyLen {
		s.fail(rq, http.StatusBadRequest, "invalid_idempotency_key", "Idempotency-Key must be at most 255 characters", nil)
		return
	}
	var rec *idemRecord
	if idemKey != "" {
		var done bool
		if rec, done = s.claimIdempotencyKey(rq, idemKey, sha256.Sum256(bytes.TrimSpace(data)), ttl); done {
			return
		}
	}
	sb, err := s.createLimited(rq, opts)
	if err != nil || sb == nil {
		if rec != nil {
			s.mu.Lock()
			delete(s.idem, rq.key.ID+"\x00"+idemKey)
			s.mu.Unlock()
		}
		if err != nil {
			s.backendError(rq, err, "sandbox")
		}
		return
	}
	s.mu.Lock()
	s.owners[sb.ID()] = rq.key.ID
	if rec != nil {
		rec.sandboxID = sb.ID()
	}
	err = s.saveState()
	s.mu.Unlock()
	if err != nil {
		s.logger.Error("sandboxd: save state", "err", err, "requestId", rq.id)
	}
	in, err := sb.Info(context.WithoutCancel(rq.r.Context()))
	if err != nil {
		s.backendError(rq, err, "sandbox")
		return
	}
	s.reply(rq, http.StatusAccepted, createdBody{OK: true, Type: "sandbox.created", Status: "ready", TTLSeconds: ttl, Sandbox: toAPI(in)})
}

// createOptions validates a create request as the hosted API does.
func (s *Server) createOptions(rq *request, req createRequest) (sandbox.CreateOptions, int64, bool) {
	switch req.Type {
	case "", "small", "default", "large":
	default:
		s.fail(rq, http.StatusBadRequest, "invalid_type", "type must be small, default or large", nil)
		return sandbox.CreateOptions{}, 0, false
	}
	ttl := int64(3600)
	switch t := strings.TrimSpace(string(req.TTLSeconds)); t {
	case "":
	case "null", `"infinite"`:
		// No auto-stop is not something a backend here offers; the longest TTL the API allows stands in.
		ttl = maxTTLSeconds
	default:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 1 || n > maxTTLSeconds {
			s.fail(rq, http.StatusBadRequest, "invalid_ttl", "ttlSeconds must be a whole number from 1 to 2592000, or null", nil)
			return sandbox.CreateOptions{}, 0, false
		}
		ttl = n
	}
	size := 0
	for k, v := range req.Env {
		size += len(k) + len(v)
		if !envKey.MatchString(k) {
			s.fail(rq, http.StatusBadRequest, "invalid_env", "environment variable names must match [A-Za-z_][A-Za-z0-9_]{0,127}: "+strconv.Quote(k), nil)
			return sandbox.CreateOptions{}, 0, false
		}
	}
	if len(req.Env) > maxEnvVars || size > maxEnvBytes {
		s.fail(rq, http.StatusBadRequest, "invalid_env", "at most 100 environment variables and 64 KB in all", nil)
		return sandbox.CreateOptions{}, 0, false
	}
	if req.Environment != "" && req.Environment != "base" {
		s.fail(rq, http.StatusBadRequest, "unknown_environment", "this server has only the base environment", nil)
		return sandbox.CreateOptions{}, 0, false
	}
	if req.From != "" || req.SetupScript != "" {
		s.fail(rq, http.StatusNotImplemented, "not_implemented", "this server has no snapshots and runs no setup scripts: run the script with a command after the create", nil)
		return sandbox.CreateOptions{}, 0, false
	}
	name := req.Name
	if len(name) > maxNameLength {
		name = name[:maxNameLength]
	}
	return sandbox.CreateOptions{Name: name, Size: sandbox.Size(req.Type), TTL: time.Duration(ttl) * time.Second,
		Env: req.Env, HostNetwork: req.HostNetwork}, ttl, true
}

// claimIdempotencyKey returns the record a new create fills in, or answers the request itself (done) when
// the key was used before.
func (s *Server) claimIdempotencyKey(rq *request, key string, hash [32]byte, ttl int64) (rec *idemRecord, done bool) {
	now := s.now()
	mapKey := rq.key.ID + "\x00" + key
	s.mu.Lock()
	for k, r := range s.idem {
		if now.After(r.expires) {
			delete(s.idem, k)
		}
	}
	old := s.idem[mapKey]
	if old == nil {
		rec = &idemRecord{bodyHash: hash, ttl: ttl, expires: now.Add(idemKeyRetains)}
		s.idem[mapKey] = rec
		s.mu.Unlock()
		return rec, false
	}
	s.mu.Unlock()
	switch {
	case old.bodyHash != hash:
		s.fail(rq, http.StatusConflict, "idempotency_key_reused", "this Idempotency-Key was used with another request body: use a new key", nil)
	case old.sandboxID == "":
		s.fail(rq, http.StatusConflict, "idempotency_in_progress", "a create with this Idempotency-Key is still running: retry shortly with the same key", nil)
	default:
		sb, err := s.backend.Get(rq.r.Context(), old.sandboxID)
		if err != nil {
			s.backendError(rq, err, "sandbox "+old.sandboxID)
			return nil, true
		}
		in, err := sb.Info(rq.r.Context())
		if err != nil {
			s.backendError(rq, err, "sandbox "+old.sandboxID)
			return nil, true
		}
		s.reply(rq, http.StatusAccepted, createdBody{OK: true, Type: "sandbox.created", Status: "ready", TTLSeconds: old.ttl, Sandbox: toAPI(in)})
	}
	return nil, true
}

// createLimited creates a sandbox unless the key is at its limit of running sandboxes (then it answers 429
// and returns nil, nil). Creates of one key are serialized so that the count cannot be raced. A client that
// goes away does not cancel a create: its retry under the same Idempotency-Key finds the sandbox.
func (s *Server) createLimited(rq *request, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	ctx := context.WithoutCancel(rq.r.Context())
	s.mu.Lock()
	m := s.creating[rq.key.ID]
	if m == nil {
		m = &sync.Mutex{}
		s.creating[rq.key.ID] = m
	}
	s.mu.Unlock()
	m.Lock()
	defer m.Unlock()
	n, err := s.running(ctx, rq.key.ID)
	if err != nil {
		return nil, err
	}
	if limit := s.limits(rq.key).Sandboxes; n >= limit {
		s.limitReached(rq, "sandboxes", limit, n)
		return nil, nil
	}
	return s.backend.Create(ctx, opts)
}

// info serves GET /sandboxes/{id}.
func (s *Server) info(rq *request, id string) {
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	in, err := sb.Info(rq.r.Context())
	if err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.reply(rq, http.StatusOK, infoBody{OK: true, Type: "sandbox.info", Sandbox: toAPI(in)})
}

// stop serves POST /sandboxes/{id}/stop. The body ({"force": ...}) changes nothing here.
func (s *Server) stop(rq *request, id string) {
	var req struct {
		Force bool `json:"force"`
	}
	if _, ok := s.decode(rq, s.maxBody, &req, true); !ok {
		return
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	ctx := context.WithoutCancel(rq.r.Context())
	if err := sb.Stop(ctx); err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.mu.Lock()
	delete(s.commands, id) // Stop killed them
	s.mu.Unlock()
	s.action(rq, sb, "sandbox.stopping")
}

// resume serves POST /sandboxes/{id}/resume, within the key's limit of running sandboxes.
func (s *Server) resume(rq *request, id string) {
	var req struct{}
	if _, ok := s.decode(rq, s.maxBody, &req, true); !ok {
		return
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	ctx := context.WithoutCancel(rq.r.Context())
	in, err := sb.Info(ctx)
	if err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	if in.State != sandbox.StateRunning {
		n, err := s.running(ctx, rq.key.ID)
		if err != nil {
			s.backendError(rq, err, "sandboxes")
			return
		}
		if limit := s.limits(rq.key).Sandboxes; n >= limit {
			s.limitReached(rq, "sandboxes", limit, n)
			return
		}
	}
	if err := sb.Resume(ctx); err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.action(rq, sb, "sandbox.resuming")
}

func (s *Server) action(rq *request, sb sandbox.Sandbox, typ string) {
	in, err := sb.Info(context.WithoutCancel(rq.r.Context()))
	if err != nil {
		s.backendError(rq, err, "sandbox "+sb.ID())
		return
	}
	s.reply(rq, http.StatusAccepted, actionBody{OK: true, Type: typ, ID: in.ID, Status: string(in.State), Sandbox: toAPI(in)})
}

// delete serves DELETE /sandboxes/{id}, which needs the id repeated in ConfirmDeleteHeader.
func (s *Server) delete(rq *request, id string) {
	if got := rq.r.Header.Get(ConfirmDeleteHeader); got != id {
		s.fail(rq, http.StatusConflict, "delete_confirmation_required",
			"set "+ConfirmDeleteHeader+" to the id of the sandbox to delete: "+id, map[string]any{"targetId": id})
		return
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	requested := s.now().UTC()
	if err := sb.Delete(context.WithoutCancel(rq.r.Context())); err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.forget(id)
	var opID [16]byte
	rand.Read(opID[:])
	s.reply(rq, http.StatusAccepted, deletingBody{OK: true, Type: "sandbox.deleting", Operation: operation{
		ID: "bdop_" + hex.EncodeToString(opID[:]), Kind: "sandbox", TargetID: id, Reason: "explicit",
		Status: "completed", Stage: "completed", AttemptCount: 1, RequestedAt: requested, CompletedAt: s.now().UTC()}})
}
