package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// APIError is an error answer from the API, after any retries.
type APIError struct {
	// StatusCode is the HTTP status; 0 for an error sent inside a stream.
	StatusCode int
	// Type and Code are the API's classification, such as
	// "invalid_request_error" and "rate_limit_exceeded", when it sent them.
	Type, Code string
	// Message is the API's own explanation, or the body it sent when that was
	// not the usual error object.
	Message string
	// Attempts is how many requests were sent.
	Attempts int
	// RetryAfter is the wait the server last asked for, if it asked.
	RetryAfter time.Duration

	err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("openai: ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	} else {
		b.WriteString("stream error")
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	} else if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " [gave up after %d attempts]", e.Attempts)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " [server asked to retry after %v]", e.RetryAfter)
	}
	switch {
	case e.StatusCode == 401 || e.StatusCode == 403:
		b.WriteString("; check the API key (" + EnvAPIKey + " or openai.WithAPIKey)")
	case e.StatusCode == 404:
		b.WriteString("; check the model name and the base URL (" + EnvBaseURL + " or openai.WithBaseURL)")
	case e.Temporary():
		b.WriteString("; the error is temporary: try again later or raise openai.WithMaxRetries")
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later (429, 5xx).
func (e *APIError) Temporary() bool { return retryable(e.StatusCode) }

// Unwrap returns the go-openai error underneath.
func (e *APIError) Unwrap() error { return e.err }

func wrapError(ctx context.Context, err error, info *attempts) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("openai: %w", ctxErr)
	}
	var (
		apiErr *goopenai.APIError
		reqErr *goopenai.RequestError
	)
	out := &APIError{Attempts: info.n, RetryAfter: info.retryAfter, err: err}
	switch {
	case errors.As(err, &apiErr):
		out.StatusCode, out.Type, out.Message = apiErr.HTTPStatusCode, apiErr.Type, apiErr.Message
		if apiErr.Code != nil {
			out.Code = fmt.Sprint(apiErr.Code)
		}
	case errors.As(err, &reqErr):
		out.StatusCode = reqErr.HTTPStatusCode
		out.Message = strings.TrimSpace(string(reqErr.Body))
		if out.Message == "" {
			out.Message = reqErr.HTTPStatus
		}
	default:
		return fmt.Errorf("openai: %w", err)
	}
	return out
}
