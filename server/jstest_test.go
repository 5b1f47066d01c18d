package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/store"
)

// napGraph naps in its first node when the last human message is "nap
// MS" (until the run is cancelled), then says so in a second node.
func napGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[prebuilt.MessagesState] {
	t.Helper()
	lastHuman := func(s prebuilt.MessagesState) string {
		for i := len(s.Messages) - 1; i >= 0; i-- {
			if s.Messages[i].Role == model.RoleUser {
				return s.Messages[i].Content
			}
		}
		return ""
	}
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("nap", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			text := lastHuman(s)
			if ms, err := strconv.Atoi(strings.TrimPrefix(text, "nap ")); err == nil {
				select {
				case <-time.After(time.Duration(ms) * time.Millisecond):
				case <-ctx.Done():
					time.Sleep(10 * time.Millisecond)
					return graph.Update[prebuilt.MessagesState]{}, ctx.Err()
				}
			}
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: "napped: " + text})), nil
		}).
		AddNodeFunc("wake", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: "awake: " + lastHuman(s)})), nil
		}).
		AddEdge(graph.START, "nap").AddEdge("nap", "wake").AddEdge("wake", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// askGraph asks for a name with graph.Interrupt and greets it.
func askGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[prebuilt.MessagesState] {
	t.Helper()
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("ask", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			name, err := graph.Interrupt(ctx, map[string]any{"question": "what is your name?"})
			if err != nil {
				return graph.Update[prebuilt.MessagesState]{}, err
			}
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: fmt.Sprintf("hello, %v", name)})), nil
		}).
		AddEdge(graph.START, "ask").AddEdge("ask", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestJSClient drives the server with @langchain/langgraph-sdk itself.
func TestJSClient(t *testing.T) {
	saver := checkpoint.NewMemory()
	_, ts := startServer(t, nil,
		WithGraph("echo", echoGraph(t, saver)), WithGraph("nap", napGraph(t, saver)), WithGraph("ask", askGraph(t, saver)),
		WithSaver(saver), WithStore(store.NewMemory()), WithWorkers(8))
	runNode(t, "api.mjs", ts.URL)
}

// runNode runs node jstest/script with the server's URL and fails the test
// if the script does. Without jstest/node_modules it skips, or fails
// under CI.
func runNode(t *testing.T, script, url string) {
	t.Helper()
	dir, err := filepath.Abs("jstest")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph-sdk")); err != nil || statErr != nil {
		msg := "node or server/jstest/node_modules missing: run `npm ci --prefix server/jstest` to drive the server with @langchain/langgraph-sdk"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script), url)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	if testing.Verbose() {
		t.Logf("node %s:\n%s", script, out)
	}
}
