package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentgraph/agentgraph/graph"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/agentgraph/agentgraph/telemetry"

// Attribute keys of agentgraph's own spans, metrics and logs.
const (
	RunIDKey     = attribute.Key("agentgraph.run.id")
	ThreadIDKey  = attribute.Key("agentgraph.thread.id")
	NamespaceKey = attribute.Key("agentgraph.namespace")
	StepKey      = attribute.Key("agentgraph.step")
	NodeKey      = attribute.Key("agentgraph.node")
	TaskIDKey    = attribute.Key("agentgraph.task.id")
	OutcomeKey   = attribute.Key("agentgraph.outcome") // ok, error or interrupted
	SandboxIDKey = attribute.Key("agentgraph.sandbox.id")
)

// Telemetry reports runs, model calls, tool calls and sandbox commands. It
// implements graph.Tracer. Make one with New; it is safe for concurrent use.
type Telemetry struct {
	tracer  trace.Tracer
	log     *slog.Logger // nil: no logs
	content bool
	off     bool // no provider and no logger: report nothing, cost nothing

	runDur, nodeDur, toolDur, execDur, opDur metric.Float64Histogram
	tokens                                   metric.Int64Histogram
}

// Option configures New.
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	log     *slog.Logger
	content bool
}

// WithTracerProvider records spans with tp. Without it no span is recorded.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider records metrics with mp. Without it none are recorded.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithLogger logs to l: runs at Info level (Warn when they fail), steps,
// tasks, model calls, tool calls and sandbox commands at Debug level (Warn
// when they fail), each record with the run's thread and run ids and, when
// a span is recording, its trace and span ids.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}

// WithContent records what passes through: the messages sent to and
// received from models (gen_ai.input.messages, gen_ai.output.messages),
// tool arguments and results, interrupt values and sandbox commands. They
// may hold personal or secret data, so they are left out by default.
func WithContent() Option {
	return func(c *config) { c.content = true }
}

// New returns a Telemetry reporting as the options say. One made without
// any provider or logger reports nothing, and its wrappers return what they
// are given, so that turning reporting off costs nothing.
func New(opts ...Option) (*Telemetry, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	off := c.tp == nil && c.mp == nil && c.log == nil
	if c.tp == nil {
		c.tp = tracenoop.NewTracerProvider()
	}
	if c.mp == nil {
		c.mp = metricnoop.NewMeterProvider()
	}
	t := &Telemetry{tracer: c.tp.Tracer(ScopeName), log: c.log, content: c.content, off: off}
	m := c.mp.Meter(ScopeName)
	var errs []error
	seconds := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
		errs = append(errs, err)
		return h
	}
	t.runDur = seconds("agentgraph.run.duration", "Duration of graph runs.")
	t.nodeDur = seconds("agentgraph.node.duration", "Duration of node tasks.")
	t.toolDur = seconds("agentgraph.tool.duration", "Duration of tool calls.")
	t.execDur = seconds("agentgraph.sandbox.exec.duration", "Duration of commands run in sandboxes.")
	t.opDur = seconds("gen_ai.client.operation.duration", "GenAI operation duration.")
	var err error
	t.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"), metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304))
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, fmt.Errorf("telemetry: make instruments: %w", err)
	}
	return t, nil
}

// Context returns ctx carrying t as the graph.Tracer of the runs started
// with it: graph.ContextWithTracer(ctx, t). A Telemetry that reports
// nothing (made without providers or a logger) returns ctx itself.
func (t *Telemetry) Context(ctx context.Context) context.Context {
	if t.off {
		return ctx
	}
	return graph.ContextWithTracer(ctx, t)
}

var _ graph.Tracer = (*Telemetry)(nil)

func noEnd(graph.Outcome) {}

// TraceRun implements graph.Tracer.
func (t *Telemetry) TraceRun(ctx context.Context, run graph.TracedRun) (context.Context, func(graph.Outcome)) {
	if t.off {
		return ctx, noEnd
	}
	attrs := []attribute.KeyValue{RunIDKey.String(run.RunID)}
	if run.ThreadID != "" {
		attrs = append(attrs, ThreadIDKey.String(run.ThreadID), genAIConversationID.String(run.ThreadID))
	}
	if run.Namespace != "" {
		attrs = append(attrs, NamespaceKey.String(run.Namespace))
	}
	if run.Resume {
		attrs = append(attrs, attribute.Bool("agentgraph.resume", true))
	}
	ctx, span := t.tracer.Start(ctx, "graph.run", trace.WithAttributes(attrs...))
	start := time.Now()
	t.logf(ctx, slog.LevelInfo, "run started", slog.String("run_id", run.RunID), slog.String("thread_id", run.ThreadID), slog.String("namespace", run.Namespace))
	return ctx, func(o graph.Outcome) {
		outcome := t.end(ctx, span, o)
		d := time.Since(start)
		t.runDur.Record(context.WithoutCancel(ctx), d.Seconds(), metric.WithAttributes(OutcomeKey.String(outcome)))
		lvl := slog.LevelInfo
		if o.Err != nil {
			lvl = slog.LevelWarn
		}
		t.logf(ctx, lvl, "run ended", slog.String("run_id", run.RunID), slog.String("thread_id", run.ThreadID), slog.String("outcome", outcome), slog.Duration("duration", d), errAttr(o.Err))
	}
}

// TraceStep implements graph.Tracer.
func (t *Telemetry) TraceStep(ctx context.Context, step graph.TracedStep) (context.Context, func(graph.Outcome)) {
	if t.off {
		return ctx, noEnd
	}
	ctx, span := t.tracer.Start(ctx, "graph.step", trace.WithAttributes(StepKey.Int(step.Step), attribute.Int("agentgraph.step.tasks", step.Tasks)))
	t.logf(ctx, slog.LevelDebug, "step started", slog.String("run_id", step.RunID), slog.String("thread_id", step.ThreadID), slog.Int("step", step.Step), slog.Int("tasks", step.Tasks))
	return ctx, func(o graph.Outcome) { t.end(ctx, span, o) }
}

// TraceTask implements graph.Tracer.
func (t *Telemetry) TraceTask(ctx context.Context, task graph.TracedTask) (context.Context, func(graph.Outcome)) {
	if t.off {
		return ctx, noEnd
	}
	ctx, span := t.tracer.Start(ctx, "graph.node "+task.Node, trace.WithAttributes(
		NodeKey.String(task.Node), TaskIDKey.String(task.TaskID), StepKey.Int(task.Step)))
	start := time.Now()
	return ctx, func(o graph.Outcome) {
		outcome := t.end(ctx, span, o)
		d := time.Since(start)
		t.nodeDur.Record(context.WithoutCancel(ctx), d.Seconds(), metric.WithAttributes(NodeKey.String(task.Node), OutcomeKey.String(outcome)))
		lvl := slog.LevelDebug
		if o.Err != nil {
			lvl = slog.LevelWarn
		}
		t.logf(ctx, lvl, "task ended", slog.String("run_id", task.RunID), slog.String("thread_id", task.ThreadID), slog.String("node", task.Node),
			slog.Int("step", task.Step), slog.String("task_id", task.TaskID), slog.String("outcome", outcome), slog.Duration("duration", d), errAttr(o.Err))
	}
}

// end records an outcome on span, ends it and names the outcome.
func (t *Telemetry) end(ctx context.Context, span trace.Span, o graph.Outcome) string {
	defer span.End()
	switch {
	case o.Err != nil:
		span.RecordError(o.Err)
		span.SetStatus(codes.Error, o.Err.Error())
		return "error"
	case len(o.Interrupts) > 0:
		if span.IsRecording() {
			span.SetAttributes(attribute.Bool("agentgraph.interrupted", true))
			for _, in := range o.Interrupts {
				attrs := []attribute.KeyValue{attribute.String("agentgraph.interrupt.id", in.ID), NodeKey.String(in.Node)}
				if in.When != "" {
					attrs = append(attrs, attribute.String("agentgraph.interrupt.when", in.When))
				}
				if t.content && in.Value != nil {
					attrs = append(attrs, attribute.String("agentgraph.interrupt.value", jsonText(in.Value)))
				}
				span.AddEvent("interrupt", trace.WithAttributes(attrs...))
			}
		}
		return "interrupted"
	}
	return "ok"
}

// logf logs with the trace and span ids of ctx's span, when it records.
func (t *Telemetry) logf(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if t.log == nil || !t.log.Enabled(ctx, level) {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	kept := attrs[:0]
	for _, a := range attrs {
		if !a.Equal(slog.Attr{}) && !(a.Value.Kind() == slog.KindString && a.Value.String() == "") {
			kept = append(kept, a)
		}
	}
	t.log.LogAttrs(ctx, level, msg, kept...)
}

func errAttr(err error) slog.Attr {
	if err == nil {
		return slog.Attr{}
	}
	return slog.String("error", err.Error())
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
