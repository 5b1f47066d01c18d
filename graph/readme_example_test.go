package graph_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// The README's quick start, word for word: TestReadmeQuickStart keeps the two the same.
func Example_quickStart() {
	type State struct{ Messages []string }

	messages := graph.SliceField("messages", func(s *State) *[]string { return &s.Messages }, graph.Append[string]())

	b := graph.New(messages)
	b.AddNodeFunc("greet", func(ctx context.Context, s State) (graph.Update[State], error) {
		return graph.Updates(messages.Add("hello, " + s.Messages[0])), nil
	})
	b.AddEdge(graph.START, "greet")

	// checkpoint.NewMemory keeps threads in memory; bolt.Open("threads.db") keeps them in a file.
	g, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Updates(messages.Add("ada")), graph.WithThread("t1"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State.Messages)
	// Output: [ada hello, ada]
}
