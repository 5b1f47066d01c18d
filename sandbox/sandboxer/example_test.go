package sandboxer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
)

// A graph reaches sandboxes on another machine through the API. Here the "other machine" is an
// agentgraph-sandboxd server on a loopback port; against the hosted service, sandboxer.New(
// sandboxer.OptionsFromEnv()...) with SANDBOXER_API_KEY set is all it takes.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "sandboxes")
	defer os.RemoveAll(root)
	lb, err := local.New(local.WithRoot(root))
	if err != nil {
		panic(err)
	}
	defer lb.Close()
	keys := &sandboxd.Keys{}
	secret, _, _ := keys.Add("example", sandboxd.Limits{})
	srv, _ := sandboxd.New(lb, sandboxd.WithKeys(keys), sandboxd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	hs := httptest.NewServer(srv)
	defer hs.Close()

	b, err := sandboxer.New(sandboxer.WithAPIKey(secret), sandboxer.WithBaseURL(hs.URL+sandboxd.Prefix))
	if err != nil {
		panic(err)
	}
	defer b.Close()
	s, err := b.Create(ctx, sandbox.CreateOptions{Name: "example", Size: sandbox.SizeSmall})
	if err != nil {
		panic(err)
	}
	defer s.Delete(ctx)
	s.WriteFile(ctx, "main.py", []byte("print(sum(range(10)))\n"))
	r, err := s.Exec(ctx, "python3 main.py", sandbox.ExecOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("exit %d: %s", r.ExitCode, r.Stdout)
	// Output: exit 0: 45
}

// ExecStream yields output while the command runs.
func ExampleSandbox_ExecStream() {
	_ = func(ctx context.Context, s *sandboxer.Sandbox) error {
		for f, err := range s.ExecStream(ctx, "pip install numpy", sandbox.ExecOptions{Timeout: sandbox.MaxExecTimeout}) {
			if err != nil {
				return err
			}
			switch f.Type {
			case "stdout", "stderr":
				fmt.Print(f.Data)
			case "exit":
				fmt.Println("exit code", f.ExitCode)
			}
		}
		return nil
	}
}
