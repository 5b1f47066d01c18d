package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/telemetry"
)

func Example() {
	// Any TracerProvider: here the SDK's, exporting to memory. In production
	// give it an OTLP exporter instead.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	tel, err := telemetry.New(telemetry.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	weather := prebuilt.MustTool("weather", "Forecast for a city.", func(_ context.Context, a struct {
		City string `json:"city"`
	}) (string, error) {
		return "sunny in " + a.City, nil
	})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}),
		scripted.Text("Sunny."),
	)
	// Wrap the model and the tools; the run reports through its context.
	agent, err := prebuilt.NewReactAgent(tel.Model(m), tel.Tools(weather))
	if err != nil {
		log.Fatal(err)
	}
	ctx := tel.Context(context.Background())
	if _, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("weather in Paris?"))), graph.WithThread("1")); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.GetSpans() { // in the order they ended
		fmt.Println(s.Name)
	}
	// Output:
	// chat
	// graph.node agent
	// graph.step
	// execute_tool weather
	// graph.node tools
	// graph.step
	// chat
	// graph.node agent
	// graph.step
	// graph.run
}
