// Package postgres is a store.Store on PostgreSQL: long-term memory that
// every process sharing the database sees, with TTLs swept by any of them.
//
// A Store works over a *pgxpool.Pool the caller opens and closes; New
// creates or migrates its table first, safely from several processes at
// once. Namespaces, keys and values are kept as bytes, so any label or key
// the store package accepts round-trips exactly, and items sort label by
// label as the store contract orders them.
package postgres
