package sandboxd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Prefix is where the API is served; a client's base URL is http(s)://host:port/api/v1.
const Prefix = "/api/v1"

// ConfirmDeleteHeader must carry the sandbox id on DELETE /sandboxes/{id}.
const ConfirmDeleteHeader = "X-Ascii-Confirm-Delete"

// Server serves a sandbox.Backend over the Sandboxer API v1. It is an http.Handler; its methods are safe for
// concurrent use. It starts no goroutine of its own, so there is nothing to close; closing the backend is
// the caller's business, and shutting the HTTP server down stops no sandbox.
type Server struct {
	backend   sandbox.Backend
	keys      atomic.Pointer[Keys]
	defaults  Limits
	maxBody   int64
	maxFile   int64
	stateFile string
	logger    *slog.Logger
	now       func() time.Time

	mu       sync.Mutex
	owners   map[string]string        // sandbox id -> key id
	idem     map[string]*idemRecord   // key id + "\x00" + Idempotency-Key
	creating map[string]*sync.Mutex   // per key: one create at a time, so the sandbox limit holds
	inflight map[string]int           // per key: commands being run by a request
	commands map[string]*sandboxProcs // per sandbox: detached commands by process id
}

// Option configures New.
type Option func(*Server)

// WithKeys sets the API keys; without them every request is refused with 401. SetKeys replaces them later.
func WithKeys(k *Keys) Option { return func(s *Server) { s.keys.Store(k) } }

// WithDefaultLimits sets the limits of keys that set none (default 10 running sandboxes, 16 commands).
func WithDefaultLimits(l Limits) Option { return func(s *Server) { s.defaults = l } }

// WithMaxBodyBytes caps request bodies other than file writes (default 1 MiB); larger ones get 413.
func WithMaxBodyBytes(n int64) Option { return func(s *Server) { s.maxBody = n } }

// WithMaxFileBytes caps the size of a file written through the API (default sandbox.MaxDownloadSize).
func WithMaxFileBytes(n int64) Option { return func(s *Server) { s.maxFile = n } }

// WithStateFile keeps which key owns which sandbox in a file, so that a restarted server still knows. Without
// it ownership lives in memory, and a restart leaves the old sandboxes to no key.
func WithStateFile(path string) Option { return func(s *Server) { s.stateFile = path } }

// WithLogger sets where requests and internal errors are logged (default slog.Default()). Keys are logged by
// id only.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// New returns a Server for the backend. It fails when the state file exists but cannot be read.
func New(backend sandbox.Backend, opts ...Option) (*Server, error) {
	s := &Server{backend: backend, defaults: Limits{Sandboxes: 10, Commands: 16}, maxBody: 1 << 20,
		maxFile: sandbox.MaxDownloadSize, logger: slog.Default(), now: time.Now,
		owners: map[string]string{}, idem: map[string]*idemRecord{}, creating: map[string]*sync.Mutex{},
		inflight: map[string]int{}, commands: map[string]*sandboxProcs{}}
	for _, o := range opts {
		o(s)
	}
	if s.stateFile != "" {
		data, err := os.ReadFile(s.stateFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read state file: %w", err)
		default:
			var st stateFileBody
			if err := json.Unmarshal(data, &st); err != nil {
				return nil, fmt.Errorf("state file %s: %w", s.stateFile, err)
			}
			for id, key := range st.Owners {
				s.owners[id] = key
			}
		}
	}
	return s, nil
}

// SetKeys replaces the API keys, as after the key file changed.
func (s *Server) SetKeys(k *Keys) { s.keys.Store(k) }

type stateFileBody struct {
	Owners map[string]string `json:"owners"` // sandbox id -> key id
}

// saveState writes the ownership table; the caller holds s.mu.
func (s *Server) saveState() error {
	if s.stateFile == "" {
		return nil
	}
	data, err := json.Marshal(stateFileBody{Owners: s.owners})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.stateFile), "."+filepath.Base(s.stateFile)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.stateFile)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// request is one call being served.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	id     string
	key    Key
	status int
}

func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// ServeHTTP authenticates the request, routes it and answers in the API's envelopes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rq := &request{w: w, r: r, id: newRequestID()}
	w.Header().Set("X-Request-Id", rq.id)
	w.Header().Set("Cache-Control", "no-store")
	defer func() {
		s.logger.Info("sandboxd: request", "method", r.Method, "path", r.URL.Path, "status", rq.status,
			"key", rq.key.ID, "requestId", rq.id, "duration", time.Since(start).Round(time.Microsecond))
	}()
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key, found := s.keys.Load().Lookup(strings.TrimSpace(secret))
	if !ok || !found {
		s.fail(rq, http.StatusUnauthorized, "unauthorized", "missing or unknown API key: send Authorization: Bearer sbx_live_...", nil)
		return
	}
	rq.key = key
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix+"/")
	if !ok {
		s.fail(rq, http.StatusNotFound, "not_found", "no such route: the API is under "+Prefix, nil)
		return
	}
	s.route(rq, strings.Split(strings.TrimSuffix(rest, "/"), "/"))
}

// route dispatches on the path's segments below the prefix.
func (s *Server) route(rq *request, seg []string) {
	m := rq.r.Method
	if seg[0] != "sandboxes" {
		s.fail(rq, http.StatusNotFound, "not_found", "no such route", nil)
		return
	}
	var h func(*request, string)
	var allowed string
	switch len(seg) {
	case 1:
		allowed = "GET, POST"
		switch m {
		case http.MethodGet:
			s.list(rq)
			return
		case http.MethodPost:
			s.create(rq)
			return
		}
	case 2:
		allowed = "GET, DELETE"
		switch m {
		case http.MethodGet:
			h = s.info
		case http.MethodDelete:
			h = s.delete
		}
	case 3:
		switch seg[2] {
		case "stop":
			allowed, h = "POST", when(m == http.MethodPost, s.stop)
		case "resume":
			allowed, h = "POST", when(m == http.MethodPost, s.resume)
		case "commands":
			allowed, h = "POST", when(m == http.MethodPost, s.command)
		case "artifacts":
			allowed, h = "GET", when(m == http.MethodGet, s.artifact)
		case "files":
			allowed = "GET, PUT, DELETE"
			switch m {
			case http.MethodGet:
				h = s.readFile
			case http.MethodPut:
				h = s.writeFile
			case http.MethodDelete:
				h = s.removeFile
			}
		}
	case 4:
		switch {
		case seg[2] == "commands":
			allowed, h = "GET", when(m == http.MethodGet, func(rq *request, id string) { s.commandStatus(rq, id, seg[3]) })
		case seg[2] == "files" && seg[3] == "list":
			allowed, h = "GET", when(m == http.MethodGet, s.listFiles)
		}
	case 5:
		if seg[2] == "commands" && seg[4] == "kill" {
			allowed, h = "POST", when(m == http.MethodPost, func(rq *request, id string) { s.killCommand(rq, id, seg[3]) })
		}
	}
	switch {
	case h != nil && seg[1] != "":
		h(rq, seg[1])
	case allowed != "" && seg[1] != "":
		rq.w.Header().Set("Allow", allowed)
		s.fail(rq, http.StatusMethodNotAllowed, "method_not_allowed", m+" is not allowed here: use "+allowed, nil)
	default:
		s.fail(rq, http.StatusNotFound, "not_found", "no such route", nil)
	}
}

func when(ok bool, h func(*request, string)) func(*request, string) {
	if ok {
		return h
	}
	return nil
}

// errorBody is the API's error envelope, in its field order.
type errorBody struct {
	OK        bool        `json:"ok"`
	Type      string      `json:"type"`
	Status    int         `json:"status"`
	Code      string      `json:"code"`
	Message   string      `json:"message"`
	Error     errorDetail `json:"error"`
	RequestID string      `json:"requestId"`
}

type errorDetail struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Status  int            `json:"status"`
	Details map[string]any `json:"details"`
}

// fail answers with the error envelope; details always hold the code under "error", as the API's do.
func (s *Server) fail(rq *request, status int, code, msg string, details map[string]any) {
	d := map[string]any{"error": code}
	for k, v := range details {
		d[k] = v
	}
	s.reply(rq, status, errorBody{Type: "sandbox.error", Status: status, Code: code, Message: msg,
		Error: errorDetail{Code: code, Message: msg, Status: status, Details: d}, RequestID: rq.id})
}

func (s *Server) reply(rq *request, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.logger.Error("sandboxd: encode answer", "err", err, "requestId", rq.id)
		status, data = http.StatusInternalServerError, []byte(`{"ok":false}`)
	}
	rq.status = status
	rq.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	rq.w.WriteHeader(status)
	rq.w.Write(append(data, '\n'))
}

// backendError answers for an error of the backend. Messages of sentinel errors are the backend's own (they
// name sandbox paths, not host ones); anything else is logged and answered with the request id only.
func (s *Server) backendError(rq *request, err error, what string) {
	switch {
	case rq.r.Context().Err() != nil && errors.Is(err, rq.r.Context().Err()):
		rq.status = 499 // the client went away; there is nobody to answer
	case errors.Is(err, sandbox.ErrNotFound):
		s.fail(rq, http.StatusNotFound, "not_found", what+" not found", nil)
	case errors.Is(err, fs.ErrNotExist):
		s.fail(rq, http.StatusNotFound, "file_not_found", err.Error(), nil)
	case errors.Is(err, sandbox.ErrStopped):
		s.fail(rq, http.StatusConflict, "machine_not_running", "the sandbox is stopped: resume it first", nil)
	case errors.Is(err, sandbox.ErrInvalidPath):
		s.fail(rq, http.StatusBadRequest, "invalid_path", err.Error(), nil)
	case errors.Is(err, sandbox.ErrInvalidArgument):
		s.fail(rq, http.StatusBadRequest, "invalid_request", err.Error(), nil)
	case errors.Is(err, sandbox.ErrTooLarge):
		s.fail(rq, http.StatusRequestEntityTooLarge, "file_too_large", err.Error(), nil)
	case errors.Is(err, sandbox.ErrQuota):
		s.fail(rq, http.StatusInsufficientStorage, "quota_exceeded", err.Error(), nil)
	case errors.Is(err, errors.ErrUnsupported):
		s.fail(rq, http.StatusNotImplemented, "not_implemented", "this server's sandbox backend cannot do that", nil)
	case errors.Is(err, sandbox.ErrUnsupported):
		s.logger.Error("sandboxd: backend cannot isolate", "err", err, "requestId", rq.id)
		s.fail(rq, http.StatusServiceUnavailable, "out_of_capacity", "this server cannot run sandboxes right now", nil)
	default:
		s.logger.Error("sandboxd: backend failed", "err", err, "requestId", rq.id)
		s.fail(rq, http.StatusInternalServerError, "internal_error", "internal error: the server's log has it under this request id", nil)
	}
}

// readBody reads a request body of at most limit bytes; an empty body is nil. On failure it has answered.
func (s *Server) readBody(rq *request, limit int64) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(rq.w, rq.r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.fail(rq, http.StatusRequestEntityTooLarge, "payload_too_large",
				fmt.Sprintf("request body larger than %d bytes", limit), map[string]any{"limit": limit})
		} else {
			s.fail(rq, http.StatusBadRequest, "invalid_json", "the request body could not be read", nil)
		}
		return nil, false
	}
	return data, true
}

// decode reads a JSON body into v; an empty body leaves v as it is when optional.
func (s *Server) decode(rq *request, limit int64, v any, optional bool) ([]byte, bool) {
	data, ok := s.readBody(rq, limit)
	if !ok {
		return nil, false
	}
	if len(strings.TrimSpace(string(data))) == 0 && optional {
		return data, true
	}
	if err := json.Unmarshal(data, v); err != nil {
		s.fail(rq, http.StatusBadRequest, "invalid_json", "Request body must be valid JSON.", nil)
		return nil, false
	}
	return data, true
}

// owned returns the key's sandbox, or answers 404: another key's sandbox does not exist for this one.
func (s *Server) owned(rq *request, id string) (sandbox.Sandbox, bool) {
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	if owner == "" || owner != rq.key.ID {
		s.fail(rq, http.StatusNotFound, "not_found", "sandbox "+id+" not found", nil)
		return nil, false
	}
	sb, err := s.backend.Get(rq.r.Context(), id)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			s.forget(id)
		}
		s.backendError(rq, err, "sandbox "+id)
		return nil, false
	}
	return sb, true
}

// forget drops what the server knows of a sandbox that is gone.
func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owners, id)
	delete(s.commands, id)
	if err := s.saveState(); err != nil {
		s.logger.Error("sandboxd: save state", "err", err)
	}
}

func (s *Server) limits(k Key) Limits {
	l := s.defaults
	if k.Limits.Sandboxes > 0 {
		l.Sandboxes = k.Limits.Sandboxes
	}
	if k.Limits.Commands > 0 {
		l.Commands = k.Limits.Commands
	}
	return l
}

// running counts the key's running sandboxes.
func (s *Server) running(ctx context.Context, keyID string) (int, error) {
	infos, err := s.backend.List(ctx, sandbox.Filter{State: sandbox.StateRunning})
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, in := range infos {
		if s.owners[in.ID] == keyID {
			n++
		}
	}
	return n, nil
}

func (s *Server) limitReached(rq *request, what string, limit, current int) {
	s.fail(rq, http.StatusTooManyRequests, "limit_reached",
		fmt.Sprintf("this key may have %d %s at once and has %d: stop or finish some first", limit, what, current),
		map[string]any{"resource": what, "limit": limit, "current": current})
}
