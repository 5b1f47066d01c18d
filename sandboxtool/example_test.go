package sandboxtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

func Example() {
	// A program using the local backend calls local.Init() first thing in main.
	root, _ := os.MkdirTemp("", "sandboxes")
	defer os.RemoveAll(root)
	backend, err := local.New(local.WithRoot(root))
	if err != nil {
		panic(err)
	}
	defer backend.Close()

	reg := sandboxtool.New(backend)
	runPython := reg.RunPython() // give it to prebuilt.NewToolNode, or call it directly:

	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "1"})
	for _, code := range []string{
		"import os; open('hello.txt', 'w').write('hi'); print(os.getcwd())",
		"print(open('hello.txt').read())",
	} {
		args, _ := json.Marshal(map[string]string{"code": code})
		out, err := runPython.Call(ctx, args)
		if err != nil {
			panic(err)
		}
		fmt.Println(anonymous(out.(string)))
	}

	closed, err := reg.Close(context.Background())
	if err != nil {
		panic(err)
	}
	for _, c := range closed {
		fmt.Println(anonymous(c.String()))
	}
	// Output:
	// [sb_…] exit code 0
	// /home/user
	// [sb_…] exit code 0
	// hi
	// deleted sb_… (1)
}

var sandboxID = regexp.MustCompile(`sb_[a-z0-9]+`)

// anonymous hides sandbox ids, which are random.
func anonymous(s string) string { return sandboxID.ReplaceAllString(s, "sb_…") }

// The tool in an agent graph: the ToolNode passes the graph's thread to it, so each thread runs in its own
// sandbox.
func ExampleRegistry_RunPython() {
	root, _ := os.MkdirTemp("", "sandboxes")
	defer os.RemoveAll(root)
	backend, err := local.New(local.WithRoot(root))
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	reg := sandboxtool.New(backend)
	defer reg.Close(context.Background())

	// scripted.CodeAct stands in for a model: it runs the user's text as code, then reports the answer.
	agent, err := prebuilt.NewReactAgent(scripted.CodeAct(), []prebuilt.Tool{reg.RunPython()},
		prebuilt.WithCompileOptions(graph.WithSaver(checkpoint.NewMemory())))
	if err != nil {
		panic(err)
	}
	for _, turn := range []struct{ thread, code string }{
		{"a", "open('note.txt', 'w').write('from a')"},
		{"a", "print(open('note.txt').read())"},
		{"b", "import os; print(os.listdir('.'))"},
	} {
		res, err := agent.Invoke(context.Background(),
			graph.Updates(prebuilt.Messages.Add(model.User(turn.code))), graph.WithThread(turn.thread))
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", turn.thread, anonymous(res.State.Messages[len(res.State.Messages)-1].Content))
	}
	// Output:
	// a: Tool said:
	// [sb_…] exit code 0
	// a: Tool said:
	// [sb_…] exit code 0
	// from a
	// b: Tool said:
	// [sb_…] exit code 0
	// ['main.py']
}
