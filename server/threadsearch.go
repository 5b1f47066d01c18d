package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// threadSearch is the body of POST /threads/search.
type threadSearch struct {
	Metadata  map[string]any `json:"metadata"`
	Values    map[string]any `json:"values"`
	IDs       []string       `json:"ids"`
	Status    string         `json:"status"`
	Limit     *int           `json:"limit"`
	Offset    int            `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

func decodeThreadSearch(r *http.Request) (threadSearch, error) {
	var body threadSearch
	if err := decodeBody(r, &body); err != nil {
		return body, err
	}
	switch body.Status {
	case "", "idle", "busy", "interrupted", "error":
	default:
		return body, badField("status", "unknown status %q: use idle, busy, interrupted or error", body.Status)
	}
	return body, nil
}

// writeThreadSearch sorts and pages the threads a search matched and writes
// them, whole or cut to the fields the search selected.
func writeThreadSearch(w http.ResponseWriter, out []*threadRecord, body threadSearch) error {
	desc := body.SortOrder != "asc"
	slices.SortFunc(out, func(a, b *threadRecord) int {
		var c int
		switch body.SortBy {
		case "thread_id":
			c = strings.Compare(a.ThreadID, b.ThreadID)
		case "status":
			c = strings.Compare(a.Status, b.Status)
		case "updated_at":
			c = time.Time(a.UpdatedAt).Compare(time.Time(b.UpdatedAt))
		default:
			c = time.Time(a.CreatedAt).Compare(time.Time(b.CreatedAt))
		}
		if desc {
			return -c
		}
		return c
	})
	total := len(out)
	out = page(out, body.Offset, body.Limit, 10)
	w.Header().Set("X-Pagination-Total", strconv.Itoa(total))
	if len(body.Select) == 0 {
		writeJSON(w, 200, out)
		return nil
	}
	sel := make([]map[string]json.RawMessage, len(out))
	for i, t := range out {
		b, _ := json.Marshal(t)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		sel[i] = map[string]json.RawMessage{}
		for _, k := range body.Select {
			if v, ok := m[k]; ok {
				sel[i][k] = v
			}
		}
	}
	writeJSON(w, 200, sel)
	return nil
}
