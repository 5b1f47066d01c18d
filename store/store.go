// Package store is long-term memory shared across threads: JSON documents
// under hierarchical namespaces, which nodes and tools reach through the run
// config (graph.StoreFrom). It is LangGraph's BaseStore: put, get, delete,
// search under a namespace prefix with a filter, list namespaces, and
// time-to-live.
//
// Store is the interface backends implement; NewMemory is one, package
// store/bolt keeps items in a file, and storetest.Run holds each of them to
// the contract written here.
//
// # Namespaces and keys
//
// A namespace is a non-empty list of labels, ["users", "u42", "memories"];
// a label is a non-empty string without ".", and the first label may not be
// "langgraph", which LangGraph reserves. An item is addressed by its
// namespace and a non-empty key. Search and ListNamespaces match whole
// labels: the prefix ["users", "u4"] matches nothing under ["users", "u42"].
//
// # Values
//
// A value is a JSON object. Stores keep it as JSON, so what Get returns is
// what encoding/json decodes: numbers are float64, objects map[string]any,
// arrays []any. The caller and the store never share a map.
//
// # Time-to-live
//
// An item put with a TTL expires that long after its last write, or after
// its last read when reads refresh it (by default they do; see Refresh and
// TTLConfig). An expired item is gone at once for every call, even before a
// sweep deletes it: Get says ErrNotFound, Search and ListNamespaces skip it,
// Put over it creates a new item. Stores delete expired items in the
// background; Close stops that work.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound reports that no item has the namespace and key asked for.
var ErrNotFound = errors.New("store: item not found")

// ErrInvalid reports a namespace, key, value or option the store cannot
// take: an empty namespace, a label that is empty or contains a ".", a
// namespace whose first label is "langgraph", an empty key, a value that is
// not JSON, a filter with an unknown operator, a negative limit or offset.
var ErrInvalid = errors.New("store: invalid namespace, key, value or option")

// ErrClosed reports a call on a store after its Close.
var ErrClosed = errors.New("store: closed")

// Defaults, as in LangGraph.
const (
	// DefaultSearchLimit is the number of items Search returns when
	// SearchOptions.Limit is 0.
	DefaultSearchLimit = 10
	// DefaultNamespaceLimit is the number of namespaces ListNamespaces
	// returns when NamespaceOptions.Limit is 0.
	DefaultNamespaceLimit = 100
)

// NoTTL, as PutOptions.TTL, keeps an item until it is deleted even when
// the store gives items a default TTL (LangGraph's ttl=None).
const NoTTL time.Duration = -1

// Item is one stored document.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	// CreatedAt is when the item was first put; replacing it keeps the time.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the item was last put.
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt is when the item expires (zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PutOptions configures Put.
type PutOptions struct {
	// TTL is how long the item lives after this write and after each read
	// that refreshes it. 0 takes the store's default (TTLConfig.Default,
	// none unless set); NoTTL, or any negative value, keeps the item until
	// it is deleted. LangGraph counts TTLs in minutes: its ttl=m is
	// time.Duration(m * float64(time.Minute)) here.
	TTL time.Duration
}

// Refresh says whether a read restarts the TTL of the items it returns.
// Items without a TTL are never affected.
type Refresh uint8

const (
	// RefreshDefault does what the store was configured to do: refresh,
	// unless TTLConfig.NoRefreshOnRead (LangGraph's refresh_ttl=None).
	RefreshDefault Refresh = iota
	// RefreshOn restarts the TTL of each item returned.
	RefreshOn
	// RefreshOff leaves TTLs as they are.
	RefreshOff
)

// GetOptions configures Get.
type GetOptions struct {
	RefreshTTL Refresh
}

// SearchOptions narrows Search.
//
// Filter keeps items whose value satisfies every entry: a field name maps
// either to a JSON value the field must equal (compared as JSON: 1 equals
// 1.0, objects and arrays equal when all their elements do) or to an object
// of operators, {"$gt": 3} — see ParseFilter for each. Query asks for
// semantic search, which these stores do not have; it is ignored, as
// LangGraph ignores it without an index. Limit 0 means DefaultSearchLimit.
// RefreshTTL applies to the items returned.
type SearchOptions struct {
	Filter     map[string]any
	Query      string
	Limit      int
	Offset     int
	RefreshTTL Refresh
}

// NamespaceOptions narrows ListNamespaces: namespaces that start with
// Prefix and end with Suffix, where "*" matches any one label, cut to their
// first MaxDepth labels (0: whole), without duplicates, in order (label by
// label, as strings compare). Limit 0 means DefaultNamespaceLimit.
type NamespaceOptions struct {
	Prefix   []string
	Suffix   []string
	MaxDepth int
	Limit    int
	Offset   int
}

// Store is long-term memory. Implementations are safe for concurrent use,
// return errors that wrap ErrNotFound, ErrInvalid, ErrClosed or the
// context's error where those apply, and obey the rules in the package
// documentation; storetest.Run checks them.
type Store interface {
	// Put creates or replaces the item at namespace and key. A nil value is
	// stored as an empty object.
	Put(ctx context.Context, namespace []string, key string, value map[string]any, opts PutOptions) error
	// Get returns the item, or an error wrapping ErrNotFound.
	Get(ctx context.Context, namespace []string, key string, opts GetOptions) (*Item, error)
	// Delete removes the item; deleting a missing item is not an error.
	Delete(ctx context.Context, namespace []string, key string) error
	// Search lists items whose namespace starts with prefix (all items when
	// prefix is empty; "*" is an ordinary label here), most recently
	// updated first, then by namespace and key.
	Search(ctx context.Context, prefix []string, opts SearchOptions) ([]*Item, error)
	// ListNamespaces lists the namespaces that hold items.
	ListNamespaces(ctx context.Context, opts NamespaceOptions) ([][]string, error)
}

// Sweeper is a Store that deletes expired items when asked, besides in the
// background: LangGraph's sweep_ttl. Sweep returns how many it deleted.
type Sweeper interface {
	Sweep(ctx context.Context) (int, error)
}
