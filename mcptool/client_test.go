package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/mcptool"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
)

// inMemory is an MCP server of the test's own, reached through in-memory
// pipes: each dial connects a new session to it.
type inMemory struct {
	t        *testing.T
	server   *mcp.Server
	mu       sync.Mutex
	sessions []*mcp.ServerSession
}

func (m *inMemory) dial(ctx context.Context) (mcp.Transport, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := m.server.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sessions = append(m.sessions, ss)
	m.mu.Unlock()
	m.t.Cleanup(func() { ss.Close() })
	return ct, nil
}

func (m *inMemory) dials() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// dropLast ends the newest session from the server's side.
func (m *inMemory) dropLast() {
	m.mu.Lock()
	ss := m.sessions[len(m.sessions)-1]
	m.mu.Unlock()
	ss.Close()
}

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

func newInMemory(t *testing.T) *inMemory {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."}, func(_ context.Context, _ *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("", 0) + itoa(a.A+a.B)}}}, nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "chart", Description: "Draw a chart.", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a chart"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is full"}}}, nil
	})
	return &inMemory{t: t, server: s}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func byName(tools []prebuilt.Tool) map[string]prebuilt.Tool {
	out := map[string]prebuilt.Tool{}
	for _, t := range tools {
		out[t.Spec().Name] = t
	}
	return out
}

func TestToolsSchemasAndResults(t *testing.T) {
	srv := newInMemory(t)
	ctx := context.Background()
	c, err := mcptool.Connect(ctx, srv.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := byName(tools)
	add := m["add"]
	if add == nil || m["chart"] == nil || m["fail"] == nil {
		t.Fatalf("tools %v", m)
	}
	spec := add.Spec()
	var schema struct {
		Type       string                    `json:"type"`
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if spec.Description != "Add two numbers." || schema.Type != "object" || !slices.Equal(schema.Required, []string{"a", "b"}) || schema.Properties["a"]["description"] != "the first number" {
		t.Fatalf("spec %s %s", spec.Description, spec.Parameters)
	}
	if v, err := add.Call(ctx, json.RawMessage(`{"a":2,"b":40}`)); err != nil || v != "42" {
		t.Fatalf("add: %v, %v", v, err)
	}
	// The server's schema is checked here before any call.
	if _, err := add.Call(ctx, json.RawMessage(`{"a":"two","b":1}`)); !errors.Is(err, prebuilt.ErrInvalidArguments) || !strings.Contains(err.Error(), `field "a": expected integer, got string "two"`) {
		t.Fatalf("bad arguments: %v", err)
	}
	if v, err := m["chart"].Call(ctx, nil); err != nil || v != "a chart\ndata:image/png;base64,iVBORw==" {
		t.Fatalf("chart: %q, %v", v, err)
	}
	var te *mcptool.ToolError
	if _, err := m["fail"].Call(ctx, nil); !errors.As(err, &te) || te.Text != "the disk is full" || te.Tool != "fail" {
		t.Fatalf("fail: %v", err)
	}
}

func TestReconnectAndListChanged(t *testing.T) {
	srv := newInMemory(t)
	ctx := context.Background()
	c, err := mcptool.Connect(ctx, srv.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, _ := c.Tools(ctx)
	add := byName(tools)["add"]

	// The server adds a tool: it says so, and the next list has it.
	srv.server.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		tools, err := c.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if late := byName(tools)["late"]; late != nil {
			if v, err := late.Call(ctx, nil); err != nil || v != "here" {
				t.Fatalf("late: %v %v", v, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new tool never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The session drops: the next call starts a new one, and tools made
	// before keep working.
	srv.dropLast()
	if v, err := add.Call(ctx, json.RawMessage(`{"a":1,"b":1}`)); err != nil || v != "2" {
		t.Fatalf("after the drop: %v, %v", v, err)
	}
	if n := srv.dials(); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	c.Close()
	if _, err := add.Call(ctx, json.RawMessage(`{"a":1,"b":1}`)); !errors.Is(err, mcptool.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// buildServer builds cmd/agentgraph-mcp into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentgraph-mcp")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/agentgraph-mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("build agentgraph-mcp: %v\n%s", err, out)
	}
	return bin
}

// TestReactAgentWithSandboxServer gives a ReAct agent the tools of
// agentgraph-mcp, started over stdio by the test, and checks that ending
// the session deletes the session's sandbox.
func TestReactAgentWithSandboxServer(t *testing.T) {
	bin := buildServer(t)
	root := t.TempDir()
	ctx := context.Background()
	var cmds []*exec.Cmd
	var mu sync.Mutex
	dial := mcptool.CommandFunc(func() *exec.Cmd {
		cmd := exec.Command(bin, "-sandbox-root", root)
		cmd.Stderr = os.Stderr
		mu.Lock()
		cmds = append(cmds, cmd)
		mu.Unlock()
		return cmd
	})
	c, err := mcptool.Connect(ctx, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "write_file", Arguments: json.RawMessage(`{"path":"n.txt","content":"21"}`)}),
		scripted.Calls(model.ToolCall{ID: "c2", Name: "run_python", Arguments: json.RawMessage(`{"code":"print(int(open('n.txt').read())*2)"}`)}),
		scripted.Text("42"),
	)
	agent, err := prebuilt.NewReactAgent(m, tools)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(ctx, graph.Updates(prebuilt.Messages.Add(model.User("double the number in n.txt"))))
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if len(msgs) != 6 || !strings.HasSuffix(msgs[4].Content, "exit code 0\n42") || msgs[5].Content != "42" {
		for _, m := range msgs {
			t.Logf("%s: %q", m.Role, m.Content)
		}
		t.Fatal("unexpected conversation")
	}

	// The server's process dies: the client starts another one.
	mu.Lock()
	first := cmds[0]
	mu.Unlock()
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	run := byName(tools)["run_python"]
	if v, err := run.Call(ctx, json.RawMessage(`{"code":"print('again')"}`)); err != nil || !strings.HasSuffix(v.(string), "again") {
		t.Fatalf("after the server died: %v, %v", v, err)
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	mu.Lock()
	for _, cmd := range cmds[1:] {
		_ = cmd.Wait() // the session's end ends the process
	}
	mu.Unlock()

	// The second server deleted its session's sandbox as its session ended.
	// The killed one could not: clean up after it, as its operator would.
	b, err := local.New(local.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	infos, err := b.List(ctx, sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Errorf("%d sandboxes left, want the killed server's one", len(infos))
	}
	for _, in := range infos {
		if sb, err := b.Get(ctx, in.ID); err == nil {
			_ = sb.Delete(ctx)
		}
	}
}

func TestMain(m *testing.M) {
	local.Init()
	os.Exit(m.Run())
}
