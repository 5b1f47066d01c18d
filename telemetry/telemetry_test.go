package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
	"github.com/agentgraph/agentgraph/telemetry"
)

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}

// setup returns a Telemetry recording into an in-memory span exporter and
// a manual metric reader.
func setup(t *testing.T, opts ...telemetry.Option) (*telemetry.Telemetry, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := telemetry.New(append([]telemetry.Option{telemetry.WithTracerProvider(tp), telemetry.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tel, spans, reader
}

// tree renders the spans as "parent > child" paths, sorted.
func tree(spans tracetest.SpanStubs) []string {
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	var out []string
	for _, s := range spans {
		path := s.Name
		for p := s.Parent; p.IsValid(); {
			parent, ok := byID[p.SpanID().String()]
			if !ok {
				path = "?" + " > " + path
				break
			}
			path = parent.Name + " > " + path
			p = parent.Parent
		}
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

func find(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %v", name, tree(spans))
	return tracetest.SpanStub{}
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

type scriptedName struct{ model.ChatModel }

func (scriptedName) Name() string { return "stub-1" }

func agentModel() model.ChatModel {
	return scriptedName{scripted.New(
		scripted.Respond(model.Response{
			Message:      model.Assistant("", model.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"go"}`)}),
			Usage:        model.Usage{InputTokens: 12, OutputTokens: 5, TotalTokens: 17},
			FinishReason: model.FinishToolCalls,
		}),
		scripted.Respond(model.Response{
			Message:      model.Assistant("Go is a language."),
			Usage:        model.Usage{InputTokens: 30, OutputTokens: 7, TotalTokens: 37},
			FinishReason: model.FinishStop,
		}),
	)}
}

var search = prebuilt.MustTool("search", "Search the web.", func(_ context.Context, a struct {
	Q string `json:"q"`
}) (string, error) {
	return "results for " + a.Q, nil
})

func TestAgentSpans(t *testing.T) {
	tel, spans, reader := setup(t)
	agent, err := prebuilt.NewReactAgent(tel.Model(agentModel()), tel.Tools(search))
	if err != nil {
		t.Fatal(err)
	}
	ctx := tel.Context(context.Background())
	if _, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("what is go?"))), graph.WithThread("th-1")); err != nil {
		t.Fatal(err)
	}
	got := tree(spans.GetSpans())
	want := []string{
		"graph.run",
		"graph.run > graph.step",
		"graph.run > graph.step",
		"graph.run > graph.step",
		"graph.run > graph.step > graph.node agent",
		"graph.run > graph.step > graph.node agent",
		"graph.run > graph.step > graph.node agent > chat stub-1",
		"graph.run > graph.step > graph.node agent > chat stub-1",
		"graph.run > graph.step > graph.node tools",
		"graph.run > graph.step > graph.node tools > execute_tool search",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	all := spans.GetSpans()
	run := find(t, all, "graph.run")
	if v, _ := attr(run, "agentgraph.thread.id"); v.AsString() != "th-1" {
		t.Errorf("run thread = %v", v.String())
	}
	if v, _ := attr(run, "gen_ai.conversation.id"); v.AsString() != "th-1" {
		t.Errorf("run conversation = %v", v.String())
	}
	chat := find(t, all, "chat stub-1")
	for key, want := range map[string]string{
		"gen_ai.operation.name":          "chat",
		"gen_ai.provider.name":           "telemetry_test",
		"gen_ai.request.model":           "stub-1",
		"gen_ai.usage.input_tokens":      "12",
		"gen_ai.usage.output_tokens":     "5",
		"gen_ai.response.finish_reasons": `["tool_calls"]`,
	} {
		if v, _ := attr(chat, key); v.String() != want {
			t.Errorf("chat span %s = %q, want %q", key, v.String(), want)
		}
	}
	if _, ok := attr(chat, "gen_ai.input.messages"); ok {
		t.Error("messages recorded without WithContent")
	}
	tool := find(t, all, "execute_tool search")
	if v, _ := attr(tool, "gen_ai.tool.call.id"); v.AsString() != "c1" {
		t.Errorf("tool call id = %q", v.String())
	}
	if _, ok := attr(tool, "gen_ai.tool.call.arguments"); ok {
		t.Error("arguments recorded without WithContent")
	}
	// Every span of the run shares its trace.
	for _, s := range all {
		if s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("span %s is in another trace", s.Name)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	var inputTokens int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Count
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Count
					if v, _ := p.Attributes.Value("gen_ai.token.type"); v.AsString() == "input" {
						inputTokens += p.Sum
					}
				}
			}
		}
	}
	for name, want := range map[string]uint64{
		"agentgraph.run.duration": 1, "agentgraph.node.duration": 3, "agentgraph.tool.duration": 1,
		"gen_ai.client.operation.duration": 2, "gen_ai.client.token.usage": 4,
	} {
		if counts[name] != want {
			t.Errorf("%s: %d points, want %d", name, counts[name], want)
		}
	}
	if inputTokens != 42 {
		t.Errorf("input tokens %d, want 42", inputTokens)
	}
}

func TestContentOnlyWhenAsked(t *testing.T) {
	tel, spans, _ := setup(t, telemetry.WithContent())
	agent, err := prebuilt.NewReactAgent(tel.Model(agentModel()), tel.Tools(search))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Invoke(tel.Context(context.Background()), graph.Updates(prebuilt.Messages.Add(model.User("what is go?")))); err != nil {
		t.Fatal(err)
	}
	all := spans.GetSpans()
	var chats []tracetest.SpanStub
	for _, s := range all {
		if s.Name == "chat stub-1" {
			chats = append(chats, s)
		}
	}
	in, _ := attr(chats[0], "gen_ai.input.messages")
	if in.AsString() != `[{"role":"user","parts":[{"type":"text","content":"what is go?"}]}]` {
		t.Errorf("input messages %s", in.AsString())
	}
	out, _ := attr(chats[0], "gen_ai.output.messages")
	if out.AsString() != `[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"search","arguments":{"q":"go"}}],"finish_reason":"tool_calls"}]` {
		t.Errorf("output messages %s", out.AsString())
	}
	tool := find(t, all, "execute_tool search")
	if v, _ := attr(tool, "gen_ai.tool.call.arguments"); v.AsString() != `{"q":"go"}` {
		t.Errorf("arguments %q", v.String())
	}
	if v, _ := attr(tool, "gen_ai.tool.call.result"); v.AsString() != "results for go" {
		t.Errorf("result %q", v.String())
	}
}

func TestErrorsAndInterrupts(t *testing.T) {
	tel, spans, _ := setup(t)
	boom := errors.New("disk full")
	failing := prebuilt.MustTool("search", "", func(context.Context, struct {
		Q string `json:"q"`
	}) (string, error) {
		return "", boom
	})
	agent, err := prebuilt.NewReactAgent(tel.Model(agentModel()), tel.Tools(failing))
	if err != nil {
		t.Fatal(err)
	}
	ctx := tel.Context(context.Background())
	if _, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("q")))); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	all := spans.GetSpans()
	for _, name := range []string{"execute_tool search", "graph.node tools", "graph.run"} {
		s := find(t, all, name)
		if s.Status.Code != codes.Error || !strings.Contains(s.Status.Description, "disk full") {
			t.Errorf("%s: status %+v", name, s.Status)
		}
		if len(s.Events) == 0 || s.Events[0].Name != "exception" {
			t.Errorf("%s: no exception event: %+v", name, s.Events)
		}
	}

	spans.Reset()
	ask := prebuilt.Wrap(search, prebuilt.RequireApproval())
	agent, err = prebuilt.NewReactAgent(tel.Model(agentModel()), tel.Tools(ask), prebuilt.WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("q"))), graph.WithThread("t"))
	if err != nil || !res.Interrupted() {
		t.Fatal(err, res.Interrupts)
	}
	all = spans.GetSpans()
	for _, name := range []string{"execute_tool search", "graph.node tools", "graph.run"} {
		s := find(t, all, name)
		if s.Status.Code == codes.Error {
			t.Errorf("%s: a pause recorded as an error", name)
		}
		if v, _ := attr(s, "agentgraph.interrupted"); !v.AsBool() {
			t.Errorf("%s: not marked interrupted", name)
		}
	}
}

func TestSandboxExecSpansAndLogs(t *testing.T) {
	var logs bytes.Buffer
	tel, spans, reader := setup(t, telemetry.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	b, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	backend := tel.Backend(b)
	reg := sandboxtool.New(backend)
	t.Cleanup(func() {
		if _, err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: sandboxtool.ToolName, Arguments: json.RawMessage(`{"code":"print(6*7)"}`)}),
		scripted.Text("42"),
	)
	agent, err := prebuilt.NewReactAgent(tel.Model(m), tel.Tools(reg.RunPython()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(tel.Context(context.Background()), graph.Updates(prebuilt.Messages.Add(model.User("6*7?"))), graph.WithThread("sb-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.State.Messages[2].Content, "42") {
		t.Fatalf("tool said %q", res.State.Messages[2].Content)
	}
	all := spans.GetSpans()
	got := tree(all)
	if !slices.Contains(got, "graph.run > graph.step > graph.node tools > execute_tool run_python > sandbox.exec") {
		t.Fatalf("spans:\n%s", strings.Join(got, "\n"))
	}
	exec := find(t, all, "sandbox.exec")
	if v, _ := attr(exec, "agentgraph.sandbox.exit_code"); v.AsInt64() != 0 {
		t.Errorf("exit code %v", v.String())
	}
	if v, _ := attr(exec, "agentgraph.sandbox.id"); v.AsString() == "" {
		t.Error("no sandbox id")
	}
	// The wrapped sandbox keeps the local backend's optional interfaces.
	sb, err := reg.Sandbox(context.Background(), "sb-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sb.(sandbox.FileLister); !ok {
		t.Error("the traced sandbox lost FileLister")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var execs uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "agentgraph.sandbox.exec.duration" {
				for _, p := range h.DataPoints {
					execs += p.Count
				}
			}
		}
	}
	if execs == 0 {
		t.Error("no sandbox exec duration recorded")
	}

	// Every log record of the run names it; the ones inside it name the trace too.
	var runID string
	seen := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		msg, _ := rec["msg"].(string)
		seen[msg] = true
		if rec["thread_id"] != "sb-1" || rec["run_id"] == nil || rec["trace_id"] == nil {
			t.Errorf("log record without the run's ids: %s", line)
		}
		if runID == "" {
			runID, _ = rec["run_id"].(string)
		} else if rec["run_id"] != runID {
			t.Errorf("run id %v, want %s", rec["run_id"], runID)
		}
	}
	for _, msg := range []string{"run started", "run ended", "step started", "task ended", "model call done", "tool call ended", "sandbox exec ended"} {
		if !seen[msg] {
			t.Errorf("no %q record in:\n%s", msg, logs.String())
		}
	}
}

func TestOffWithoutProviders(t *testing.T) {
	tel, err := telemetry.New()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := prebuilt.NewReactAgent(tel.Model(agentModel()), tel.Tools(search))
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(tel.Context(context.Background()), graph.Updates(prebuilt.Messages.Add(model.User("q"))))
	if err != nil || len(res.State.Messages) != 4 {
		t.Fatal(err, res.State.Messages)
	}
}
