package graph

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy retries a failing node. The zero value of each field takes the
// default shown.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt (default 3).
	MaxAttempts int
	// InitialInterval is the wait before the second attempt (default 500ms).
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each attempt (default 2).
	BackoffFactor float64
	// MaxInterval caps the wait (default 128s).
	MaxInterval time.Duration
	// NoJitter turns off the random extra wait of up to half the interval.
	NoJitter bool
	// RetryOn says which errors to retry (default: all but cancellation,
	// panics and errors marked with Permanent).
	RetryOn func(error) bool
}

// Permanent marks err as not worth retrying under the default RetryOn.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// retryable is false for errors no retry policy may retry, whatever its
// RetryOn says: an interrupt, a command for the parent graph, and a missing
// saver, which another attempt cannot bring.
func retryable(err error) bool {
	var ie *interruptSignal
	var pc *parentCommand
	return !errors.As(err, &ie) && !errors.As(err, &pc) && !errors.Is(err, ErrNoSaver)
}

func defaultRetryOn(err error) bool {
	var p *permanentError
	var ne *NodeError
	switch {
	case errors.As(err, &p), errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &ne) && ne.Panic:
		return false
	}
	return true
}

// next says whether to retry after the given failed attempt, and how long
// to wait first.
func (p *RetryPolicy) next(attempt int, err error) (time.Duration, bool) {
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	retryOn := p.RetryOn
	if retryOn == nil {
		retryOn = defaultRetryOn
	}
	if attempt >= maxAttempts || !retryOn(err) {
		return 0, false
	}
	initial, factor, maxWait := p.InitialInterval, p.BackoffFactor, p.MaxInterval
	if initial == 0 {
		initial = 500 * time.Millisecond
	}
	if factor == 0 {
		factor = 2
	}
	if maxWait == 0 {
		maxWait = 128 * time.Second
	}
	wait := time.Duration(math.Min(float64(maxWait), float64(initial)*math.Pow(factor, float64(attempt-1))))
	if !p.NoJitter && wait > 1 {
		wait += rand.N(wait / 2)
	}
	return wait, true
}
