package openai

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// retrier is the HTTP doer go-openai sends through: it retries answers with
// status 429 or 5xx. Retrying below go-openai, where status and headers are
// still visible, is what lets it honour Retry-After.
type retrier struct {
	next       *http.Client
	maxRetries int
	base, max  time.Duration
}

// attempts records, for one call, how many requests were sent and the wait
// the server last asked for; the call reads it to describe its error.
type attempts struct {
	n          int
	retryAfter time.Duration
}

type attemptsKey struct{}

func withAttempts(ctx context.Context) (context.Context, *attempts) {
	a := &attempts{}
	return context.WithValue(ctx, attemptsKey{}, a), a
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

func (r *retrier) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	info, _ := ctx.Value(attemptsKey{}).(*attempts)
	if info == nil {
		info = &attempts{}
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
		resp, err := r.next.Do(req)
		info.n = attempt + 1
		if err != nil {
			return nil, err
		}
		if !retryable(resp.StatusCode) || attempt >= r.maxRetries || (attempt == 0 && req.Body != nil && req.GetBody == nil) {
			return resp, nil
		}
		wait, asked := retryAfter(resp.Header, time.Now())
		if asked {
			info.retryAfter = wait
			if wait > r.max {
				return resp, nil // the server wants a longer pause than we may take
			}
		} else {
			wait = r.backoff(attempt)
		}
		// Drain a little so the connection can be reused, then let go of it.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// backoff returns the wait before retry number attempt+1: base doubled per
// attempt, capped at max, with "equal jitter" (half fixed, half random) so
// clients that failed together do not retry together.
func (r *retrier) backoff(attempt int) time.Duration {
	d := r.base
	for range attempt {
		d *= 2
		if d >= r.max {
			d = r.max
			break
		}
	}
	half := d / 2
	return half + rand.N(half+1)
}

// retryAfter reads the wait a server asks for: retry-after-ms (milliseconds,
// sent by OpenAI), else Retry-After as seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
