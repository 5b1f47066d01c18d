package sandboxer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Sandbox     = (*Sandbox)(nil)
	_ sandbox.Downloader  = (*Sandbox)(nil)
	_ sandbox.FileLister  = (*Sandbox)(nil)
	_ sandbox.FileRemover = (*Sandbox)(nil)
	_ sandbox.Starter     = (*Sandbox)(nil)
)

// Create makes a sandbox (POST /sandboxes) under a fresh Idempotency-Key, so that a create retried after a
// lost answer still makes one sandbox, and waits until it accepts commands.
func (b *Backend) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	s, err := b.CreateWithKey(ctx, newIdempotencyKey(), opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// CreateWithKey is Create with the caller's Idempotency-Key (at most 255 characters): for 24 hours the same
// key and options give back the same sandbox, even from another process.
func (b *Backend) CreateWithKey(ctx context.Context, key string, opts sandbox.CreateOptions) (*Sandbox, error) {
	if key == "" || len(key) > 255 {
		return nil, fmt.Errorf("%w: idempotency key of %d characters: use 1 to 255", sandbox.ErrInvalidArgument, len(key))
	}
	if opts.TTL < 0 {
		return nil, fmt.Errorf("%w: negative TTL %v", sandbox.ErrInvalidArgument, opts.TTL)
	}
	req := createRequest{Type: string(opts.Size), Name: opts.Name, Env: opts.Env, HostNetwork: opts.HostNetwork}
	if opts.TTL > 0 {
		req.TTLSeconds = int64((opts.TTL + time.Second - 1) / time.Second)
	}
	var out sandboxResponse
	err := b.do(ctx, call{method: http.MethodPost, path: "/sandboxes", body: req, retry: true,
		header: http.Header{IdempotencyKeyHeader: {key}}}, &out)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{b: b, id: out.Sandbox.ID}
	if s.id == "" {
		return nil, fmt.Errorf("sandboxer: create answered without a sandbox id")
	}
	// The hosted API takes the name through PATCH; a server that took it on create has it already.
	if opts.Name != "" && out.Sandbox.Name != opts.Name {
		if err := b.do(ctx, call{method: http.MethodPatch, path: s.path(""), body: map[string]string{"name": opts.Name}}, nil); err != nil {
			return s, fmt.Errorf("sandboxer: name sandbox %s: %w", s.id, err)
		}
	}
	if out.Status == "provisioning" || settling(out.Sandbox.State) {
		if err := s.waitReady(ctx, false); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Get returns the sandbox with the id (GET /sandboxes/{id}), or an error wrapping sandbox.ErrNotFound.
func (b *Backend) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	s := b.Sandbox(id)
	if _, err := s.Info(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Sandbox returns a handle on the sandbox with the id without asking the API whether it exists.
func (b *Backend) Sandbox(id string) *Sandbox { return &Sandbox{b: b, id: id} }

// ListOptions select one page of sandboxes.
type ListOptions struct {
	Limit  int    // 1 to 200; zero means the server's default (100)
	Cursor string // Page.NextCursor of the previous page
	Sort   string // "asc" (oldest first) or "desc"; empty means the server's default (desc)
	State  string // the API's own state name (ready, archived, ...), not sandbox.State
}

// Page is one page of a listing.
type Page struct {
	Sandboxes  []sandbox.Info
	NextCursor string
	HasMore    bool
}

// ListPage returns one page of the sandboxes the key can see (GET /sandboxes).
func (b *Backend) ListPage(ctx context.Context, o ListOptions) (Page, error) {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	for k, v := range map[string]string{"cursor": o.Cursor, "sort": o.Sort, "state": o.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out listResponse
	if err := b.do(ctx, call{method: http.MethodGet, path: "/sandboxes", query: q, retry: true}, &out); err != nil {
		return Page{}, err
	}
	p := Page{HasMore: out.PageInfo.HasMore}
	if out.PageInfo.NextCursor != nil {
		p.NextCursor = *out.PageInfo.NextCursor
	}
	for i := range out.Sandboxes {
		if out.Sandboxes[i].State == "cancelled" {
			continue
		}
		p.Sandboxes = append(p.Sandboxes, out.Sandboxes[i].info())
	}
	return p, nil
}

// List returns every sandbox that matches f, oldest first, reading all pages. The API filters neither by
// name nor by sandbox.State, so the filtering happens here.
func (b *Backend) List(ctx context.Context, f sandbox.Filter) ([]sandbox.Info, error) {
	var out []sandbox.Info
	o := ListOptions{Limit: 200, Sort: "asc"}
	for {
		p, err := b.ListPage(ctx, o)
		if err != nil {
			return nil, err
		}
		for _, in := range p.Sandboxes {
			if (f.Name == "" || in.Name == f.Name) && (f.State == "" || in.State == f.State) {
				out = append(out, in)
			}
		}
		if !p.HasMore || p.NextCursor == "" || p.NextCursor == o.Cursor {
			return out, nil
		}
		o.Cursor = p.NextCursor
	}
}
