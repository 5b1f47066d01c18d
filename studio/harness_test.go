package studio_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/codeact"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/studio"
)

// approvalGraph drafts a reply, asks a person whether to send it
// (graph.Interrupt), and sends it only on "yes".
func approvalGraph(t testing.TB, saver checkpoint.Saver) *graph.Graph[prebuilt.MessagesState] {
	t.Helper()
	type S = prebuilt.MessagesState
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("draft", func(ctx context.Context, s S) (graph.Update[S], error) {
			return graph.Updates(prebuilt.Messages.Add(model.Assistant("Draft: the build is green, shipping at noon."))), nil
		}).
		AddNodeFunc("review", func(ctx context.Context, s S) (graph.Update[S], error) {
			answer, err := graph.Interrupt(ctx, map[string]any{"question": "Send this draft?", "draft": s.Messages[len(s.Messages)-1].Content})
			if err != nil {
				return graph.Update[S]{}, err
			}
			text, _ := answer.(string)
			return graph.Updates(prebuilt.Messages.Add(model.Assistant("Reviewer said: " + text))), nil
		}).
		AddNodeFunc("send", func(ctx context.Context, s S) (graph.Update[S], error) {
			return graph.Updates(prebuilt.Messages.Add(model.Assistant("Sent."))), nil
		}).
		AddEdge(graph.START, "draft").
		AddEdge("draft", "review").
		AddConditionalEdges("review", graph.RouteFunc(func(s S) string {
			if strings.HasSuffix(s.Messages[len(s.Messages)-1].Content, ": yes") {
				return "send"
			}
			return graph.END
		}), graph.BranchConfig{Name: "approved", Paths: []string{"send", graph.END}}).
		AddEdge("send", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// newStudio serves the page in front of an Agent Server with two graphs:
// the guide's CodeAct agent (scripted model, run_python in local sandboxes
// under a temporary root, whose files the server serves) and the approval
// graph; opts add to the server's options. Everything it starts ends with
// the test.
func newStudio(t testing.TB, opts ...server.Option) *httptest.Server {
	t.Helper()
	backend, err := local.New(local.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatalf("local sandbox backend (the tests run as root): %v", err)
	}
	t.Cleanup(func() { backend.Close() })
	reg := sandboxtool.New(backend)
	t.Cleanup(func() {
		if _, err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	chat, err := codeact.ChatModel("scripted", "")
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	agent, err := codeact.Build(chat, reg.RunPython(), saver)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(append([]server.Option{
		server.WithGraph("codeact", agent, server.WithDescription("The CodeAct agent: a model that answers by running Python in its thread's sandbox")),
		server.WithGraph("approval", approvalGraph(t, saver), server.WithDescription("Drafts a reply and asks before sending it")),
		server.WithSaver(saver), server.WithWorkers(2), server.WithThreadFiles(reg),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(studio.Mount(srv))
	t.Cleanup(func() {
		ts.Close()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return ts
}
