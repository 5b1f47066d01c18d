package sandboxtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

// A Registry reads the files a thread's programs left in its sandbox, as
// server.WithThreadFiles does to serve them.
func ExampleRegistry_ReadDir() {
	root, _ := os.MkdirTemp("", "sandboxes")
	defer os.RemoveAll(root)
	backend, err := local.New(local.WithRoot(root))
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	reg := sandboxtool.New(backend)
	defer reg.Close(context.Background())

	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "1"})
	args, _ := json.Marshal(map[string]string{"code": "import os; os.makedirs('out', exist_ok=True); open('out/result.csv', 'w').write('n,primes\\n100,25\\n')"})
	if _, err := reg.RunPython().Call(ctx, args); err != nil {
		panic(err)
	}

	files, err := reg.ReadDir(context.Background(), "1", "out")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		fmt.Println(f.Name(), f.Size(), f.IsDir())
	}
	var b strings.Builder
	if _, err := reg.CopyFile(context.Background(), "1", "out/result.csv", &b); err != nil {
		panic(err)
	}
	fmt.Print(b.String())
	_, err = reg.ReadDir(context.Background(), "2", ".")
	fmt.Println(err)
	// Output:
	// result.csv 16 false
	// n,primes
	// 100,25
	// sandboxtool: thread "2" has no sandbox: file does not exist
}
