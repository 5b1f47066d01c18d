// Package postgres is a checkpoint.Saver on PostgreSQL, for threads that
// several processes share: any process can continue any thread, and a lease
// with a fencing token keeps one run per thread across all of them.
//
// A Saver works over a *pgxpool.Pool the caller opens and closes. New
// creates the tables, or migrates them, before it returns; several
// processes may call it at once. Like the bbolt saver, each checkpoint row
// holds only what its step changed, so a step's cost grows with what it
// wrote, not with the thread. Every statement is parameterised and, with
// pgx's default query mode, prepared once per connection.
package postgres
