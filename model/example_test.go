package model_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentgraph/agentgraph/model"
)

func Example() {
	call := model.ToolCall{ID: "call_1", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(6*7)"}`)}
	conversation := []model.Message{
		model.System("You answer with Python."),
		model.User("what is six times seven?"),
		model.Assistant("", call),
		model.ToolResult(call.ID, call.Name, "42\n"),
	}
	fmt.Println(model.Validate(conversation))
	fmt.Println(conversation[2].HasToolCalls(), conversation[3].Status)

	// A remove marker is for the reducer, never for a model.
	fmt.Println(model.Validate(append(conversation, model.RemoveAll())))
	// Output:
	// <nil>
	// true ok
	// model: message 4 (role "remove") cannot be sent: a remove marker is an instruction for the AddMessages reducer; reduce it into the state instead of sending it
}

func ExampleToolCallAssembler() {
	var a model.ToolCallAssembler
	a.Add(model.ToolCallDelta{Index: 0, ID: "call_1", Name: "run_python", Arguments: `{"co`})
	a.Add(model.ToolCallDelta{Index: 0, Arguments: `de":"print(1)"}`})
	for _, c := range a.Calls() {
		fmt.Println(c.ID, c.Name, string(c.Arguments))
	}
	// Output:
	// call_1 run_python {"code":"print(1)"}
}

func ExampleMessage_json() {
	m := model.ToolResult("call_1", "run_python", "42\n")
	m.ID = "msg_example"
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
	// Output:
	// {"id":"msg_example","role":"tool","content":"42\n","tool_call_id":"call_1","name":"run_python","status":"ok"}
}

func ExampleCollect() {
	// A stream as a ChatModel yields it: text pieces, then the Done chunk.
	stream := func(yield func(model.Chunk, error) bool) {
		final := model.Response{Message: model.Assistant("Hello, world."), FinishReason: "stop"}
		for _, c := range []model.Chunk{{Delta: "Hello, "}, {Delta: "world."}, {Done: &final}} {
			if !yield(c, nil) {
				return
			}
		}
	}
	resp, err := model.Collect(stream)
	fmt.Println(resp.Message.Content, resp.FinishReason, err)
	// Output:
	// Hello, world. stop <nil>
}
