package prebuilt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
)

type weatherArgs struct {
	City string `json:"city" jsonschema_description:"City name, e.g. Paris"`
	Days int    `json:"days,omitempty" jsonschema:"description=Days ahead (default 1),minimum=1,maximum=7"`
}

func ExampleNewTool() {
	weather, err := prebuilt.NewTool("weather", "Forecast for a city.",
		func(ctx context.Context, a weatherArgs) (string, error) {
			// The run config is not an argument: the tool reads it from ctx.
			return fmt.Sprintf("thread %s: sunny in %s", graph.ThreadIDFrom(ctx), a.City), nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(weather.Spec().Parameters))

	// Called directly, without a graph, with a run config.
	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "1"})
	out, err := weather.Call(ctx, json.RawMessage(`{"city":"Paris"}`))
	fmt.Println(out, err)

	// Arguments that do not fit the schema say what to fix.
	_, err = weather.Call(ctx, json.RawMessage(`{"town":"Paris","days":"two"}`))
	fmt.Println(err)
	// Output:
	// {"properties":{"city":{"type":"string","description":"City name, e.g. Paris"},"days":{"type":"integer","maximum":7,"minimum":1,"description":"Days ahead (default 1)"}},"additionalProperties":false,"type":"object","required":["city"]}
	// thread 1: sunny in Paris <nil>
	// invalid arguments for tool "weather": field "city" is required (string); field "days": expected integer, got string "two"; field "town" is not a known field; the fields are: city, days
}

func ExampleNewReactAgent() {
	runPython := prebuilt.MustTool("run_python", "Run a Python 3 program in this conversation's sandbox.",
		func(ctx context.Context, a struct {
			Code string `json:"code" jsonschema:"description=A whole program"`
		}) (string, error) {
			return fmt.Sprintf("[thread %s] would run %q", graph.ThreadIDFrom(ctx), a.Code), nil
		})

	// The guide's stub model: it runs the user's text as code, then reports
	// what the tool said. Swap in openai.New(...) for a real model.
	agent, err := prebuilt.NewReactAgent(scripted.CodeAct(), []prebuilt.Tool{runPython},
		prebuilt.WithSystemPrompt("You write Python."),
		prebuilt.WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		panic(err)
	}
	res, err := agent.Invoke(context.Background(),
		graph.Updates(prebuilt.Messages.Add(model.User("print(6*7)"))), graph.WithThread("1"))
	if err != nil {
		panic(err)
	}
	for _, m := range res.State.Messages {
		fmt.Printf("%s: %s%s\n", m.Role, m.Content, callsOf(m))
	}
	// Output:
	// user: print(6*7)
	// assistant: run_python{"code":"print(6*7)"}
	// tool: [thread 1] would run "print(6*7)"
	// assistant: Tool said:
	// [thread 1] would run "print(6*7)"
}

func callsOf(m model.Message) string {
	var b strings.Builder
	for _, c := range m.ToolCalls {
		b.WriteString(c.Name + string(c.Arguments))
	}
	return b.String()
}

func ExampleNewReactAgent_streaming() {
	m := scripted.New(scripted.Text("Forty-two, as always."))
	agent, err := prebuilt.NewReactAgent(m, nil)
	if err != nil {
		panic(err)
	}
	in := graph.Updates(prebuilt.Messages.Add(model.User("The answer?")))
	for ev, err := range agent.Stream(context.Background(), in, graph.WithStreamModes(graph.ModeMessages)) {
		if err != nil {
			panic(err)
		}
		if c, ok := ev.Data.(model.Chunk); ok && c.Delta != "" {
			fmt.Printf("%s@%d %q\n", ev.Node, ev.Step, c.Delta)
		}
	}
	// Output:
	// agent@0 "Forty-two, "
	// agent@0 "as "
	// agent@0 "always."
}

func ExampleMerge() {
	conv := []model.Message{
		{ID: "1", Role: model.RoleUser, Content: "hi"},
		{ID: "2", Role: model.RoleAssistant, Content: "hello"},
	}
	conv, _ = prebuilt.Merge(conv, []model.Message{
		{ID: "2", Role: model.RoleAssistant, Content: "hello!"}, // same id: replaced in place
		{Role: model.RoleUser, Content: "bye"},                  // no id: appended with one
		model.Remove("1"),
	})
	for _, m := range conv {
		fmt.Println(m.Role, m.Content, m.ID != "")
	}
	_, err := prebuilt.Merge(conv, []model.Message{model.Remove("1")})
	fmt.Println(err)
	// Output:
	// assistant hello! true
	// user bye true
	// prebuilt: cannot remove message "1": the conversation has no message with this id; remove only ids read from the state
}

// A graph of your own: any state with a messages key can use the parts.
type supportState struct {
	Messages []model.Message
	Tickets  []string
}

var (
	supportMessages = graph.SliceField("messages", func(s *supportState) *[]model.Message { return &s.Messages }, prebuilt.AddMessages)
	tickets         = graph.SliceField("tickets", func(s *supportState) *[]string { return &s.Tickets }, graph.Append[string]())
)

func ExampleNewToolNode() {
	// A tool that updates the state as well as answering the model.
	openTicket := prebuilt.MustTool("open_ticket", "Open a support ticket.",
		func(ctx context.Context, a struct {
			Title string `json:"title"`
		}) (prebuilt.Output[supportState], error) {
			id := "T-" + prebuilt.ToolCallID(ctx)
			return prebuilt.Output[supportState]{
				Content: map[string]string{"ticket": id},
				Writes:  []graph.Write[supportState]{tickets.Add(id + " " + a.Title)},
			}, nil
		})
	tools := []prebuilt.Tool{openTicket}

	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "7", Name: "open_ticket", Arguments: json.RawMessage(`{"title":"printer on fire"}`)}),
		scripted.Text("Ticket opened."),
	)
	agent, err := prebuilt.NewModelNode(m, supportMessages, tools)
	if err != nil {
		panic(err)
	}
	toolNode, err := prebuilt.NewToolNode(supportMessages, tools)
	if err != nil {
		panic(err)
	}
	g, err := graph.New(supportMessages, tickets).
		AddNode(prebuilt.AgentNode, agent).
		AddNode(prebuilt.ToolsNode, toolNode).
		AddEdge(graph.START, prebuilt.AgentNode).
		AddConditionalEdges(prebuilt.AgentNode, prebuilt.ToolsCondition(supportMessages), prebuilt.ToolsBranch()).
		AddEdge(prebuilt.ToolsNode, prebuilt.AgentNode).
		Compile()
	if err != nil {
		panic(err)
	}
	res, err := g.Invoke(context.Background(), graph.Updates(supportMessages.Add(model.User("help"))))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.State.Tickets)
	fmt.Println(res.State.Messages[2].Content)
	fmt.Println(res.State.Messages[3].Content)
	// Output:
	// [T-7 printer on fire]
	// {"ticket":"T-7"}
	// Ticket opened.
}

// A breakpoint before the tools node: the run pauses after the model asked
// for a call, so a person can look at it before it runs.
func ExampleWithCompileOptions() {
	deleteFile := prebuilt.MustTool("delete_file", "Delete a file.",
		func(_ context.Context, a struct {
			Path string `json:"path"`
		}) (string, error) {
			return "deleted " + a.Path, nil
		})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "delete_file", Arguments: json.RawMessage(`{"path":"/tmp/old.log"}`)}),
		scripted.Text("Done."),
	)
	agent, err := prebuilt.NewReactAgent(m, []prebuilt.Tool{deleteFile},
		prebuilt.WithCompileOptions(
			graph.WithSaver(checkpoint.NewMemory()),
			graph.WithInterruptBefore(prebuilt.ToolsNode)))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("clean up"))), graph.WithThread("1"))
	if err != nil {
		panic(err)
	}
	in := res.Interrupts[0]
	fmt.Printf("paused %s %q; the model asks for %s\n", in.When, in.Node, callsOf(res.State.Messages[len(res.State.Messages)-1]))

	// An empty input continues the thread past the breakpoint.
	res, err = agent.Invoke(ctx, graph.Updates[prebuilt.MessagesState](), graph.WithThread("1"))
	if err != nil {
		panic(err)
	}
	for _, m := range res.State.Messages[2:] {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// paused before "tools"; the model asks for delete_file{"path":"/tmp/old.log"}
	// tool: deleted /tmp/old.log
	// assistant: Done.
}

// By default a tool's error fails the run; WithToolErrorsToModel hands it to
// the model, which can try again.
func ExampleWithToolErrorsToModel() {
	lookup := prebuilt.MustTool("lookup", "Look up a customer.",
		func(_ context.Context, a struct {
			ID int `json:"id"`
		}) (string, error) {
			if a.ID != 7 {
				return "", fmt.Errorf("no customer %d", a.ID)
			}
			return "Ada", nil
		})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id":8}`)}),
		scripted.Calls(model.ToolCall{ID: "c2", Name: "lookup", Arguments: json.RawMessage(`{"id":7}`)}),
		scripted.Text("The customer is Ada."),
	)
	agent, err := prebuilt.NewReactAgent(m, []prebuilt.Tool{lookup}, prebuilt.WithToolErrorsToModel())
	if err != nil {
		panic(err)
	}
	res, err := agent.Invoke(context.Background(), graph.Updates(prebuilt.Messages.Add(model.User("who is customer 7?"))))
	if err != nil {
		panic(err)
	}
	for _, m := range res.State.Messages[1:] {
		if m.Role == model.RoleTool {
			fmt.Printf("tool (%s): %s\n", m.Status, m.Content)
			continue
		}
		fmt.Printf("%s: %s%s\n", m.Role, m.Content, callsOf(m))
	}
	// Output:
	// assistant: lookup{"id":8}
	// tool (error): Error: no customer 8
	//  Please fix your mistakes.
	// assistant: lookup{"id":7}
	// tool (ok): Ada
	// assistant: The customer is Ada.
}

// A paused run seen in a stream: the last event is a ModeInterrupt event
// carrying the interruptions, after the state the run reached.
func ExampleNewReactAgent_breakpointInStream() {
	echo := prebuilt.MustTool("echo", "Echo the text.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}),
		scripted.Text("It said hi."),
	)
	agent, err := prebuilt.NewReactAgent(m, []prebuilt.Tool{echo}, prebuilt.WithCompileOptions(
		graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptBefore(prebuilt.ToolsNode)))
	if err != nil {
		panic(err)
	}
	in := graph.Updates(prebuilt.Messages.Add(model.User("say hi")))
	for ev, err := range agent.Stream(context.Background(), in, graph.WithThread("1"), graph.WithStreamModes(graph.ModeUpdates)) {
		if err != nil {
			panic(err)
		}
		switch ev.Mode {
		case graph.ModeUpdates:
			fmt.Printf("update from %s\n", ev.Node)
		case graph.ModeInterrupt:
			for _, in := range ev.Interrupts {
				fmt.Printf("interrupt: node %s, when %s, id set %v\n", in.Node, in.When, in.ID != "")
			}
		}
	}
	// Output:
	// update from agent
	// interrupt: node tools, when before, id set true
}
