package prebuilt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
)

func ExampleNewRawTool() {
	// A schema known only at run time, from a service's description.
	spec := model.ToolSpec{
		Name:        "lookup_order",
		Description: "Look up an order by its number.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer","minimum":1}},"required":["number"]}`),
	}
	lookup, err := prebuilt.NewRawTool(spec, func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Number int }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return map[string]any{"number": a.Number, "status": "shipped"}, nil
	})
	if err != nil {
		panic(err)
	}
	out, err := lookup.Call(context.Background(), json.RawMessage(`{"number":42}`))
	text, _ := prebuilt.Content(out)
	fmt.Println(text, err)
	_, err = lookup.Call(context.Background(), json.RawMessage(`{"number":0}`))
	fmt.Println(err)
	// Output:
	// {"number":42,"status":"shipped"} <nil>
	// invalid arguments for tool "lookup_order": field "number": must be at least 1, got 0
}

func ExampleRequireApproval() {
	deleteFile := prebuilt.MustTool("delete_file", "Delete a file.", func(_ context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		return "deleted " + a.Path, nil
	})
	// Ask a person before each call, and give each call at most a minute.
	guarded := prebuilt.Wrap(deleteFile, prebuilt.RequireApproval(), prebuilt.Timeout(time.Minute))

	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "delete_file", Arguments: json.RawMessage(`{"path":"old.log"}`)}),
		scripted.Text("Done."),
	)
	agent, err := prebuilt.NewReactAgent(m, []prebuilt.Tool{guarded},
		prebuilt.WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("clean up"))), graph.WithThread("1"))
	if err != nil {
		panic(err)
	}
	req := res.Interrupts[0].Value.(prebuilt.ApprovalRequest)
	fmt.Printf("asked: %s %s\n", req.Tool, req.Arguments)

	// The person approves, and changes the path.
	res, err = agent.Invoke(ctx, graph.Updates[prebuilt.MessagesState](), graph.WithThread("1"),
		graph.WithResume(prebuilt.Approval{Approve: true, Arguments: json.RawMessage(`{"path":"old.log.1"}`)}))
	if err != nil {
		panic(err)
	}
	for _, msg := range res.State.Messages[1:] {
		fmt.Printf("%s %q\n", msg.Role, msg.Content)
	}
	// Output:
	// asked: delete_file {"path":"old.log"}
	// assistant ""
	// tool "deleted old.log.1"
	// assistant "Done."
}
