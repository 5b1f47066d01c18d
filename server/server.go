package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/store"
)

// Option configures New.
type Option func(*config) error

type config struct {
	graphs    map[string]*registered
	order     []string
	saver     checkpoint.Saver
	store     store.Store
	workers   int
	apiKey    string
	origins   []string
	maxBody   int64
	stateFile string
	version   string
	postgres  *postgresConfig // WithPostgres: threads, runs and events in PostgreSQL, runs on River
	files     ThreadFiles     // WithThreadFiles
}

type registered struct {
	id          string
	handle      graphHandle
	description string
}

// WithSaver gives the server the saver its graphs were compiled with, so
// that deleting a thread deletes its checkpoints (checkpoint.ThreadDeleter)
// and copying a thread copies them (checkpoint.ThreadCopier).
func WithSaver(s checkpoint.Saver) Option {
	return func(c *config) error { c.saver = s; return nil }
}

// WithStore serves s at /store and gives it to every run (graph.StoreFrom).
func WithStore(s store.Store) Option {
	return func(c *config) error { c.store = s; return nil }
}

// WithWorkers sets how many runs execute at once (default: twice the
// number of CPUs). Other runs wait in a queue, in the order they came.
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("server: WithWorkers(%d): need at least one worker", n)
		}
		c.workers = n
		return nil
	}
}

// WithAPIKey requires every request but /ok to carry the key in the
// x-api-key header.
func WithAPIKey(key string) Option {
	return func(c *config) error { c.apiKey = key; return nil }
}

// WithCORS allows browsers on the given origins ("*" for any) to call the
// server.
func WithCORS(origins ...string) Option {
	return func(c *config) error { c.origins = append(c.origins, origins...); return nil }
}

// WithMaxBodyBytes caps the size of a request body (default 10 MiB); a
// larger body gets 413.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("server: WithMaxBodyBytes(%d): must be positive", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithStateFile keeps the server's own records (threads, their metadata and
// status, runs and queued runs) in a bbolt file at path, so that they, like
// the checkpoints, survive a restart; runs that were queued or cut short by
// a shutdown run when the server starts again. Without it they live in
// memory.
func WithStateFile(path string) Option {
	return func(c *config) error { c.stateFile = path; return nil }
}

// Server serves the Agent Server API over the registered graphs. Create it
// with New, serve it as an http.Handler, and stop it with Shutdown.
type Server struct {
	cfg     config
	mux     *http.ServeMux
	recs    *records
	sched   *scheduler
	closing chan struct{}
	once    sync.Once
	pg      *pgRuns // set with WithPostgres; then recs and sched are unused
}

// New returns a server for the graphs given with WithGraph. Its workers
// start at once; Shutdown stops them.
func New(opts ...Option) (*Server, error) {
	c := config{graphs: map[string]*registered{}, workers: 2 * runtime.GOMAXPROCS(0), maxBody: 10 << 20, version: "0.1.0"}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if len(c.graphs) == 0 {
		return nil, errors.New("server: no graphs: register at least one with server.WithGraph")
	}
	recs, err := openRecords(c.stateFile)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, mux: http.NewServeMux(), recs: recs, closing: make(chan struct{})}
	if c.postgres != nil {
		if s.pg, err = openPGRuns(s, c.postgres); err != nil {
			return nil, err
		}
		s.routes()
		return s, nil
	}
	s.routes()
	s.sched = newScheduler(s, c.workers)
	if err := s.sched.restore(); err != nil {
		s.sched.stop()
		recs.close()
		return nil, err
	}
	return s, nil
}

// Shutdown stops taking runs (new ones get 503) and stops the running ones
// at their next step boundary (graph.WithDrain): the step in flight
// finishes and is saved. A run still inside a step when ctx is done is
// cancelled, losing only that step. Stopped runs stay pending; with
// WithStateFile they, and every queued run, continue from their thread's
// last saved step when the server next starts. It closes the state file.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		if s.pg != nil {
			err = s.pg.shutdown(ctx)
			return
		}
		err = s.sched.shutdown(ctx)
		err = errors.Join(err, s.recs.close())
	})
	return err
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return
	}
	if s.cfg.apiKey != "" && r.URL.Path != "/ok" {
		got := r.Header.Get("x-api-key")
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.apiKey)) != 1 {
			writeError(w, errorf(http.StatusUnauthorized, "missing or wrong x-api-key header"))
			return
		}
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.maxBody)
	}
	s.mux.ServeHTTP(w, r)
}

// cors answers preflight requests and adds the CORS headers; it reports
// whether the request is fully answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.origins) == 0 {
		return false
	}
	allowed := slices.Contains(s.cfg.origins, "*") || slices.Contains(s.cfg.origins, origin)
	if !allowed {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "content-location, location, x-pagination-total, x-pagination-next")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(pattern string, h handlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	})
}

func (s *Server) routes() {
	s.handle("GET /ok", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, 200, map[string]bool{"ok": true})
		return nil
	})
	s.handle("GET /info", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, 200, map[string]any{
			"version": s.cfg.version, "context": "go",
			"flags": map[string]bool{"assistants": true, "crons": false, "langsmith": false, "thread_files": s.cfg.files != nil},
		})
		return nil
	})
	s.assistantRoutes()
	if s.pg != nil {
		s.pg.routes()
	} else {
		s.threadRoutes()
		s.runRoutes()
	}
	s.storeRoutes()
	s.fileRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("no route %s %s", r.Method, r.URL.Path))
	})
}

// graphFor finds the graph an assistant id names: a graph id, or the uuid5
// of one.
func (s *Server) graphFor(assistantID string) (*registered, error) {
	if g, ok := s.cfg.graphs[assistantID]; ok {
		return g, nil
	}
	for _, id := range s.cfg.order {
		if uuid5(graphNamespace, id) == strings.ToLower(assistantID) {
			return s.cfg.graphs[id], nil
		}
	}
	return nil, notFound("No assistant found for %q. Make sure the assistant ID is for a valid assistant or a valid graph ID.", assistantID)
}
