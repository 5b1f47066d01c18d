// Package store is long-term memory shared across threads: JSON documents
// under hierarchical namespaces, which nodes and tools reach through the run
// config (graph.StoreFrom) and the Agent Server serves at /store. It is
// LangGraph's BaseStore: put, get, delete, search under a namespace prefix
// with a filter, list namespaces, and time-to-live.
//
// Store is the interface backends implement; storetest.Run holds each of
// them to one contract.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound reports that no item has the namespace and key asked for.
var ErrNotFound = errors.New("store: item not found")

// ErrInvalid reports a namespace, key or value the store cannot take: an
// empty namespace, a label that is empty or contains a ".", an empty key.
var ErrInvalid = errors.New("store: invalid namespace, key or value")

// Item is one stored document.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// ExpiresAt is when the item expires (zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PutOptions configures Put. TTL > 0 makes the item expire TTL after its
// last write (or read, when the store refreshes on read); 0 keeps it.
type PutOptions struct {
	TTL time.Duration
}

// GetOptions configures Get. RefreshTTL restarts the item's TTL.
type GetOptions struct {
	RefreshTTL bool
}

// SearchOptions narrows Search. Filter keeps items whose value has each
// key equal to the given JSON value (compared as JSON). Query, when a store
// has no semantic index, is ignored. Limit 0 means 10, as in LangGraph.
type SearchOptions struct {
	Filter     map[string]any
	Query      string
	Limit      int
	Offset     int
	RefreshTTL bool
}

// NamespaceOptions narrows ListNamespaces: namespaces that start with
// Prefix and end with Suffix ("*" matches any one label in either),
// truncated to MaxDepth labels (0: whole), deduplicated, sorted. Limit 0
// means 100.
type NamespaceOptions struct {
	Prefix   []string
	Suffix   []string
	MaxDepth int
	Limit    int
	Offset   int
}

// Store is long-term memory. Implementations are safe for concurrent use;
// an expired item behaves as a missing one.
type Store interface {
	// Put creates or replaces the item at namespace and key.
	Put(ctx context.Context, namespace []string, key string, value map[string]any, opts PutOptions) error
	// Get returns the item, or ErrNotFound.
	Get(ctx context.Context, namespace []string, key string, opts GetOptions) (*Item, error)
	// Delete removes the item; deleting a missing item is not an error.
	Delete(ctx context.Context, namespace []string, key string) error
	// Search lists items whose namespace starts with prefix, most recently
	// updated first.
	Search(ctx context.Context, prefix []string, opts SearchOptions) ([]*Item, error)
	// ListNamespaces lists the namespaces that hold items.
	ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error)
}
