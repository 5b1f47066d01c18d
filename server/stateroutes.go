package server

import (
	"context"
	"net/http"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// stateReadRoutes serves a thread's state, latest or at a checkpoint, for
// both kinds of thread records; load finds the record.
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
}
