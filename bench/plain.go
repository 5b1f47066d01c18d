package main

import (
	"context"
	"fmt"
)

// plainGo is each workload written as a plain Go loop, without a framework:
// the same node, model and tool work on the same data, called directly. A
// cell's time minus this loop's is what the framework itself costs
// (orchestration, state merging, routing, checkpoints); the harness times
// the two alternately so that both see the same load.
func plainGo(w Workload) (Runner, error) {
	switch w.Kind {
	case Sequential:
		return plainSequential(w.N), nil
	case Fanout:
		return plainFanout(w.N), nil
	case React:
		return plainReact(w.N), nil
	case WideState:
		return plainWide(w), nil
	}
	return nil, fmt.Errorf("no plain Go loop for workload kind %s", w.Kind)
}

// plainSequential calls N no-op nodes, each through a func value as a
// framework would.
func plainSequential(n int) Runner {
	calls := 0
	nodes := make([]func([]string) []string, n)
	for i := range nodes {
		nodes[i] = func(msgs []string) []string { calls++; return msgs }
	}
	return func(context.Context) (int, error) {
		calls = 0
		var msgs []string
		for _, node := range nodes {
			msgs = node(msgs)
		}
		_ = msgs
		return calls, nil
	}
}

// plainFanout runs the subgraph's three steps for every subject.
func plainFanout(n int) Runner {
	subs := subjects(n)
	return func(context.Context) (int, error) {
		jokes := make([]string, 0, len(subs))
		for _, sub := range subs {
			subject := jokeEdit(subjectText(sub))
			joke := jokeGenerate(subject)
			for joke = jokeBump(joke); !jokeDone(joke); joke = jokeBump(joke) {
			}
			jokes = append(jokes, joke)
		}
		done := 0
		for _, j := range jokes {
			if jokeDone(j) {
				done++
			}
		}
		return done, nil
	}
}

// plainMessage is a chat message as a program without a framework keeps it.
type plainMessage struct {
	Role    string
	Content string
	Call    *plainCall
	CallID  string
}

type plainCall struct {
	ID, Name string
	Args     reactArgs
}

// plainReact is the agent loop: the scripted model's next message, then the
// tool on its call, until the model answers without one. The tool gets its
// arguments as a value: turning the call's JSON into the tool's argument
// type is part of what a framework does for a tool, so it counts as the
// framework's overhead.
func plainReact(turns int) Runner {
	s := newReactScript(turns)
	var responses []plainMessage
	for i, q := range s.Queries {
		responses = append(responses, plainMessage{Role: "assistant", Call: &plainCall{ID: s.CallIDs[i], Name: s.ToolName, Args: reactArgs{Query: q}}})
	}
	responses = append(responses, plainMessage{Role: "assistant", Content: s.Final})
	tool := func(_ context.Context, a reactArgs) (string, error) { return toolResult(a.Query), nil }
	return func(ctx context.Context) (int, error) {
		msgs := []plainMessage{{Role: "user", Content: "hi?"}}
		for i := 0; ; i++ {
			reply := responses[i%len(responses)]
			msgs = append(msgs, reply)
			if reply.Call == nil {
				return len(msgs), nil
			}
			out, err := tool(ctx, reply.Call.Args)
			if err != nil {
				return 0, err
			}
			msgs = append(msgs, plainMessage{Role: "tool", Content: out, CallID: reply.Call.ID})
		}
	}
}

// plainWide runs the six steps in order over a map, folding each step's
// writes with the keys' reducers, until the loop's condition holds. Three
// and four read no key the other writes, so running them one after the
// other is running them in one step.
func plainWide(w Workload) Runner {
	msg := wideMessage(w.Outer, w.Inner)
	return func(context.Context) (int, error) {
		s := wideDefaults()
		s["messages"] = []any{msg}
		for {
			for _, step := range wideSteps {
				for k, v := range wideWrites(s, step, w.N) {
					s[k] = wideReduce(k, s[k], v)
				}
			}
			if wideDone(s, w.N) {
				m, _ := s["messages"].([]any)
				return len(m), nil
			}
		}
	}
}
