package graph_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

type Chat struct {
	Messages []string
	Turns    int
}

var (
	Messages = graph.SliceField("messages", func(s *Chat) *[]string { return &s.Messages }, graph.Append[string]())
	Turns    = graph.Field("turns", func(s *Chat) *int { return &s.Turns }, graph.LastValue[int]())
)

// An agent loop: the agent asks for a tool twice, then answers.
func Example() {
	b := graph.New[Chat](Messages, Turns)
	b.AddNodeFunc("agent", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		if s.Turns == 2 {
			return graph.Updates(Messages.Add("answer")), nil
		}
		return graph.Updates(Messages.Add("call tool"), Turns.Set(s.Turns+1)), nil
	})
	b.AddNodeFunc("tools", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Messages.Add("tool result")), nil
	})
	b.AddEdge(graph.START, "agent")
	b.AddConditionalEdges("agent", graph.RouteFunc(func(s Chat) string {
		if strings.HasPrefix(s.Messages[len(s.Messages)-1], "call") {
			return "call"
		}
		return "done"
	}), graph.BranchConfig{PathMap: map[string]string{"call": "tools", "done": graph.END}})
	b.AddEdge("tools", "agent")
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	res, err := g.Invoke(context.Background(), graph.Updates(Messages.Add("hi")))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(res.State.Messages, " | "))
	fmt.Print(g.Mermaid())
	// Output:
	// hi | call tool | tool result | call tool | tool result | answer
	// graph TD;
	// 	__start__([__start__]):::first
	// 	agent(agent)
	// 	tools(tools)
	// 	__end__([__end__]):::last
	// 	__start__ --> agent;
	// 	agent -. &nbsp;call&nbsp; .-> tools;
	// 	agent -. &nbsp;done&nbsp; .-> __end__;
	// 	tools --> agent;
	// 	classDef default fill:#f2f0ff,line-height:1.2
	// 	classDef first fill-opacity:0
	// 	classDef last fill:#bfb6fc
}

// A thread remembers its turns; Interrupt waits for a person.
func ExampleInterrupt() {
	b := graph.New[Chat](Messages, Turns)
	b.AddNodeFunc("approve", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		answer, err := graph.Interrupt(ctx, "send "+s.Messages[len(s.Messages)-1]+"?")
		if err != nil {
			return graph.Update[Chat]{}, err
		}
		return graph.Updates(Messages.Add(fmt.Sprint("approved: ", answer))), nil
	})
	b.AddEdge(graph.START, "approve")
	g, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, _ := g.Invoke(ctx, graph.Updates(Messages.Add("the report")), graph.WithThread("t1"))
	fmt.Println("paused:", res.Interrupts[0].Value)
	res, _ = g.Invoke(ctx, graph.Updates[Chat](), graph.WithThread("t1"), graph.WithResume("yes"))
	fmt.Println(res.State.Messages)
	// Output:
	// paused: send the report?
	// [the report approved: yes]
}

// Send fans out one task per input; their writes are reduced together.
func ExampleSendTo() {
	type Job struct {
		Item  int
		Total int
	}
	Item := graph.Field("item", func(s *Job) *int { return &s.Item }, graph.LastValue[int]())
	Total := graph.Field("total", func(s *Job) *int { return &s.Total }, graph.Reduce(func(a, b int) int { return a + b }))
	b := graph.New[Job](Item, Total)
	b.AddNodeFunc("square", func(ctx context.Context, s Job) (graph.Update[Job], error) {
		return graph.Updates(Total.Set(s.Item * s.Item)), nil
	})
	b.AddConditionalEdges(graph.START, func(ctx context.Context, s Job) (graph.Route[Job], error) {
		var r graph.Route[Job]
		for i := 1; i <= 4; i++ {
			r.Sends = append(r.Sends, graph.SendTo("square", Job{Item: i}))
		}
		return r, nil
	}, graph.BranchConfig{Paths: []string{"square"}})
	g, _ := b.Compile()
	res, _ := g.Invoke(context.Background(), graph.Updates[Job]())
	fmt.Println(res.State.Total)
	// Output: 30
}
