package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

// wireItem is a store item as the wire has it.
type wireItem struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt wireTime       `json:"created_at"`
	UpdatedAt wireTime       `json:"updated_at"`
}

func toWireItem(it *store.Item) wireItem {
	return wireItem{Namespace: it.Namespace, Key: it.Key, Value: it.Value, CreatedAt: wireTime(it.CreatedAt), UpdatedAt: wireTime(it.UpdatedAt)}
}

func checkNamespace(field string, ns []string, required bool) error {
	if len(ns) == 0 {
		if required {
			return badField(field, "missing: give at least one label")
		}
		return nil
	}
	for i, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			return badField(field, "label %d (%q) is empty or contains a period", i, l)
		}
	}
	return nil
}

func storeError(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	return err
}

func (s *Server) storeRoutes() {
	st := func() (store.Store, error) {
		if s.cfg.store == nil {
			return nil, notFound("this server has no store: start it with server.WithStore")
		}
		return s.cfg.store, nil
	}
	s.handle("PUT /store/items", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Namespace []string       `json:"namespace"`
			Key       string         `json:"key"`
			Value     map[string]any `json:"value"`
			TTL       *float64       `json:"ttl"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		if err := checkNamespace("namespace", body.Namespace, true); err != nil {
			return err
		}
		if body.Key == "" {
			return badField("key", "missing")
		}
		if body.Value == nil {
			return badField("value", "missing: give an object")
		}
		var opts store.PutOptions
		if body.TTL != nil {
			if *body.TTL < 0 {
				return badField("ttl", "must not be negative")
			}
			// LangGraph's TTL is in minutes.
			opts.TTL = time.Duration(*body.TTL * float64(time.Minute))
		}
		stor, err := st()
		if err != nil {
			return err
		}
		if err := stor.Put(r.Context(), body.Namespace, body.Key, body.Value, opts); err != nil {
			return storeError(err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("GET /store/items", func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		key := q.Get("key")
		if key == "" {
			return badField("key", "missing")
		}
		var ns []string
		if v := q.Get("namespace"); v != "" {
			ns = strings.Split(v, ".")
		}
		stor, err := st()
		if err != nil {
			return err
		}
		it, err := stor.Get(r.Context(), ns, key, store.GetOptions{RefreshTTL: refreshOf(r.URL.Query().Get("refresh_ttl"))})
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
			writeJSON(w, 200, nil)
			return nil
		}
		if err != nil {
			return err
		}
		writeJSON(w, 200, toWireItem(it))
		return nil
	})
	s.handle("DELETE /store/items", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Namespace []string `json:"namespace"`
			Key       string   `json:"key"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		if err := checkNamespace("namespace", body.Namespace, false); err != nil {
			return err
		}
		if body.Key == "" {
			return badField("key", "missing")
		}
		stor, err := st()
		if err != nil {
			return err
		}
		if err := stor.Delete(r.Context(), body.Namespace, body.Key); err != nil {
			return storeError(err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.handle("POST /store/items/search", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			NamespacePrefix []string       `json:"namespace_prefix"`
			Filter          map[string]any `json:"filter"`
			Limit           *int           `json:"limit"`
			Offset          int            `json:"offset"`
			Query           string         `json:"query"`
			RefreshTTL      *bool          `json:"refresh_ttl"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		if err := checkNamespace("namespace_prefix", body.NamespacePrefix, false); err != nil {
			return err
		}
		limit := 10
		if body.Limit != nil {
			limit = *body.Limit
		}
		if limit < 1 || body.Offset < 0 {
			return badField("limit", "limit must be at least 1 and offset not negative")
		}
		stor, err := st()
		if err != nil {
			return err
		}
		items, err := stor.Search(r.Context(), body.NamespacePrefix, store.SearchOptions{Filter: body.Filter, Query: body.Query, Limit: limit, Offset: body.Offset, RefreshTTL: refreshOfBool(body.RefreshTTL)})
		if err != nil {
			return storeError(err)
		}
		out := make([]wireItem, len(items))
		for i, it := range items {
			out[i] = toWireItem(it)
		}
		writeJSON(w, 200, map[string]any{"items": out})
		return nil
	})
	s.handle("POST /store/namespaces", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Prefix   []string `json:"prefix"`
			Suffix   []string `json:"suffix"`
			MaxDepth int      `json:"max_depth"`
			Limit    *int     `json:"limit"`
			Offset   int      `json:"offset"`
		}
		if err := decodeBody(r, &body); err != nil {
			return err
		}
		limit := 100
		if body.Limit != nil {
			limit = *body.Limit
		}
		stor, err := st()
		if err != nil {
			return err
		}
		ns, err := stor.ListNamespaces(r.Context(), store.NamespaceOptions{Prefix: body.Prefix, Suffix: body.Suffix, MaxDepth: body.MaxDepth, Limit: limit, Offset: body.Offset})
		if err != nil {
			return storeError(err)
		}
		if ns == nil {
			ns = [][]string{}
		}
		writeJSON(w, 200, map[string]any{"namespaces": ns})
		return nil
	})
}

// refreshOf reads refresh_ttl: absent leaves the store's default.
func refreshOf(v string) store.Refresh {
	switch strings.ToLower(v) {
	case "":
		return store.RefreshDefault
	case "1", "true", "yes":
		t := true
		return refreshOfBool(&t)
	}
	f := false
	return refreshOfBool(&f)
}

func refreshOfBool(b *bool) store.Refresh {
	switch {
	case b == nil:
		return store.RefreshDefault
	case *b:
		return store.RefreshOn
	}
	return store.RefreshOff
}
