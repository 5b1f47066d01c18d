//go:build linux

package local_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// In a program, main starts with local.Init(); here TestMain does.
func Example() {
	root, err := os.MkdirTemp("", "sandboxes-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	b, err := local.New(local.WithRoot(root))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	ctx := context.Background()
	sb, err := b.Create(ctx, sandbox.CreateOptions{Name: "example", Size: sandbox.SizeSmall})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Delete(ctx)
	if err := sb.WriteFile(ctx, "main.py", []byte("print(sum(range(10)))\n")); err != nil {
		log.Fatal(err)
	}
	r, err := sb.Exec(ctx, "python3 main.py", sandbox.ExecOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(r.Stdout)
	fmt.Println("exit", r.ExitCode)
	// Output:
	// 45
	// exit 0
}
