package scripted_test

import (
	"context"
	"fmt"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
)

func ExampleCodeAct() {
	ctx := context.Background()
	m := scripted.CodeAct()

	msgs := []model.Message{model.User("print(6*7)")}
	r, _ := m.Generate(ctx, model.Request{Messages: msgs})
	call := r.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments))

	msgs = append(msgs, r.Message, model.ToolResult(call.ID, call.Name, "42"))
	r, _ = m.Generate(ctx, model.Request{Messages: msgs})
	fmt.Println(r.Message.Content)
	// Output:
	// call_1 run_python {"code":"print(6*7)"}
	// Tool said:
	// 42
}

func ExampleNew() {
	m := scripted.New(scripted.Text("Hello there."))
	for c, err := range m.Stream(context.Background(), model.Request{Messages: []model.Message{model.User("hi")}}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if c.Done != nil {
			fmt.Printf("done: %q\n", c.Done.Message.Content)
			break
		}
		fmt.Printf("%q\n", c.Delta)
	}
	_, err := m.Generate(context.Background(), model.Request{})
	fmt.Println(err)
	// Output:
	// "Hello "
	// "there."
	// done: "Hello there."
	// scripted: script exhausted: all 1 steps were used by call 2; add steps to scripted.New
}
