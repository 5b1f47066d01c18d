package sandboxer_test

import (
	"context"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
)

// What the API adds to a command: the same local sandbox, once directly and once through the client and
// sandboxd over loopback.
func BenchmarkExecTrue(b *testing.B) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "loopback"
		}
		b.Run(name, func(b *testing.B) {
			client, lb := loopback(b, sandboxd.Limits{Sandboxes: 1000, Commands: 100})
			var be sandbox.Backend = lb
			if remote {
				be = client
			}
			ctx := context.Background()
			s, err := be.Create(ctx, sandbox.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Delete(ctx)
			for b.Loop() {
				if r, err := s.Exec(ctx, "true", sandbox.ExecOptions{}); err != nil || r.ExitCode != 0 {
					b.Fatal(r, err)
				}
			}
		})
	}
}

// BenchmarkCreateDelete is a sandbox's whole life through the API, without a command.
func BenchmarkCreateDelete(b *testing.B) {
	client, _ := loopback(b, sandboxd.Limits{Sandboxes: 1000, Commands: 100})
	ctx := context.Background()
	for b.Loop() {
		s, err := client.Create(ctx, sandbox.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Delete(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
