package sandboxtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"github.com/agentgraph/agentgraph/graph"
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

	ctx := graph.WithConfig(context.Background(), graph.Config{ThreadID: "1"})
	for _, code := range []string{
		"import os; open('hello.txt', 'w').write('hi'); print(os.getcwd())",
		"print(open('hello.txt').read())",
	} {
		args, _ := json.Marshal(map[string]string{"code": code})
		out, err := runPython.Call(ctx, args)
		if err != nil {
			panic(err)
		}
		fmt.Println(anonymous(out))
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
