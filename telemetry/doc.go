// Package telemetry reports what agentgraph runs do to OpenTelemetry and
// log/slog: spans for each run, superstep, node task, model call, tool call
// and sandbox command, nested parent to child across goroutines; metrics for
// their durations and the tokens models use; and log records carrying the
// run's ids at the same points.
//
// Nothing is reported unless asked for: a Telemetry made without a
// TracerProvider records no spans, without a MeterProvider no metrics, and
// without a logger no logs. A graph run reports to it when its context
// carries it (graph.ContextWithTracer, or Telemetry.Context); models, tools
// and sandbox backends report when wrapped by its Model, Tool and Backend
// methods. Model calls follow the OpenTelemetry semantic conventions for
// generative AI (model, token usage, finish reasons); message content,
// tool arguments and results are recorded only WithContent.
package telemetry
