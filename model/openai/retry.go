package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/agentgraph/agentgraph/model"
)

// retrier sends a request and retries answers that say the same request may
// succeed later (429 other than insufficient_quota, 5xx), honouring
// Retry-After.
type retrier struct {
	client     *http.Client
	maxRetries int
	base, max  time.Duration
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// send posts body to url with header and returns the first answer with a 2xx
// status, whose body the caller closes. Any other final answer is an
// *APIError; a failed connection matches model.ErrTemporary; a cancelled ctx
// returns its error, also while waiting to retry.
func (r *retrier) send(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error) {
	var retryAfterAsked time.Duration
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("openai: %w", err)
		}
		req.Header = header.Clone()
		resp, err := r.client.Do(req)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("openai: %w", ctxErr)
			}
			return nil, &classed{fmt.Errorf("openai: %w", err), model.ErrTemporary}
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		errBody, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if readErr != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("openai: %w", ctx.Err())
		}
		apiErr := apiError(resp.StatusCode, errBody)
		apiErr.Attempts = attempt + 1
		wait, asked := retryAfter(resp.Header, time.Now())
		if asked {
			retryAfterAsked = wait
		}
		apiErr.RetryAfter = retryAfterAsked
		if !apiErr.Temporary() || attempt >= r.maxRetries || (asked && wait > r.max) {
			// A server asking for a longer pause than we may take gets its
			// error back at once, with the wait it asked for.
			return nil, apiErr
		}
		if !asked {
			wait = r.backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("openai: %w", ctx.Err())
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
