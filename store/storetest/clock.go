package storetest

import (
	"context"
	"sync"
	"time"
)

// Clock is a store.Clock that moves only when told to: Advance moves it
// and fires the timers After made that have come due. Tests wait for
// events on it (WaitTimers) instead of for wall time. It is safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []clockTimer
	changed chan struct{} // closed and replaced when timers change
}

type clockTimer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a Clock that reads start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once Advance has
// moved it d past now; at once if d <= 0.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, clockTimer{at: c.now.Add(d), ch: ch})
	c.signal()
	return ch
}

// Advance moves the clock d forward and fires the timers that came due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	clear(c.timers[len(kept):])
	if len(kept) != len(c.timers) {
		c.timers = kept
		c.signal()
	}
}

// Timers returns how many timers are waiting to fire.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitTimers waits until at least n timers are waiting to fire, or ctx is
// done. A store's sweeper arms a timer each time it goes to sleep, so
// WaitTimers(ctx, 1) after an Advance that fired it returns once the sweep
// it started is over.
func (c *Clock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		count, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signal wakes WaitTimers; the caller holds mu.
func (c *Clock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}
