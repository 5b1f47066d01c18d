// Package bolt is a checkpoint.Saver that keeps every thread in one bbolt
// file, durable once Put or PutWrites returns.
// One process opens a file at a time; concurrent writers in that process
// share commits, so many threads can run at once without one fsync each.
package bolt
