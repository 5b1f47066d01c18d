package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// stateReadRoutes serves a thread's state, latest or at a checkpoint, and
// its history, for both kinds of thread records; load finds the record.
func (s *Server) stateReadRoutes(load func(ctx context.Context, id string) (*threadRecord, error)) {
	get := func(w http.ResponseWriter, r *http.Request, cfg checkpoint.Config, subgraphs bool) error {
		t, err := load(r.Context(), cfg.ThreadID)
		if err != nil {
			return err
		}
		g := s.threadGraph(t)
		if g == nil {
			writeJSON(w, 200, emptyState())
			return nil
		}
		st, err := g.handle.state(r.Context(), cfg, subgraphs)
		if err != nil {
			return err
		}
		writeJSON(w, 200, st)
		return nil
	}
	s.handle("GET /threads/{tid}/state", func(w http.ResponseWriter, r *http.Request) error {
		return get(w, r, checkpoint.Config{ThreadID: r.PathValue("tid")}, boolParam(r, "subgraphs"))
	})
	s.handle("GET /threads/{tid}/state/{cid}", func(w http.ResponseWriter, r *http.Request) error {
		return get(w, r, checkpoint.Config{ThreadID: r.PathValue("tid"), CheckpointID: r.PathValue("cid")}, boolParam(r, "subgraphs"))
	})
	s.handle("POST /threads/{tid}/state/checkpoint", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Subgraphs  bool            `json:"subgraphs"`
			Checkpoint *checkpointBody `json:"checkpoint"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		cfg := checkpoint.Config{ThreadID: r.PathValue("tid")}
		if body.Checkpoint != nil {
			cfg.CheckpointID, cfg.Namespace = body.Checkpoint.CheckpointID, body.Checkpoint.CheckpointNS
		}
		return get(w, r, cfg, body.Subgraphs)
	})
	history := func(w http.ResponseWriter, r *http.Request, h historyBody) error {
		t, err := load(r.Context(), r.PathValue("tid"))
		if err != nil {
			return err
		}
		g := s.threadGraph(t)
		if g == nil {
			writeJSON(w, 200, []any{})
			return nil
		}
		if h.Limit != nil && *h.Limit < 1 {
			return badField("limit", "must be at least 1")
		}
		out, err := g.handle.history(r.Context(), t.ThreadID, h)
		if err != nil {
			return err
		}
		writeJSON(w, 200, out)
		return nil
	}
	s.handle("POST /threads/{tid}/history", func(w http.ResponseWriter, r *http.Request) error {
		var h historyBody
		if err := decodeBody(r, &h); err != nil {
			return err
		}
		return history(w, r, h)
	})
	s.handle("GET /threads/{tid}/history", func(w http.ResponseWriter, r *http.Request) error {
		var h historyBody
		if l := r.URL.Query().Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				return badField("limit", "not a number: %q", l)
			}
			h.Limit = &n
		}
		h.Before = r.URL.Query().Get("before")
		return history(w, r, h)
	})
}
