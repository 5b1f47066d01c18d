package graph_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// A node inside a subgraph asks a person. The parent run pauses with the
// interrupt, which names the subgraph's namespace; resuming the parent
// resumes the subgraph where it stopped: "draft" does not run again.
func ExampleSubgraph_interrupt() {
	child := graph.New[Chat](Messages)
	child.AddNodeFunc("draft", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		fmt.Println("drafting")
		return graph.Updates(Messages.Add("draft")), nil
	})
	child.AddNodeFunc("review", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		ok, err := graph.Interrupt(ctx, "publish the draft?")
		if err != nil {
			return graph.Update[Chat]{}, err
		}
		return graph.Updates(Messages.Add(fmt.Sprint("reviewed: ", ok))), nil
	})
	child.AddEdge(graph.START, "draft").AddEdge("draft", "review")
	writer, err := child.Compile()
	if err != nil {
		panic(err)
	}

	parent := graph.New[Chat](Messages)
	parent.AddNode("writer", graph.Subgraph(writer,
		func(ctx context.Context, p Chat) (Chat, error) { return Chat{}, nil },
		func(ctx context.Context, c Chat) (graph.Update[Chat], error) {
			return graph.Updates(Messages.Add(c.Messages...)), nil
		}))
	parent.AddEdge(graph.START, "writer")
	g, err := parent.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, _ := g.Invoke(ctx, graph.Updates(Messages.Add("topic")), graph.WithThread("t"))
	in := res.Interrupts[0]
	fmt.Println("paused in", in.Node, "of", strings.SplitN(in.Namespace, ":", 2)[0]+":…", "asking", in.Value)

	snap, _ := g.GetState(ctx, graph.WithThread("t"), graph.WithSubgraphs())
	inner := snap.Tasks[0].State.(graph.Snapshot[Chat])
	fmt.Println("subgraph next:", inner.Next, "values:", inner.Values.Messages)

	res, _ = g.Invoke(ctx, graph.Updates[Chat](), graph.WithThread("t"), graph.WithResume("yes"))
	fmt.Println(res.State.Messages)
	// Output:
	// drafting
	// paused in review of writer:… asking publish the draft?
	// subgraph next: [review] values: [draft]
	// [topic draft reviewed: yes]
}

// A command on resume: the input's writes reach the state before the paused
// node runs again, and its Gotos add nodes to that step. WithContinue does
// the same where there is no question to answer (a static breakpoint).
func ExampleWithContinue() {
	b := graph.New[Chat](Messages, Turns)
	b.AddNodeFunc("plan", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Messages.Add(fmt.Sprint("plan for turn ", s.Turns))), nil
	}, graph.WithDestinations("audit"))
	b.AddNodeFunc("audit", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Messages.Add("audit")), nil
	})
	b.AddEdge(graph.START, "plan")
	g, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptBefore("plan"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, _ := g.Invoke(ctx, graph.Updates(Turns.Set(1)), graph.WithThread("t"))
	fmt.Println("paused", res.Interrupts[0].When, res.Interrupts[0].Node)
	res, _ = g.Invoke(ctx, graph.Updates(Turns.Set(2)).Goto("audit"), graph.WithThread("t"), graph.WithContinue())
	fmt.Println(res.State.Messages)
	// Output:
	// paused before plan
	// [audit plan for turn 2]
}

// Replaying from a checkpoint taken before a node that asks a question asks
// it again, on a new branch: the answer given on the old branch stays there.
func ExampleWithCheckpointID() {
	b := graph.New[Chat](Messages)
	b.AddNodeFunc("ask", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		v, err := graph.Interrupt(ctx, "which color?")
		if err != nil {
			return graph.Update[Chat]{}, err
		}
		return graph.Updates(Messages.Add(fmt.Sprint(v))), nil
	})
	b.AddEdge(graph.START, "ask")
	g, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	g.Invoke(ctx, graph.Updates(Messages.Add("start")), graph.WithThread("t"))
	res, _ := g.Invoke(ctx, graph.Updates[Chat](), graph.WithThread("t"), graph.WithResume("red"))
	fmt.Println("first branch:", res.State.Messages)

	var before string
	for snap := range g.GetStateHistory(ctx, graph.WithThread("t")) {
		if len(snap.Next) == 1 && snap.Next[0] == "ask" {
			before = snap.Config.CheckpointID
		}
	}
	res, _ = g.Invoke(ctx, graph.Updates[Chat](), graph.WithThread("t"), graph.WithCheckpointID(before))
	fmt.Println("replay asks again:", res.Interrupts[0].Value)
	res, _ = g.Invoke(ctx, graph.Updates[Chat](), graph.WithThread("t"), graph.WithResume("blue"))
	fmt.Println("second branch:", res.State.Messages)
	// Output:
	// first branch: [start red]
	// replay asks again: which color?
	// second branch: [start blue]
}

// A node inside a subgraph routes its parent: ToParent ends the subgraph and
// gives the parent's subgraph task these writes and this Goto.
func ExampleToParent() {
	child := graph.New[Chat](Messages)
	child.AddNodeFunc("triage", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Update[Chat]{}, graph.ToParent(graph.Updates(Messages.Add("escalated")).Goto("human"))
	})
	child.AddEdge(graph.START, "triage")
	sub, _ := child.Compile()
	parent := graph.New[Chat](Messages)
	parent.AddNode("support", graph.Subgraph(sub,
		func(ctx context.Context, p Chat) (Chat, error) { return p, nil },
		func(ctx context.Context, c Chat) (graph.Update[Chat], error) { return graph.Update[Chat]{}, nil }),
		graph.WithDestinations("human"))
	parent.AddNodeFunc("human", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Messages.Add("a person answers")), nil
	})
	parent.AddEdge(graph.START, "support")
	g, _ := parent.Compile()
	res, _ := g.Invoke(context.Background(), graph.Updates(Messages.Add("help")))
	fmt.Println(res.State.Messages)
	// Output: [help escalated a person answers]
}

// A deferred node waits until no other task is left: here "summary" runs
// once, after the longer branch.
func ExampleWithDefer() {
	b := graph.New[Chat](Messages)
	step := func(name string) func(context.Context, Chat) (graph.Update[Chat], error) {
		return func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
			return graph.Updates(Messages.Add(name)), nil
		}
	}
	b.AddNodeFunc("short", step("short"))
	b.AddNodeFunc("long1", step("long1"))
	b.AddNodeFunc("long2", step("long2"))
	b.AddNodeFunc("summary", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		return graph.Updates(Messages.Add(fmt.Sprintf("summary of %d", len(s.Messages)))), nil
	}, graph.WithDefer())
	b.AddEdge(graph.START, "short").AddEdge(graph.START, "long1").AddEdge("long1", "long2")
	b.AddEdge("short", "summary").AddEdge("long2", "summary")
	g, _ := b.Compile()
	res, _ := g.Invoke(context.Background(), graph.Updates[Chat]())
	fmt.Println(res.State.Messages)
	// Output: [long1 short long2 summary of 3]
}
