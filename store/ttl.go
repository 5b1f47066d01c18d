package store

import "time"

// DefaultSweepInterval is how often a store deletes expired items when
// TTLConfig.SweepInterval is 0; LangGraph's sweeper also wakes every five
// minutes by default.
const DefaultSweepInterval = 5 * time.Minute

// TTLConfig is a store's time-to-live policy, LangGraph's TTLConfig. The
// zero value gives items no TTL unless Put asks for one, refreshes TTLs on
// reads, and sweeps every DefaultSweepInterval.
type TTLConfig struct {
	// Default is the TTL of items put with PutOptions.TTL 0 (LangGraph's
	// default_ttl); 0 means none.
	Default time.Duration
	// NoRefreshOnRead makes reads leave TTLs alone unless they ask for
	// RefreshOn (LangGraph's refresh_on_read: false).
	NoRefreshOnRead bool
	// SweepInterval is how often expired items are deleted in the
	// background: 0 means DefaultSweepInterval, a negative value never (a
	// Sweeper's Sweep still deletes them, and expired items are invisible
	// either way).
	SweepInterval time.Duration
}

// ItemTTL returns the TTL an item put with PutOptions.TTL d gets under c:
// d when positive, c.Default when d is 0, and 0 (none) otherwise.
func (c TTLConfig) ItemTTL(d time.Duration) time.Duration {
	switch {
	case d > 0:
		return d
	case d == 0 && c.Default > 0:
		return c.Default
	}
	return 0
}

// Refreshes reports whether a read asking for r restarts TTLs under c.
func (c TTLConfig) Refreshes(r Refresh) bool {
	switch r {
	case RefreshOn:
		return true
	case RefreshOff:
		return false
	}
	return !c.NoRefreshOnRead
}

// Interval returns how often to sweep under c, or 0 for never.
func (c TTLConfig) Interval() time.Duration {
	switch {
	case c.SweepInterval < 0:
		return 0
	case c.SweepInterval == 0:
		return DefaultSweepInterval
	}
	return c.SweepInterval
}

// Clock is where a store's time comes from: Now stamps items and decides
// which have expired, After paces the background sweep. Tests pass a clock
// they move by hand (storetest.Clock); nil means the machine's clock.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// orSystem returns c, or the machine's clock when c is nil.
func orSystem(c Clock) Clock {
	if c == nil {
		return systemClock{}
	}
	return c
}
