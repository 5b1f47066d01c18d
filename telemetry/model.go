package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/model"
)

var genAIConversationID = semconv.GenAIConversationIDKey

// Model returns m reporting each call: a span "chat <model>" following the
// GenAI semantic conventions (operation, provider, requested model, token
// usage, finish reason, and with WithContent the messages in and out), the
// gen_ai.client.operation.duration and gen_ai.client.token.usage metrics,
// and a Debug log record. The model's name comes from its Name method, the
// provider from a Provider method or else from the name of the Go package
// that implements m ("openai", "anthropic").
func (t *Telemetry) Model(m model.ChatModel) model.ChatModel {
	if t.off {
		return m
	}
	tm := &tracedModel{t: t, m: m, provider: providerOf(m)}
	if n, ok := m.(interface{ Name() string }); ok {
		tm.name = n.Name()
	}
	return tm
}

type tracedModel struct {
	t        *Telemetry
	m        model.ChatModel
	name     string
	provider string
}

// Name returns the wrapped model's name, "" when it has none.
func (tm *tracedModel) Name() string { return tm.name }

func providerOf(m model.ChatModel) string {
	if p, ok := m.(interface{ Provider() string }); ok {
		return p.Provider()
	}
	t := reflect.TypeOf(m)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.PkgPath() == "" {
		return "unknown"
	}
	p := t.PkgPath()
	return p[strings.LastIndexByte(p, '/')+1:]
}

func (tm *tracedModel) start(ctx context.Context, req model.Request) (context.Context, trace.Span, []attribute.KeyValue) {
	common := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String("chat"),
		semconv.GenAIProviderNameKey.String(tm.provider),
	}
	if tm.name != "" {
		common = append(common, semconv.GenAIRequestModelKey.String(tm.name))
	}
	name := "chat"
	if tm.name != "" {
		name += " " + tm.name
	}
	ctx, span := tm.t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(common...))
	if span.IsRecording() {
		if req.Temperature != nil {
			span.SetAttributes(semconv.GenAIRequestTemperatureKey.Float64(*req.Temperature))
		}
		if req.MaxTokens > 0 {
			span.SetAttributes(semconv.GenAIRequestMaxTokensKey.Int(req.MaxTokens))
		}
		if tm.t.content {
			span.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON(req.Messages)))
			if len(req.Tools) > 0 {
				span.SetAttributes(semconv.GenAIToolDefinitionsKey.String(jsonText(req.Tools)))
			}
		}
	}
	return ctx, span, common
}

func (tm *tracedModel) end(ctx context.Context, span trace.Span, common []attribute.KeyValue, start time.Time, resp model.Response, err error) {
	defer span.End()
	d := time.Since(start)
	mctx := context.WithoutCancel(ctx)
	if err != nil {
		errType := errorType(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		tm.t.opDur.Record(mctx, d.Seconds(), metric.WithAttributes(append(common, semconv.ErrorTypeKey.String(errType))...))
		tm.t.logf(ctx, slog.LevelWarn, "model call failed", append(runAttrs(ctx), slog.String("model", tm.name), slog.Duration("duration", d), errAttr(err))...)
		return
	}
	u := resp.Usage
	if u.IsZero() && resp.Message.Usage != nil {
		u = *resp.Message.Usage
	}
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIUsageInputTokensKey.Int(u.InputTokens),
			semconv.GenAIUsageOutputTokensKey.Int(u.OutputTokens),
		)
		if u.CacheReadTokens > 0 {
			span.SetAttributes(semconv.GenAIUsageCacheReadInputTokensKey.Int(u.CacheReadTokens))
		}
		if u.CacheWriteTokens > 0 {
			span.SetAttributes(semconv.GenAIUsageCacheCreationInputTokensKey.Int(u.CacheWriteTokens))
		}
		if resp.FinishReason != "" {
			span.SetAttributes(semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{resp.FinishReason}))
		}
		if tm.t.content {
			span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputJSON(resp)))
		}
	}
	tm.t.opDur.Record(mctx, d.Seconds(), metric.WithAttributes(common...))
	if !u.IsZero() {
		tm.t.tokens.Record(mctx, int64(u.InputTokens), metric.WithAttributes(append(common, semconv.GenAITokenTypeKey.String("input"))...))
		tm.t.tokens.Record(mctx, int64(u.OutputTokens), metric.WithAttributes(append(common, semconv.GenAITokenTypeKey.String("output"))...))
	}
	tm.t.logf(ctx, slog.LevelDebug, "model call done", append(runAttrs(ctx), slog.String("model", tm.name), slog.Int("input_tokens", u.InputTokens),
		slog.Int("output_tokens", u.OutputTokens), slog.String("finish_reason", resp.FinishReason), slog.Duration("duration", d))...)
}

// Generate calls the wrapped model's Generate under a span.
func (tm *tracedModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	ctx, span, common := tm.start(ctx, req)
	start := time.Now()
	resp, err := tm.m.Generate(ctx, req)
	tm.end(ctx, span, common, start, resp, err)
	return resp, err
}

// Stream calls the wrapped model's Stream under a span that ends with the
// stream: at its last chunk, its error, or when the consumer stops.
func (tm *tracedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		ctx, span, common := tm.start(ctx, req)
		start := time.Now()
		var (
			resp  model.Response
			err   error
			ended bool
		)
		defer func() {
			if !ended {
				if err == nil {
					err = errStreamStopped
				}
				tm.end(ctx, span, common, start, resp, err)
			}
		}()
		for c, cerr := range tm.m.Stream(ctx, req) {
			if cerr != nil {
				err = cerr
			} else if c.Done != nil {
				resp = *c.Done
				ended = true
				tm.end(ctx, span, common, start, resp, nil)
			}
			if !yield(c, cerr) {
				return
			}
		}
	}
}

var errStreamStopped = errors.New("the consumer stopped the stream before its end")

// errorType names an error for error.type: the model package's classes, or
// the Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, model.ErrTemporary):
		return "temporary"
	case errors.Is(err, model.ErrRejected):
		return "rejected"
	case errors.Is(err, model.ErrInvalidMessage):
		return "invalid_message"
	}
	return reflect.TypeOf(err).String()
}

// part is a message part in the shape the GenAI conventions give
// gen_ai.input.messages and gen_ai.output.messages.
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type convMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func convert(m model.Message) convMessage {
	c := convMessage{Role: string(m.Role), Parts: []part{}}
	switch {
	case m.Role == model.RoleTool:
		c.Parts = append(c.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
	case m.Content != "":
		c.Parts = append(c.Parts, part{Type: "text", Content: m.Content})
	}
	for _, tc := range m.ToolCalls {
		c.Parts = append(c.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return c
}

func messagesJSON(msgs []model.Message) string {
	out := make([]convMessage, len(msgs))
	for i, m := range msgs {
		out[i] = convert(m)
	}
	return jsonText(out)
}

func outputJSON(resp model.Response) string {
	c := convert(resp.Message)
	c.FinishReason = resp.FinishReason
	return jsonText([]convMessage{c})
}
