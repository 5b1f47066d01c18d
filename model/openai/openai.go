package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/model"
)

// Environment variables New reads when no option gives the value.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultBaseURL is used when neither WithBaseURL nor OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// ErrNoAPIKey reports that no API key was given.
var ErrNoAPIKey = errors.New("openai: no API key: set " + EnvAPIKey + " or pass openai.WithAPIKey (servers that need no key accept any value)")

// ErrNoChoices reports a completion without any choice in it.
var ErrNoChoices = errors.New("openai: the server returned no choices")

type config struct {
	apiKey, baseURL, org string
	httpClient           *http.Client
	maxRetries           int
	backoffBase          time.Duration
	backoffMax           time.Duration
	legacyMaxTokens      bool
}

// Option configures New.
type Option func(*config)

// WithAPIKey sets the API key, overriding OPENAI_API_KEY.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL (for example "http://localhost:11434/v1"),
// overriding OPENAI_BASE_URL. Requests go to base URL + "/chat/completions".
func WithBaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// WithOrganization sends the OpenAI-Organization header.
func WithOrganization(org string) Option { return func(c *config) { c.org = org } }

// WithHTTPClient sets the HTTP client; the default is a new http.Client with
// no timeout, so bound calls with the context.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithMaxRetries sets how many times a request answered with 429 or 5xx is
// retried (default 3; 0 disables retries).
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// WithBackoff sets the first retry's nominal delay (default 500ms; it doubles
// on each retry, with jitter) and the longest wait (default 30s). A server
// that asks, by Retry-After, for a longer wait than max is not retried: its
// error is returned at once with the wait it asked for.
func WithBackoff(base, max time.Duration) Option {
	return func(c *config) { c.backoffBase, c.backoffMax = base, max }
}

// WithLegacyMaxTokens sends Request.MaxTokens as max_tokens instead of
// max_completion_tokens, for servers that only know the older field.
func WithLegacyMaxTokens() Option { return func(c *config) { c.legacyMaxTokens = true } }

// Model is a model.ChatModel over a Chat Completions endpoint. It is safe for
// concurrent use.
//
// Request fields map to the wire as follows: every message carries
// "content", an empty string included, except an assistant message that
// asks for tool calls and says nothing; ToolChoice "" sends no tool_choice,
// "none"/"required"/"auto" are sent as strings, and a tool name becomes
// {"type":"function","function":{"name":...}}; ParallelToolCalls is sent
// only with tools (the API rejects it otherwise); ResponseFormat becomes
// response_format of type json_schema; MaxTokens is sent as
// max_completion_tokens (see WithLegacyMaxTokens). A tool message's Status
// and Name have no place on the wire: a failed call reaches the model
// through its content. A refusal is returned as the answer's content.
type Model struct {
	name   string
	cfg    config
	url    string
	header http.Header
	r      retrier
}

var _ model.ChatModel = (*Model)(nil)

// New returns a model that calls modelName (for example "gpt-4o-mini") at the
// configured endpoint. The key and base URL come from the options, else from
// OPENAI_API_KEY and OPENAI_BASE_URL; a missing key is ErrNoAPIKey.
func New(modelName string, opts ...Option) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("openai: empty model name: pass the model to call, such as \"gpt-4o-mini\"")
	}
	cfg := config{maxRetries: 3, backoffBase: 500 * time.Millisecond, backoffMax: 30 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.apiKey == "" {
		cfg.apiKey = os.Getenv(EnvAPIKey)
	}
	if cfg.apiKey == "" {
		return nil, ErrNoAPIKey
	}
	if cfg.baseURL == "" {
		cfg.baseURL = os.Getenv(EnvBaseURL)
	}
	if cfg.baseURL == "" {
		cfg.baseURL = DefaultBaseURL
	}
	if cfg.maxRetries < 0 {
		return nil, fmt.Errorf("openai: max retries is %d: pass 0 or more", cfg.maxRetries)
	}
	if cfg.backoffBase <= 0 || cfg.backoffMax < cfg.backoffBase {
		return nil, fmt.Errorf("openai: backoff base %v and max %v: need 0 < base <= max", cfg.backoffBase, cfg.backoffMax)
	}
	if cfg.httpClient == nil {
		cfg.httpClient = &http.Client{}
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+cfg.apiKey)
	h.Set("Content-Type", "application/json")
	if cfg.org != "" {
		h.Set("OpenAI-Organization", cfg.org)
	}
	return &Model{
		name: modelName, cfg: cfg, header: h,
		url: strings.TrimRight(cfg.baseURL, "/") + "/chat/completions",
		r:   retrier{client: cfg.httpClient, maxRetries: cfg.maxRetries, base: cfg.backoffBase, max: cfg.backoffMax},
	}, nil
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.name }

// Generate sends req and returns the model's answer. Errors from the API are
// *APIError; a cancelled ctx returns its error, also while waiting to retry.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := m.request(req, false)
	if err != nil {
		return model.Response{}, err
	}
	resp, err := m.r.send(ctx, m.url, m.header, body)
	if err != nil {
		return model.Response{}, err
	}
	defer resp.Body.Close()
	var c wireCompletion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return model.Response{}, fmt.Errorf("openai: %w", ctxErr)
		}
		return model.Response{}, &classed{fmt.Errorf("openai: the answer is not a chat completion (%v): check the base URL", err), model.ErrRejected}
	}
	if len(c.Choices) == 0 {
		return model.Response{}, &classed{ErrNoChoices, model.ErrTemporary}
	}
	ch := c.Choices[0]
	var calls model.ToolCallAssembler
	for i, tc := range ch.Message.ToolCalls {
		calls.Add(model.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: argumentText(tc.Function.Arguments)})
	}
	out := model.Response{
		Message:      model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: ch.Message.Content + ch.Message.Refusal, ToolCalls: calls.Calls()},
		FinishReason: ch.FinishReason,
	}
	if c.Usage != nil {
		out.Usage = c.Usage.usage()
		u := out.Usage
		out.Message.Usage = &u
	}
	return out, nil
}

// Stream sends req with streaming on and yields content and tool-call pieces
// as they arrive, a usage chunk (usage is requested with stream_options), and
// a last chunk whose Done holds the assembled answer, equal to what Generate
// would return. Breaking out of the loop closes the connection.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		body, err := m.request(req, true)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		resp, err := m.r.send(ctx, m.url, m.header, body)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body) // longer lines are joined by readLine
		if err := checkEventStream(resp, br); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var (
			text     strings.Builder
			calls    model.ToolCallAssembler
			usage    *model.Usage
			finish   string
			done     bool
			unlinked = -1 // the call a piece without an index continues
			lastID   string
			line     []byte
		)
		for {
			data, err := nextEvent(br, &line)
			if err == io.EOF {
				break
			}
			if err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					err = ctxErr
				} else {
					err = &classed{err, model.ErrTemporary}
				}
				yield(model.Chunk{}, fmt.Errorf("openai: %w", err))
				return
			}
			if bytes.Equal(data, []byte("[DONE]")) {
				done = true
				break
			}
			var frame wireChunk
			if err := json.Unmarshal(data, &frame); err != nil {
				yield(model.Chunk{}, &classed{fmt.Errorf("openai: a stream event is not a chat completion chunk (%v): %.80s", err, data), model.ErrRejected})
				return
			}
			if frame.Error != nil {
				e := &APIError{Attempts: 1}
				frame.Error.fill(e)
				yield(model.Chunk{}, e)
				return
			}
			var c model.Chunk
			if frame.Usage != nil {
				u := frame.Usage.usage()
				usage, c.Usage = &u, &u
			}
			for _, ch := range frame.Choices {
				if ch.Index != 0 {
					continue // only one choice is requested
				}
				c.Delta = ch.Delta.Content + ch.Delta.Refusal
				for _, tc := range ch.Delta.ToolCalls {
					var idx int
					switch {
					case tc.Index != nil:
						idx = *tc.Index
					case unlinked < 0 || (tc.ID != "" && tc.ID != lastID):
						// Without an index, a new id starts a new call.
						idx = calls.Len()
						unlinked = idx
					default:
						idx = unlinked
					}
					if tc.ID != "" {
						lastID = tc.ID
					}
					d := model.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: argumentText(tc.Function.Arguments)}
					calls.Add(d)
					c.ToolCalls = append(c.ToolCalls, d)
				}
				if ch.FinishReason != "" {
					finish = ch.FinishReason
				}
			}
			text.WriteString(c.Delta)
			if c.Delta == "" && len(c.ToolCalls) == 0 && c.Usage == nil {
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		if finish == "" && !done {
			yield(model.Chunk{}, &classed{ErrCutShort, model.ErrTemporary})
			return
		}
		out := model.Response{
			Message:      model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: text.String(), ToolCalls: calls.Calls()},
			FinishReason: finish,
		}
		if usage != nil {
			out.Usage = *usage
			u := *usage
			out.Message.Usage = &u
		}
		yield(model.Chunk{Done: &out}, nil)
	}
}

// checkEventStream returns nil when resp is an event stream. A server that
// ignored "stream": true and answered otherwise gets an error saying what
// it sent: its API error when the body is one, else ErrNotStream.
func checkEventStream(resp *http.Response, br *bufio.Reader) error {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		return nil
	}
	// Some servers send events without the content type; events begin with
	// a field name or a comment.
	start, _ := br.Peek(6)
	if bytes.HasPrefix(start, []byte("data:")) || bytes.HasPrefix(start, []byte("event:")) || bytes.HasPrefix(start, []byte(":")) {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(br, maxErrorBody))
	if e := apiError(resp.StatusCode, body); e.Type != "" || e.Code != "" {
		e.Attempts = 1
		return e
	}
	return &classed{fmt.Errorf("%w: it sent Content-Type %q and %.80q; the server may not support streaming: call Generate instead",
		ErrNotStream, resp.Header.Get("Content-Type"), body), model.ErrRejected}
}

// nextEvent returns the data of the next server-sent event that has any,
// its data lines joined by newlines, or io.EOF at the end of the stream.
// line is scratch space kept between calls.
func nextEvent(br *bufio.Reader, line *[]byte) ([]byte, error) {
	var data []byte
	has := false
	for {
		l, err := readLine(br, line)
		if err != nil {
			if err == io.EOF && has {
				return data, nil
			}
			return nil, err
		}
		if len(l) == 0 {
			if has {
				return data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(l, []byte(":"))
		if string(field) != "data" {
			continue // comments, event names, ids and retry hints
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if has {
			data = append(data, '\n')
		}
		data = append(data, value...)
		has = true
	}
}

// readLine returns the next line without its line ending, however long.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		part, err := br.ReadSlice('\n')
		*buf = append(*buf, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || len(*buf) == 0) {
			return nil, err
		}
		l := bytes.TrimSuffix(*buf, []byte("\n"))
		return bytes.TrimSuffix(l, []byte("\r")), nil
	}
}
