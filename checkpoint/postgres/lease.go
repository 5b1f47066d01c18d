package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// ErrClosed reports a TryLock on a closed Saver.
var ErrClosed = errors.New("checkpoint/postgres: Saver is closed")

// hold is a lease this Saver holds, or is taking.
type hold struct {
	token int64 // 0 while TryLock is still taking the lease
}

// token returns the fencing token of this Saver's lease on the thread, or 0
// when it holds none.
func (s *Saver) token(threadID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.holds[threadID]; h != nil {
		return h.token
	}
	return 0
}

// TryLock implements checkpoint.ThreadLocker with a lease in the database,
// which excludes runs in every process that shares it. It returns an error
// wrapping checkpoint.ErrThreadBusy when this or another process holds an
// unexpired lease on the thread; it never waits for one. The Saver renews
// the lease until unlock is called or the Saver is closed; unlock deletes
// it (a stale or repeated unlock does nothing). See Saver for fencing.
func (s *Saver) TryLock(threadID string) (unlock func(), err error) {
	if threadID == "" {
		return nil, errNoThread("TryLock")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("TryLock on thread %q: %w", threadID, ErrClosed)
	}
	if _, held := s.holds[threadID]; held {
		s.mu.Unlock()
		return nil, busy(threadID)
	}
	h := new(hold)
	s.holds[threadID] = h // keeps this process's other callers out meanwhile
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.timeout)
	defer cancel()
	var token int64
	err = s.pool.QueryRow(ctx, s.sql.lock, threadID, s.name, s.opts.leaseTTL.Milliseconds()).Scan(&token)
	s.mu.Lock()
	if err != nil {
		if s.holds[threadID] == h {
			delete(s.holds, threadID)
		}
		s.mu.Unlock()
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, busy(threadID)
		}
		return nil, wrap("TryLock", err)
	}
	if s.closed {
		// Close ran while the lease was being taken: give it back.
		s.mu.Unlock()
		_, _ = s.pool.Exec(ctx, s.sql.unlock, threadID, token)
		return nil, fmt.Errorf("TryLock on thread %q: %w", threadID, ErrClosed)
	}
	h.token = token
	if !s.renewing {
		s.renewing = true
		s.renewed.Add(1)
		go s.renew()
	}
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { s.release(threadID, h) }) }, nil
}

func busy(threadID string) error {
	return fmt.Errorf("thread %q: %w: another run, in this process or another, holds its lease; wait for it to end or use another thread id",
		threadID, checkpoint.ErrThreadBusy)
}

// release ends hold h on the thread. A failure to delete the lease row is
// not reported: the lease expires on its own.
func (s *Saver) release(threadID string, h *hold) {
	s.mu.Lock()
	if s.holds[threadID] != h {
		s.mu.Unlock()
		return // Close released it
	}
	delete(s.holds, threadID)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.timeout)
	defer cancel()
	_, _ = s.pool.Exec(ctx, s.sql.unlock, threadID, h.token)
}

// renew extends this Saver's leases every third of their TTL, in one
// statement for all of them, and returns when the Saver holds none or is
// closed. A lease it finds taken over stays in holds, so that the stale
// run's writes keep failing until it unlocks.
func (s *Saver) renew() {
	defer s.renewed.Done()
	tick := time.NewTicker(s.opts.leaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-s.closing.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		if len(s.holds) == 0 {
			s.renewing = false
			s.mu.Unlock()
			return
		}
		threads := make([]string, 0, len(s.holds))
		tokens := make([]int64, 0, len(s.holds))
		for id, h := range s.holds {
			if h.token != 0 {
				threads, tokens = append(threads, id), append(tokens, h.token)
			}
		}
		s.mu.Unlock()
		s.renewOnce(threads, tokens)
	}
}

func (s *Saver) renewOnce(threads []string, tokens []int64) {
	if len(threads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(s.opts.timeout, s.opts.leaseTTL/3))
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	// An error (the database unreachable) is retried at the next tick;
	// meanwhile the fence keeps the writes safe.
	_, _ = s.pool.Exec(ctx, s.sql.renew, threads, tokens, s.opts.leaseTTL.Milliseconds())
}
