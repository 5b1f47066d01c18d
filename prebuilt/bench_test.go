package prebuilt

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

// reactWorkload mirrors LangGraph's react_agent_Nx benchmark: the model asks
// for one tool call per turn, each with about 3.6 KB of arguments, for turns
// turns, then answers; the tool answers each query repeated ten times.
func reactWorkload(b *testing.B, turns int) (model.ChatModel, Tool) {
	b.Helper()
	callIDs := make([]string, turns)
	args := make([]json.RawMessage, turns)
	for i := range turns {
		callIDs[i] = "call_" + rand.Text()
		q := strings.Repeat(rand.Text()+"-0000-4000", 100)
		args[i], _ = json.Marshal(map[string]string{"query": q})
	}
	final := strings.Repeat("answer", 100)
	m := scripted.Func(func(_ context.Context, req model.Request) (model.Response, error) {
		turn := (len(req.Messages) - 1) / 2
		if turn < turns {
			return model.Response{Message: model.Assistant("", model.ToolCall{ID: callIDs[turn], Name: "search", Arguments: args[turn]})}, nil
		}
		return model.Response{Message: model.Assistant(final)}, nil
	})
	search, err := NewTool("search", "Search the web.", func(_ context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return strings.Repeat("result for query: "+a.Query, 10), nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return m, search
}

func benchmarkReact(b *testing.B, turns int, saver *checkpoint.Memory) {
	ctx := context.Background()
	m, search := reactWorkload(b, turns)
	var opts []AgentOption
	if saver != nil {
		opts = append(opts, WithCompileOptions(graph.WithSaver(saver)))
	}
	agent, err := NewReactAgent(m, []Tool{search}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		thread := fmt.Sprint("bench-", i)
		i++
		res, err := agent.Invoke(ctx, graph.Updates(Messages.Add(model.User("hi"))), graph.WithThread(thread), graph.WithRecursionLimit(1<<20))
		if err != nil {
			b.Fatal(err)
		}
		if n := len(res.State.Messages); n != 2*turns+2 {
			b.Fatalf("%d messages, want %d", n, 2*turns+2)
		}
		if saver != nil {
			b.StopTimer()
			if err := saver.DeleteThread(ctx, thread); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

func BenchmarkReactAgent100Turns(b *testing.B) {
	b.Run("no_saver", func(b *testing.B) { benchmarkReact(b, 100, nil) })
	b.Run("memory_saver", func(b *testing.B) { benchmarkReact(b, 100, checkpoint.NewMemory()) })
}

func BenchmarkToolNode10Parallel(b *testing.B) {
	type args struct {
		City string `json:"city" jsonschema:"description=City name"`
		Days int    `json:"days,omitempty"`
	}
	type forecast struct {
		City  string  `json:"city"`
		Temps []int   `json:"temps"`
		Rain  float64 `json:"rain"`
	}
	weather := MustTool("weather", "Forecast for a city.", func(_ context.Context, a args) (forecast, error) {
		return forecast{City: a.City, Temps: []int{20, 21, 19}, Rain: 0.1}, nil
	})
	tn, err := NewToolNode(Messages, []Tool{weather})
	if err != nil {
		b.Fatal(err)
	}
	var calls []model.ToolCall
	for i := range 10 {
		calls = append(calls, model.ToolCall{ID: fmt.Sprint("call_", i), Name: "weather", Arguments: json.RawMessage(fmt.Sprintf(`{"city":"City %d","days":3}`, i))})
	}
	s := MessagesState{Messages: []model.Message{model.User("weather?"), model.Assistant("", calls...)}}
	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "bench"})
	b.ReportAllocs()
	for b.Loop() {
		u, err := tn.Run(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		if len(u.Writes()) != 1 {
			b.Fatal("no tool messages written")
		}
	}
}

// BenchmarkAddMessagesAppend folds one new message into a 200-message
// conversation whose slice has room to grow, as a state's slice usually has.
func BenchmarkAddMessagesAppend(b *testing.B) {
	conv := make([]model.Message, 200, 400)
	for i := range conv {
		conv[i] = model.User(fmt.Sprint("message ", i))
	}
	next := []model.Message{model.Assistant("reply")}
	b.ReportAllocs()
	for b.Loop() {
		out, _ := merge(conv, next, false)
		if len(out) != 201 {
			b.Fatal(len(out))
		}
	}
}

// BenchmarkToolArguments decodes and checks one call's arguments of about
// 3.6 KB, as every turn of the ReAct benchmark does.
func BenchmarkToolArguments(b *testing.B) {
	type args struct {
		Query string `json:"query"`
	}
	echo := MustTool("search", "Search the web.", func(_ context.Context, a args) (string, error) { return a.Query, nil })
	q := strings.Repeat(rand.Text()+"-0000-4000", 100)
	raw, _ := json.Marshal(args{Query: q})
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{
		// Called directly, the strings are copied out of raw; in a ToolNode
		// they point into the call's message.
		{"Direct", context.Background()},
		{"InToolNode", &toolCall{Context: context.Background(), id: "c", args: raw}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := echo.Call(c.ctx, raw)
				if s, _ := out.(string); err != nil || len(s) != len(q) {
					b.Fatal(err)
				}
			}
		})
	}
}
