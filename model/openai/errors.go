package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/model"
)

// APIError is an error answer from the API, after any retries. It matches
// model.ErrTemporary with errors.Is when Temporary reports true, and
// model.ErrRejected otherwise.
type APIError struct {
	// StatusCode is the HTTP status; 0 for an error sent inside a stream.
	StatusCode int
	// Type and Code are the API's classification, such as
	// "invalid_request_error" and "rate_limit_exceeded", when it sent them.
	Type, Code string
	// Param names the request field at fault, when the API says.
	Param string
	// Message is the API's own explanation, or the body it sent when that was
	// not the usual error object.
	Message string
	// Attempts is how many requests were sent.
	Attempts int
	// RetryAfter is the wait the server last asked for, if it asked.
	RetryAfter time.Duration
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
	case e.Code == codeNoQuota:
		b.WriteString("; the account has no quota left: retrying will not help until it is topped up")
	case e.Temporary():
		b.WriteString("; the error is temporary: try again later or raise openai.WithMaxRetries")
	}
	return b.String()
}

// codeNoQuota is the code of a 429 that waiting does not cure.
const codeNoQuota = "insufficient_quota"

// Temporary reports whether the same request may succeed later: a 429 other
// than insufficient_quota, a 5xx, or a server error inside a stream.
func (e *APIError) Temporary() bool {
	if e.Code == codeNoQuota {
		return false
	}
	if e.StatusCode == 0 {
		return e.Type == "server_error" || e.Code == "rate_limit_exceeded"
	}
	return retryable(e.StatusCode)
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

// wireErrorBody is the error object of an error answer or stream frame.
type wireErrorBody struct {
	Message json.RawMessage `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// apiError builds the error of an answer with status (0 inside a stream)
// and body. A body that is not the API's error object becomes the message.
func apiError(status int, body []byte) *APIError {
	out := &APIError{StatusCode: status}
	var env struct {
		Error *wireErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		out.Message = strings.TrimSpace(string(body))
		return out
	}
	env.Error.fill(out)
	return out
}

func (w *wireErrorBody) fill(out *APIError) {
	out.Type = w.Type
	out.Code = scalar(w.Code)
	out.Param = scalar(w.Param)
	out.Message = scalar(w.Message)
	if out.Message == "" {
		// Some servers send a list of messages.
		var list []string
		if json.Unmarshal(w.Message, &list) == nil {
			out.Message = strings.Join(list, ", ")
		}
	}
}

// scalar returns a JSON string's contents or a number's text; "" for null,
// absence or anything else.
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// classed is an error that also matches a model error class.
type classed struct {
	err, class error
}

func (e *classed) Error() string   { return e.err.Error() }
func (e *classed) Unwrap() []error { return []error{e.err, e.class} }

// ErrCutShort reports a stream that ended before the model said why it
// stopped and before the server's end marker, which happens when the
// connection drops. It matches model.ErrTemporary.
var ErrCutShort = errors.New("openai: the stream ended before the model finished (connection lost?): call again")

// ErrNotStream reports a server that answered a stream request with
// something other than an event stream. It matches model.ErrRejected.
var ErrNotStream = errors.New("openai: the server did not answer the stream request with an event stream")
