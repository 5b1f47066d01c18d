package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		asked  bool
	}{
		{"absent", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds win", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, asked := retryAfter(h, now)
			if got != tt.want || asked != tt.asked {
				t.Fatalf("got %v, %v; want %v, %v", got, asked, tt.want, tt.asked)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	r := &retrier{base: 100 * time.Millisecond, max: time.Second}
	for attempt := range 10 {
		nominal := min(r.base<<attempt, r.max)
		for range 50 {
			d := r.backoff(attempt)
			if d < nominal/2 || d > nominal {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, nominal/2, nominal)
			}
		}
	}
}
