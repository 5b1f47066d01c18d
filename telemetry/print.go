package telemetry

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SpanPrinter is an OpenTelemetry span exporter that writes each trace to w
// as an indented tree once its root span ends: one line per span with its
// name, duration, a few telling attributes and its error. It is meant for
// reading a run on a terminal (examples/codeact -trace); give it to
// sdktrace.WithSyncer so each trace prints as soon as it ends.
type SpanPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	pending map[trace.TraceID][]sdktrace.ReadOnlySpan
}

// NewSpanPrinter returns a SpanPrinter writing to w.
func NewSpanPrinter(w io.Writer) *SpanPrinter {
	return &SpanPrinter{w: w, pending: map[trace.TraceID][]sdktrace.ReadOnlySpan{}}
}

// ExportSpans implements sdktrace.SpanExporter.
func (p *SpanPrinter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range spans {
		id := s.SpanContext().TraceID()
		p.pending[id] = append(p.pending[id], s)
		if !s.Parent().IsValid() {
			if err := p.print(p.pending[id]); err != nil {
				return err
			}
			delete(p.pending, id)
		}
	}
	return nil
}

// Shutdown prints the spans of traces whose root has not ended.
func (p *SpanPrinter) Shutdown(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, spans := range p.pending {
		if err := p.print(spans); err != nil {
			return err
		}
		delete(p.pending, id)
	}
	return nil
}

func (p *SpanPrinter) print(spans []sdktrace.ReadOnlySpan) error {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	known := map[trace.SpanID]bool{}
	for _, s := range spans {
		known[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if parent := s.Parent().SpanID(); s.Parent().IsValid() && known[parent] {
			children[parent] = append(children[parent], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s %s%s\n", strings.Repeat("  ", depth), s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond), describe(s))
		kids := children[s.SpanContext().SpanID()]
		slices.SortStableFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortStableFunc(roots, byStart)
	for _, r := range roots {
		walk(r, 0)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// shown are the attributes a printed span line carries, in this order,
// with the names it gives them.
var shown = []struct{ key, label string }{
	{"agentgraph.thread.id", "thread"}, {"agentgraph.step", "step"},
	{"gen_ai.usage.input_tokens", "input_tokens"}, {"gen_ai.usage.output_tokens", "output_tokens"},
	{"gen_ai.response.finish_reasons", "finish"}, {"gen_ai.tool.call.id", "call"},
	{"agentgraph.sandbox.id", "sandbox"}, {"agentgraph.sandbox.exit_code", "exit_code"},
	{"agentgraph.sandbox.timed_out", "timed_out"}, {"agentgraph.interrupted", "interrupted"},
}

func describe(s sdktrace.ReadOnlySpan) string {
	var parts []string
	attrs := s.Attributes()
	for _, sh := range shown {
		for _, a := range attrs {
			if string(a.Key) == sh.key {
				parts = append(parts, sh.label+"="+a.Value.String())
			}
		}
	}
	if st := s.Status(); st.Code == codes.Error {
		parts = append(parts, "error="+fmt.Sprintf("%q", st.Description))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

var _ sdktrace.SpanExporter = (*SpanPrinter)(nil)
