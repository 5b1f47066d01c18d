package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"os"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

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

// ErrCutShort reports a stream that ended before the model said why it
// stopped (no finish_reason), which happens when the connection drops.
var ErrCutShort = errors.New("openai: the stream ended before the model finished (connection lost?): call again")

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
// Request fields map to the wire as follows: ToolChoice "" sends no
// tool_choice, "none"/"required"/"auto" are sent as strings, and a tool name
// becomes {"type":"function","function":{"name":...}}; ParallelToolCalls is
// sent only with tools (the API rejects it otherwise); MaxTokens is sent as
// max_completion_tokens (see WithLegacyMaxTokens); a Temperature of exactly 0
// is sent as the smallest positive float32, because go-openai drops a zero
// temperature and the server's default would apply. A tool message's Status
// and Name have no place on the wire: a failed call reaches the model
// through its content.
type Model struct {
	name   string
	cfg    config
	client *goopenai.Client
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
	gc := goopenai.DefaultConfig(cfg.apiKey)
	gc.BaseURL = strings.TrimRight(cfg.baseURL, "/")
	gc.OrgID = cfg.org
	gc.HTTPClient = &retrier{next: cfg.httpClient, maxRetries: cfg.maxRetries, base: cfg.backoffBase, max: cfg.backoffMax}
	return &Model{name: modelName, cfg: cfg, client: goopenai.NewClientWithConfig(gc)}, nil
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.name }

// Generate sends req and returns the model's answer. Errors from the API are
// *APIError; a cancelled ctx returns its error, also while waiting to retry.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	creq, err := m.request(req)
	if err != nil {
		return model.Response{}, err
	}
	ctx, info := withAttempts(ctx)
	resp, err := m.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return model.Response{}, wrapError(ctx, err, info)
	}
	if len(resp.Choices) == 0 {
		return model.Response{}, ErrNoChoices
	}
	ch := resp.Choices[0]
	msg := model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: model.Arguments(tc.Function.Arguments)})
	}
	return model.Response{Message: msg, Usage: usage(resp.Usage), FinishReason: string(ch.FinishReason)}, nil
}

// Stream sends req with streaming on and yields content and tool-call pieces
// as they arrive, a usage chunk (usage is requested with stream_options), and
// a last chunk whose Done holds the assembled answer. Breaking out of the
// loop closes the connection.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		creq, err := m.request(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		creq.Stream = true
		creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
		ctx, info := withAttempts(ctx)
		stream, err := m.client.CreateChatCompletionStream(ctx, creq)
		if err != nil {
			yield(model.Chunk{}, wrapError(ctx, err, info))
			return
		}
		defer stream.Close()

		var (
			text   strings.Builder
			calls  model.ToolCallAssembler
			use    model.Usage
			finish string
		)
		for {
			frame, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				yield(model.Chunk{}, wrapError(ctx, err, info))
				return
			}
			var c model.Chunk
			if frame.Usage != nil {
				use = usage(*frame.Usage)
				u := use
				c.Usage = &u
			}
			for _, ch := range frame.Choices {
				if ch.Index != 0 {
					continue // only one choice is requested
				}
				c.Delta = ch.Delta.Content
				for i, tc := range ch.Delta.ToolCalls {
					idx := i
					if tc.Index != nil {
						idx = *tc.Index
					}
					d := model.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
					calls.Add(d)
					c.ToolCalls = append(c.ToolCalls, d)
				}
				if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
					finish = string(ch.FinishReason)
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
		if finish == "" {
			// go-openai reports a dropped connection as the same io.EOF as
			// "data: [DONE]"; a missing finish_reason tells them apart.
			yield(model.Chunk{}, ErrCutShort)
			return
		}
		done := model.Response{
			Message:      model.Message{ID: model.NewID(), Role: model.RoleAssistant, Content: text.String(), ToolCalls: calls.Calls()},
			Usage:        use,
			FinishReason: finish,
		}
		yield(model.Chunk{Done: &done}, nil)
	}
}

func usage(u goopenai.Usage) model.Usage {
	return model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// request translates req into the wire request.
func (m *Model) request(req model.Request) (goopenai.ChatCompletionRequest, error) {
	if len(req.Messages) == 0 {
		return goopenai.ChatCompletionRequest{}, fmt.Errorf("openai: %w: the request has no messages", model.ErrInvalidMessage)
	}
	if err := model.Validate(req.Messages); err != nil {
		return goopenai.ChatCompletionRequest{}, fmt.Errorf("openai: %w", err)
	}
	out := goopenai.ChatCompletionRequest{Model: m.name, Messages: make([]goopenai.ChatCompletionMessage, len(req.Messages))}
	for i, msg := range req.Messages {
		w := goopenai.ChatCompletionMessage{Role: string(msg.Role), Content: msg.Content}
		switch msg.Role {
		case model.RoleTool:
			// The wire format links a tool message by tool_call_id only; it has
			// no name or status, so an error shows in the content alone.
			w.ToolCallID = msg.ToolCallID
		case model.RoleAssistant:
			w.Name = msg.Name
			for _, c := range msg.ToolCalls {
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{
					ID: c.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: args},
				})
			}
		default:
			w.Name = msg.Name
		}
		out.Messages[i] = w
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	switch req.ToolChoice {
	case model.ToolChoiceAuto:
	case "auto", model.ToolChoiceNone, model.ToolChoiceRequired:
		out.ToolChoice = string(req.ToolChoice)
	default:
		out.ToolChoice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: req.ToolChoice.Tool()}}
	}
	// The API rejects parallel_tool_calls when no tools are sent.
	if req.ParallelToolCalls != nil && len(req.Tools) > 0 {
		out.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		if t == 0 {
			// go-openai omits a zero temperature, which would leave the
			// server's default (1) in force; the smallest positive float32 is
			// greedy sampling in effect and survives encoding.
			t = math.SmallestNonzeroFloat32
		}
		out.Temperature = t
	}
	if req.MaxTokens > 0 {
		if m.cfg.legacyMaxTokens {
			out.MaxTokens = req.MaxTokens
		} else {
			out.MaxCompletionTokens = req.MaxTokens
		}
	}
	return out, nil
}
