package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// startTime stamps the assistants, which exist as long as the server does.
var startTime = now()

type assistant struct {
	AssistantID string         `json:"assistant_id"`
	Version     int            `json:"version"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	CreatedAt   wireTime       `json:"created_at"`
	UpdatedAt   wireTime       `json:"updated_at"`
	GraphID     string         `json:"graph_id"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
}

func (s *Server) assistantOf(g *registered) assistant {
	a := assistant{AssistantID: uuid5(graphNamespace, g.id), Version: 1, Config: map[string]any{}, Context: map[string]any{},
		CreatedAt: startTime, UpdatedAt: startTime, GraphID: g.id, Metadata: map[string]any{"created_by": "system"}, Name: g.id}
	if g.description != "" {
		d := g.description
		a.Description = &d
	}
	return a
}

func (s *Server) assistantRoutes() {
	s.handle("POST /assistants/search", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			GraphID  string         `json:"graph_id"`
			Name     string         `json:"name"`
			Metadata map[string]any `json:"metadata"`
			Limit    *int           `json:"limit"`
			Offset   int            `json:"offset"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		out := []assistant{}
		for _, id := range s.cfg.order {
			a := s.assistantOf(s.cfg.graphs[id])
			if body.GraphID != "" && body.GraphID != id {
				continue
			}
			if body.Name != "" && !strings.Contains(strings.ToLower(a.Name), strings.ToLower(body.Name)) {
				continue
			}
			if !contains(a.Metadata, body.Metadata) {
				continue
			}
			out = append(out, a)
		}
		out = page(out, body.Offset, body.Limit, 10)
		w.Header().Set("X-Pagination-Total", strconv.Itoa(len(out)))
		writeJSON(w, 200, out)
		return nil
	})
	s.handle("POST /assistants/count", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, 200, len(s.cfg.order))
		return nil
	})
	s.handle("GET /assistants/{id}", func(w http.ResponseWriter, r *http.Request) error {
		g, err := s.graphFor(r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, 200, s.assistantOf(g))
		return nil
	})
	s.handle("GET /assistants/{id}/graph", func(w http.ResponseWriter, r *http.Request) error {
		g, err := s.graphFor(r.PathValue("id"))
		if err != nil {
			return err
		}
		d := g.handle.drawing()
		type node struct {
			ID       string         `json:"id"`
			Type     string         `json:"type"`
			Data     string         `json:"data"`
			Metadata map[string]any `json:"metadata,omitempty"`
		}
		type edge struct {
			Source      string `json:"source"`
			Target      string `json:"target"`
			Conditional bool   `json:"conditional,omitempty"`
			Data        string `json:"data,omitempty"`
		}
		out := struct {
			Nodes []node `json:"nodes"`
			Edges []edge `json:"edges"`
		}{Nodes: []node{}, Edges: []edge{}}
		for _, n := range d.Nodes {
			out.Nodes = append(out.Nodes, node{ID: n, Type: "runnable", Data: n})
		}
		for _, e := range d.Edges {
			out.Edges = append(out.Edges, edge{Source: e.From, Target: e.To, Conditional: e.Conditional, Data: e.Label})
		}
		writeJSON(w, 200, out)
		return nil
	})
	s.handle("GET /assistants/{id}/schemas", func(w http.ResponseWriter, r *http.Request) error {
		g, err := s.graphFor(r.PathValue("id"))
		if err != nil {
			return err
		}
		props := map[string]any{}
		for _, k := range g.handle.keys() {
			props[k.Name] = typeSchema(k.Type, k.Type == messagesType)
		}
		state := map[string]any{"type": "object", "title": g.id, "properties": props}
		empty := map[string]any{"type": "object", "properties": map[string]any{}}
		writeJSON(w, 200, map[string]any{"graph_id": g.id, "input_schema": state, "output_schema": state, "state_schema": state, "config_schema": empty, "context_schema": empty})
		return nil
	})
	s.handle("GET /assistants/{id}/subgraphs", func(w http.ResponseWriter, r *http.Request) error {
		if _, err := s.graphFor(r.PathValue("id")); err != nil {
			return err
		}
		writeJSON(w, 200, map[string]any{})
		return nil
	})
}

// typeSchema is a JSON schema of a key's Go type, good enough for forms.
func typeSchema(t reflect.Type, messages bool) map[string]any {
	if messages {
		return map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"type": map[string]any{"type": "string", "enum": []string{"human", "ai", "tool", "system"}}, "content": map[string]any{"type": "string"}}}}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem(), false)}
	case reflect.Map, reflect.Struct:
		return map[string]any{"type": "object"}
	case reflect.Pointer:
		return typeSchema(t.Elem(), false)
	}
	return map[string]any{}
}

func page[T any](items []T, offset int, limit *int, def int) []T {
	n := def
	if limit != nil {
		n = *limit
	}
	if offset < 0 {
		offset = 0
	}
	if offset >= len(items) {
		return []T{}
	}
	items = items[offset:]
	if n >= 0 && n < len(items) {
		items = items[:n]
	}
	return items
}

// contains reports whether super holds every key of sub with an equal
// value (objects compared recursively), as the server's metadata filters.
func contains(super, sub map[string]any) bool {
	for k, v := range sub {
		sv, ok := super[k]
		if !ok {
			return false
		}
		if vm, ok := v.(map[string]any); ok {
			sm, ok := sv.(map[string]any)
			if !ok || !contains(sm, vm) {
				return false
			}
			continue
		}
		a, _ := json.Marshal(sv)
		b, _ := json.Marshal(v)
		if string(a) != string(b) {
			return false
		}
	}
	return true
}

func validID(field, id string) error {
	if id == "" || len(id) > 256 || strings.ContainsAny(id, "/?#") {
		return badField(field, "invalid id %q", id)
	}
	return nil
}

func (s *Server) threadRoutes() {
	s.handle("POST /threads", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			ThreadID string         `json:"thread_id"`
			Metadata map[string]any `json:"metadata"`
			IfExists string         `json:"if_exists"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		if body.ThreadID == "" {
			body.ThreadID = newUUID7()
		} else if err := validID("thread_id", body.ThreadID); err != nil {
			return err
		}
		switch body.IfExists {
		case "", "raise", "do_nothing":
		default:
			return badField("if_exists", "unknown value %q: use raise or do_nothing", body.IfExists)
		}
		s.recs.mu.Lock()
		defer s.recs.mu.Unlock()
		if t := s.recs.threads[body.ThreadID]; t != nil {
			if body.IfExists == "do_nothing" {
				writeJSON(w, 200, t)
				return nil
			}
			return errorf(http.StatusConflict, "Thread already exists")
		}
		t := s.newThreadLocked(body.ThreadID, body.Metadata)
		writeJSON(w, 200, t)
		return nil
	})
	s.handle("POST /threads/search", func(w http.ResponseWriter, r *http.Request) error {
		body, err := decodeThreadSearch(r)
		if err != nil {
			return err
		}
		s.recs.mu.Lock()
		var out []*threadRecord
		for _, t := range s.recs.threads {
			if len(body.IDs) > 0 && !slices.Contains(body.IDs, t.ThreadID) {
				continue
			}
			if body.Status != "" && t.Status != body.Status {
				continue
			}
			if !contains(t.Metadata, body.Metadata) {
				continue
			}
			if len(body.Values) > 0 {
				vals := map[string]any{}
				for k, v := range t.Values {
					var x any
					_ = json.Unmarshal(v, &x)
					vals[k] = x
				}
				if !contains(vals, body.Values) {
					continue
				}
			}
			out = append(out, snapshot(t))
		}
		s.recs.mu.Unlock()
		return writeThreadSearch(w, out, body)
	})
	s.handle("POST /threads/count", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Metadata map[string]any `json:"metadata"`
			Status   string         `json:"status"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		s.recs.mu.Lock()
		n := 0
		for _, t := range s.recs.threads {
			if (body.Status == "" || t.Status == body.Status) && contains(t.Metadata, body.Metadata) {
				n++
			}
		}
		s.recs.mu.Unlock()
		writeJSON(w, 200, n)
		return nil
	})
	s.handle("GET /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		t, err := s.thread(r.PathValue("tid"))
		if err != nil {
			return err
		}
		writeJSON(w, 200, t)
		return nil
	})
	s.handle("PATCH /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Metadata map[string]any `json:"metadata"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		s.recs.mu.Lock()
		defer s.recs.mu.Unlock()
		t := s.recs.threads[r.PathValue("tid")]
		if t == nil {
			return notFound("Thread with ID %s not found", r.PathValue("tid"))
		}
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		maps.Copy(t.Metadata, body.Metadata)
		t.UpdatedAt = now()
		s.recs.saveThread(t)
		writeJSON(w, 200, t)
		return nil
	})
	s.handle("DELETE /threads/{tid}", func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("tid")
		if _, err := s.thread(id); err != nil {
			return err
		}
		s.sched.mu.Lock()
		inflight := s.sched.inflightLocked(id)
		s.sched.mu.Unlock()
		for _, lr := range inflight {
			s.sched.cancel(lr.id, "interrupt")
			<-lr.done
		}
		s.recs.mu.Lock()
		s.recs.deleteThread(id)
		s.recs.mu.Unlock()
		if d, ok := s.cfg.saver.(checkpoint.ThreadDeleter); ok {
			if err := d.DeleteThread(r.Context(), id); err != nil {
				return err
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("POST /threads/{tid}/copy", func(w http.ResponseWriter, r *http.Request) error {
		src, err := s.thread(r.PathValue("tid"))
		if err != nil {
			return err
		}
		c, ok := s.cfg.saver.(checkpoint.ThreadCopier)
		if !ok {
			return errorf(http.StatusNotImplemented, "the server's saver cannot copy threads (give the server a saver implementing checkpoint.ThreadCopier with server.WithSaver)")
		}
		id := newUUID7()
		if err := c.CopyThread(r.Context(), src.ThreadID, id); err != nil && !isNotFound(err) {
			return err
		}
		s.recs.mu.Lock()
		defer s.recs.mu.Unlock()
		md := maps.Clone(src.Metadata)
		if md == nil {
			md = map[string]any{}
		}
		md["thread_id"] = id
		t := s.newThreadLocked(id, md)
		t.Values = src.Values
		s.recs.saveThread(t)
		writeJSON(w, 200, t)
		return nil
	})
	s.stateReadRoutes(func(ctx context.Context, id string) (*threadRecord, error) { return s.thread(id) })
	s.handle("POST /threads/{tid}/state", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Values       json.RawMessage `json:"values"`
			AsNode       string          `json:"as_node"`
			CheckpointID string          `json:"checkpoint_id"`
			Checkpoint   *checkpointBody `json:"checkpoint"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		id := r.PathValue("tid")
		t, err := s.thread(id)
		if err != nil {
			return err
		}
		g := s.threadGraph(t)
		if g == nil {
			if len(s.cfg.order) != 1 {
				return errorf(http.StatusBadRequest, "Thread %s has no graph ID: run it once, or create it with metadata.graph_id", id)
			}
			g = s.cfg.graphs[s.cfg.order[0]]
		}
		s.sched.mu.Lock()
		busy := len(s.sched.inflightLocked(id)) > 0
		s.sched.mu.Unlock()
		if busy {
			return errorf(http.StatusConflict, "Thread is busy")
		}
		cfg := checkpoint.Config{ThreadID: id, CheckpointID: body.CheckpointID}
		if body.Checkpoint != nil && body.Checkpoint.CheckpointID != "" {
			cfg.CheckpointID = body.Checkpoint.CheckpointID
		}
		if strings.HasPrefix(strings.TrimSpace(string(body.Values)), "[") {
			return badField("values", "a list of updates is not supported: send one object of state keys")
		}
		next, err := g.handle.update(r.Context(), cfg, body.Values, body.AsNode)
		if err != nil {
			return err
		}
		s.refreshThread(r.Context(), g, id)
		writeJSON(w, 200, map[string]any{"checkpoint": toWireCheckpoint(&next)})
		return nil
	})
}

func boolParam(r *http.Request, name string) bool {
	switch strings.ToLower(r.URL.Query().Get(name)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

func isNotFound(err error) bool { return err != nil && strings.Contains(err.Error(), "not found") }

// newThreadLocked creates a thread record; the caller holds recs.mu.
func (s *Server) newThreadLocked(id string, metadata map[string]any) *threadRecord {
	if metadata == nil {
		metadata = map[string]any{}
	}
	t := &threadRecord{ThreadID: id, CreatedAt: now(), Metadata: metadata, Status: "idle", Config: map[string]any{}}
	t.UpdatedAt = t.CreatedAt
	s.recs.threads[id] = t
	s.recs.saveThread(t)
	return t
}

// thread returns a copy of the thread's record, or 404.
func (s *Server) thread(id string) (*threadRecord, error) {
	s.recs.mu.Lock()
	defer s.recs.mu.Unlock()
	t := s.recs.threads[id]
	if t == nil {
		return nil, notFound("Thread with ID %s not found", id)
	}
	return snapshot(t), nil
}

// threadGraph is the graph a thread's runs used (metadata.graph_id).
func (s *Server) threadGraph(t *threadRecord) *registered {
	id, _ := t.Metadata["graph_id"].(string)
	return s.cfg.graphs[id]
}

// refreshThread copies the thread's current values into its record.
func (s *Server) refreshThread(ctx context.Context, g *registered, id string) {
	st, err := g.handle.state(ctx, checkpoint.Config{ThreadID: id}, false)
	if err != nil {
		return
	}
	s.recs.mu.Lock()
	defer s.recs.mu.Unlock()
	if t := s.recs.threads[id]; t != nil {
		t.Values = st.Values
		t.UpdatedAt = now()
		t.Metadata["graph_id"] = g.id
		if len(st.Next) > 0 {
			t.Status = "interrupted"
		} else if t.Status == "interrupted" {
			t.Status = "idle"
		}
		s.recs.saveThread(t)
	}
}
