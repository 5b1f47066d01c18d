package telemetry

import (
	"context"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Backend returns b with every sandbox it creates or gets reporting its
// commands (see Sandbox).
func (t *Telemetry) Backend(b sandbox.Backend) sandbox.Backend {
	if t.off {
		return b
	}
	return &tracedBackend{t: t, b: b}
}

type tracedBackend struct {
	t *Telemetry
	b sandbox.Backend
}

func (tb *tracedBackend) Create(ctx context.Context, opts sandbox.CreateOptions) (sandbox.Sandbox, error) {
	s, err := tb.b.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tb.t.Sandbox(s), nil
}

func (tb *tracedBackend) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	s, err := tb.b.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return tb.t.Sandbox(s), nil
}

func (tb *tracedBackend) List(ctx context.Context, f sandbox.Filter) ([]sandbox.Info, error) {
	return tb.b.List(ctx, f)
}

// Close closes the wrapped backend when it is an io.Closer.
func (tb *tracedBackend) Close() error {
	if c, ok := tb.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Reap passes on to the wrapped backend when it is a sandbox.Reaper, and
// reaps nothing otherwise.
func (tb *tracedBackend) Reap(ctx context.Context) ([]string, error) {
	if r, ok := tb.b.(sandbox.Reaper); ok {
		return r.Reap(ctx)
	}
	return nil, nil
}

// Sandbox returns s reporting each command it runs (Exec): a span
// "sandbox.exec" with the sandbox's id, the exit code and whether the command
// timed out (and with WithContent the command), the
// agentgraph.sandbox.exec.duration metric and a Debug log record. When s has
// all the optional interfaces (sandbox.Downloader, FileLister, FileRemover
// and Starter), as the local backend's sandboxes do, the returned sandbox has
// them too; otherwise it has only the methods of sandbox.Sandbox.
func (t *Telemetry) Sandbox(s sandbox.Sandbox) sandbox.Sandbox {
	if t.off {
		return s
	}
	ts := &tracedSandbox{Sandbox: s, t: t}
	if full, ok := s.(fullSandbox); ok {
		return &tracedFullSandbox{tracedSandbox: ts, Downloader: full, FileLister: full, FileRemover: full, Starter: full}
	}
	return ts
}

type fullSandbox interface {
	sandbox.Sandbox
	sandbox.Downloader
	sandbox.FileLister
	sandbox.FileRemover
	sandbox.Starter
}

type tracedSandbox struct {
	sandbox.Sandbox
	t *Telemetry
}

type tracedFullSandbox struct {
	*tracedSandbox
	sandbox.Downloader
	sandbox.FileLister
	sandbox.FileRemover
	sandbox.Starter
}

// Exec runs command in the wrapped sandbox under a span.
func (ts *tracedSandbox) Exec(ctx context.Context, command string, opts sandbox.ExecOptions) (sandbox.ExecResult, error) {
	id := ts.ID()
	ctx, span := ts.t.tracer.Start(ctx, "sandbox.exec", trace.WithAttributes(SandboxIDKey.String(id)))
	defer span.End()
	if ts.t.content && span.IsRecording() {
		span.SetAttributes(attribute.String("agentgraph.sandbox.command", command))
	}
	start := time.Now()
	res, err := ts.Sandbox.Exec(ctx, command, opts)
	d := time.Since(start)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case res.TimedOut:
		outcome = "timed_out"
	}
	if span.IsRecording() && err == nil {
		span.SetAttributes(attribute.Int("agentgraph.sandbox.exit_code", res.ExitCode), attribute.Bool("agentgraph.sandbox.timed_out", res.TimedOut))
	}
	ts.t.execDur.Record(context.WithoutCancel(ctx), d.Seconds(), metric.WithAttributes(OutcomeKey.String(outcome)))
	lvl := slog.LevelDebug
	if err != nil {
		lvl = slog.LevelWarn
	}
	ts.t.logf(ctx, lvl, "sandbox exec ended", append(runAttrs(ctx), slog.String("sandbox_id", id), slog.Int("exit_code", res.ExitCode),
		slog.String("outcome", outcome), slog.Duration("duration", d), errAttr(err))...)
	return res, err
}

var _ fullSandbox = (*tracedFullSandbox)(nil)
