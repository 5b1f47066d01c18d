package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentgraph/agentgraph/model"
)

// APIError is an error answer from the API, after the SDK's retries. It
// matches model.ErrTemporary with errors.Is when Temporary reports true, and
// model.ErrRejected otherwise; errors.As also finds the SDK's *Error under it.
type APIError struct {
	// StatusCode is the HTTP status of the answer (200 for an error event
	// inside a stream).
	StatusCode int
	// Type is the API's classification, such as "invalid_request_error" or
	// "overloaded_error".
	Type string
	// Message is the API's own explanation.
	Message string
	// RequestID identifies the request to Anthropic's support.
	RequestID string
	err       *sdk.Error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("anthropic: ")
	if e.StatusCode != http.StatusOK {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	} else {
		b.WriteString("stream error")
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	switch {
	case e.StatusCode == 401 || e.StatusCode == 403:
		b.WriteString("; check the API key passed with anthropic.WithAPIKey")
	case e.StatusCode == 404:
		b.WriteString("; check the model name and the base URL")
	case e.Type == "billing_error":
		b.WriteString("; the account cannot pay for the request: retrying will not help")
	case e.Temporary():
		b.WriteString("; the error is temporary: try again later or raise anthropic.WithMaxRetries")
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later: rate limits,
// overload, timeouts and server errors.
func (e *APIError) Temporary() bool {
	switch e.Type {
	case "rate_limit_error", "overloaded_error", "api_error", "timeout_error":
		return true
	case "":
		return e.StatusCode == 408 || e.StatusCode == 409 || e.StatusCode == 429 || e.StatusCode >= 500
	}
	return false
}

// Is makes errors.Is match model.ErrTemporary or model.ErrRejected, as
// Temporary says.
func (e *APIError) Is(target error) bool {
	switch target {
	case model.ErrTemporary:
		return e.Temporary()
	case model.ErrRejected:
		return !e.Temporary()
	}
	return false
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.err }

func wrapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("anthropic: %w", ctxErr)
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		out := &APIError{StatusCode: se.StatusCode, Type: string(se.Type()), Message: se.Message, RequestID: se.RequestID, err: se}
		if out.Message == "" {
			out.Message = strings.TrimSpace(se.RawJSON())
		}
		return out
	}
	// The connection failed or the answer could not be read.
	return &classed{fmt.Errorf("anthropic: %w", err), model.ErrTemporary}
}

// classed is an error that also matches a model error class.
type classed struct {
	err, class error
}

func (e *classed) Error() string   { return e.err.Error() }
func (e *classed) Unwrap() []error { return []error{e.err, e.class} }
