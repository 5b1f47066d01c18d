package telemetry

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// Tool returns tool reporting each call (see ToolMiddleware).
func (t *Telemetry) Tool(tool prebuilt.Tool) prebuilt.Tool {
	if t.off {
		return tool
	}
	return prebuilt.Wrap(tool, t.ToolMiddleware())
}

// Tools returns the tools, each reporting its calls.
func (t *Telemetry) Tools(tools ...prebuilt.Tool) []prebuilt.Tool {
	out := make([]prebuilt.Tool, len(tools))
	for i, tool := range tools {
		out[i] = t.Tool(tool)
	}
	return out
}

// ToolMiddleware is a prebuilt.Middleware reporting each call of a tool: a
// span "execute_tool <name>" following the GenAI semantic conventions (tool
// name, call id, and with WithContent the arguments and the result), the
// agentgraph.tool.duration metric and a Debug log record. A call that pauses
// the run (graph.Interrupt) is recorded as an interrupt, not an error.
func (t *Telemetry) ToolMiddleware() prebuilt.Middleware {
	return func(spec model.ToolSpec, next prebuilt.CallFunc) prebuilt.CallFunc {
		if t.off {
			return next
		}
		name, desc := spec.Name, spec.Description
		spanName := "execute_tool " + name
		return func(ctx context.Context, args json.RawMessage) (any, error) {
			attrs := []attribute.KeyValue{
				semconv.GenAIOperationNameKey.String("execute_tool"),
				semconv.GenAIToolNameKey.String(name),
				semconv.GenAIToolTypeKey.String("function"),
			}
			if id := prebuilt.ToolCallID(ctx); id != "" {
				attrs = append(attrs, semconv.GenAIToolCallIDKey.String(id))
			}
			ctx, span := t.tracer.Start(ctx, spanName, trace.WithAttributes(attrs...))
			defer span.End()
			if span.IsRecording() {
				if desc != "" {
					span.SetAttributes(semconv.GenAIToolDescriptionKey.String(desc))
				}
				if t.content {
					span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(string(args)))
				}
			}
			start := time.Now()
			v, err := next(ctx, args)
			d := time.Since(start)
			outcome := "ok"
			switch {
			case err != nil && graph.IsInterrupt(err):
				outcome = "interrupted"
				span.SetAttributes(attribute.Bool("agentgraph.interrupted", true))
				span.AddEvent("interrupt")
			case err != nil:
				outcome = "error"
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
			case t.content && span.IsRecording():
				if text, cerr := prebuilt.Content(v); cerr == nil {
					span.SetAttributes(semconv.GenAIToolCallResultKey.String(text))
				}
			}
			t.toolDur.Record(context.WithoutCancel(ctx), d.Seconds(), metric.WithAttributes(semconv.GenAIToolNameKey.String(name), OutcomeKey.String(outcome)))
			lvl := slog.LevelDebug
			if outcome == "error" {
				lvl = slog.LevelWarn
			}
			t.logf(ctx, lvl, "tool call ended", append(runAttrs(ctx), slog.String("tool", name), slog.String("call_id", prebuilt.ToolCallID(ctx)),
				slog.String("outcome", outcome), slog.Duration("duration", d), errAttr(err))...)
			return v, err
		}
	}
}

// runAttrs names the run ctx belongs to, for log records.
func runAttrs(ctx context.Context) []slog.Attr {
	cfg, ok := graph.ConfigFrom(ctx)
	if !ok {
		return nil
	}
	return []slog.Attr{slog.String("run_id", cfg.RunID), slog.String("thread_id", cfg.ThreadID), slog.String("node", cfg.Node)}
}
