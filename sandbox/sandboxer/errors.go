package sandboxer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Errors of the API beyond the sandbox package's sentinels. An *APIError matches one of them (or a sandbox
// sentinel) with errors.Is.
var (
	// ErrUnauthorized: the key is missing, wrong or revoked (401).
	ErrUnauthorized = errors.New("sandboxer: unauthorized")
	// ErrForbidden: the key may not do this (403).
	ErrForbidden = errors.New("sandboxer: forbidden")
	// ErrRateLimited: a rate or concurrency limit was hit (429); retried automatically where safe.
	ErrRateLimited = errors.New("sandboxer: limit reached")
	// ErrUnavailable: the service has no capacity right now (503); retried automatically where safe.
	ErrUnavailable = errors.New("sandboxer: service unavailable")
	// ErrConflict: the request conflicts with the sandbox's or the key's state (409), other than a stopped
	// sandbox, which is sandbox.ErrStopped.
	ErrConflict = errors.New("sandboxer: conflict")
)

// APIError is an error envelope the API answered with.
type APIError struct {
	Status    int            // HTTP status
	Code      string         // machine-readable code, such as "not_found" or "invalid_timeout"
	Message   string         // the server's explanation
	RequestID string         // quote it when reporting a problem
	Details   map[string]any // extra fields of the envelope's error.details, if any
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("sandboxer: %s: %s", e.Code, e.Message)
	if e.Status != 0 {
		msg = fmt.Sprintf("sandboxer: %d %s: %s", e.Status, e.Code, e.Message)
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	if hint := e.hint(); hint != "" {
		msg += ": " + hint
	}
	return msg
}

func (e *APIError) hint() string {
	switch e.Status {
	case http.StatusUnauthorized:
		return "check the API key (WithAPIKey, or SANDBOXER_API_KEY with OptionsFromEnv)"
	case http.StatusTooManyRequests:
		return "stop or delete sandboxes you no longer need, or wait and try again"
	}
	return ""
}

// Unwrap returns the sentinels the error stands for, so that errors.Is works.
func (e *APIError) Unwrap() []error {
	switch e.Code {
	case "not_found", "cancelled":
		return []error{sandbox.ErrNotFound}
	case "file_not_found":
		return []error{fs.ErrNotExist}
	case "machine_not_running":
		return []error{sandbox.ErrStopped, ErrConflict}
	case "invalid_path":
		return []error{sandbox.ErrInvalidPath}
	case "file_too_large", "payload_too_large":
		return []error{sandbox.ErrTooLarge}
	case "quota_exceeded":
		return []error{sandbox.ErrQuota}
	case "not_implemented":
		return []error{errors.ErrUnsupported}
	}
	switch {
	case e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity:
		return []error{sandbox.ErrInvalidArgument}
	case e.Status == http.StatusUnauthorized:
		return []error{ErrUnauthorized}
	case e.Status == http.StatusForbidden:
		return []error{ErrForbidden}
	case e.Status == http.StatusNotFound:
		return []error{sandbox.ErrNotFound}
	case e.Status == http.StatusConflict:
		return []error{ErrConflict}
	case e.Status == http.StatusRequestEntityTooLarge:
		return []error{sandbox.ErrTooLarge}
	case e.Status == http.StatusTooManyRequests:
		return []error{ErrRateLimited}
	case e.Status == http.StatusServiceUnavailable:
		return []error{ErrUnavailable}
	}
	return nil
}

// errorEnvelope is the API's error body.
type errorEnvelope struct {
	OK        bool   `json:"ok"`
	Type      string `json:"type"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
	Error     struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Status  int            `json:"status"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// parseError turns a failed response's body into an *APIError, whatever the body holds.
func parseError(status int, body []byte, requestID string) *APIError {
	e := &APIError{Status: status, RequestID: requestID}
	var env errorEnvelope
	if json.Unmarshal(body, &env) == nil && !env.OK {
		e.Code, e.Message = env.Code, env.Message
		if e.Code == "" {
			e.Code = env.Error.Code
		}
		if e.Message == "" {
			e.Message = env.Error.Message
		}
		if env.RequestID != "" {
			e.RequestID = env.RequestID
		}
		e.Details = env.Error.Details
	}
	if e.Code == "" {
		e.Code = codeForStatus(status)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "conflict"
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("http_%d", status)
}
