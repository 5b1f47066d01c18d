package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/telemetry"
)

// BenchmarkAgent10Turns runs a ReAct agent through ten tool calls: plain,
// wrapped by a Telemetry without providers, and recording every span with
// the SDK (to an exporter that drops them).
func BenchmarkAgent10Turns(b *testing.B) {
	const turns = 10
	m := scripted.Func(func(_ context.Context, req model.Request) (model.Response, error) {
		if turn := (len(req.Messages) - 1) / 2; turn < turns {
			return model.Response{Message: model.Assistant("", model.ToolCall{ID: fmt.Sprint("c", turn), Name: "search", Arguments: json.RawMessage(`{"q":"go"}`)}),
				Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		}
		return model.Response{Message: model.Assistant("done")}, nil
	})
	off, err := telemetry.New()
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	on, err := telemetry.New(telemetry.WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{{"plain", nil}, {"no_providers", off}, {"sdk_spans", on}} {
		b.Run(c.name, func(b *testing.B) {
			chat, tools, ctx := model.ChatModel(m), []prebuilt.Tool{search}, context.Background()
			if c.tel != nil {
				chat, tools, ctx = c.tel.Model(m), c.tel.Tools(search), c.tel.Context(ctx)
			}
			agent, err := prebuilt.NewReactAgent(chat, tools)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("q"))))
				if err != nil || len(res.State.Messages) != 2*turns+2 {
					b.Fatal(err, len(res.State.Messages))
				}
			}
		})
	}
}
