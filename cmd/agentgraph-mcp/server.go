package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

// server gives MCP clients sandboxes: each session gets one of its own,
// deleted when the session ends, and a call naming a thread uses that
// thread's sandbox instead, kept until the server stops.
type server struct {
	backend sandbox.Backend
	opts    []sandboxtool.Option
	log     *slog.Logger
	mcp     *mcp.Server

	threads *sandboxtool.Registry // sandboxes named by a thread argument

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	closed   bool
	watchers sync.WaitGroup
}

// session is the sandbox of one MCP session: a Registry holding one thread.
type session struct {
	reg    *sandboxtool.Registry
	thread string
}

func newServer(backend sandbox.Backend, log *slog.Logger, opts ...sandboxtool.Option) *server {
	s := &server{
		backend:  backend,
		opts:     opts,
		log:      log,
		threads:  sandboxtool.New(backend, append([]sandboxtool.Option{sandboxtool.WithPrefix("mcp-thread-")}, opts...)...),
		sessions: map[*mcp.ServerSession]*session{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentgraph-mcp", Version: "1"}, &mcp.ServerOptions{
		Instructions: "Each session has its own Python sandbox: files written by run_python or write_file stay " +
			"there for the session's later calls, and the sandbox is deleted when the session ends. Pass the " +
			"same thread to several sessions to share a sandbox that outlives them.",
	})
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "run_python",
		Description: "Runs a whole Python 3 program in this session's sandbox (or the thread's) and returns its exit " +
			"status followed by what it printed. Files it writes stay for later calls.",
	}, s.runPython)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "write_file",
		Description: "Writes a text file in the sandbox, creating its directories. Paths are relative to the home directory.",
	}, s.writeFile)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "read_file",
		Description: "Reads a file of the sandbox. Text comes back as text; other files as a resource holding their bytes.",
	}, s.readFile)
	return s
}

// RunPythonArgs are run_python's arguments.
type RunPythonArgs struct {
	Code   string `json:"code" jsonschema:"the complete Python 3 program, saved as main.py in the home directory and run with python3 main.py"`
	Thread string `json:"thread,omitempty" jsonschema:"optional: a name for a sandbox shared by the sessions that give it, kept after they end"`
}

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path    string `json:"path" jsonschema:"the file's path, relative to the home directory"`
	Content string `json:"content" jsonschema:"the file's text"`
	Thread  string `json:"thread,omitempty" jsonschema:"optional: the shared sandbox to write in, as for run_python"`
}

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	Path   string `json:"path" jsonschema:"the file's path, relative to the home directory"`
	Thread string `json:"thread,omitempty" jsonschema:"optional: the shared sandbox to read from, as for run_python"`
}

// errNoSession reports a call without a session to bind its sandbox to:
// a client speaking a protocol version without sessions.
var errNoSession = errors.New("this connection has no MCP session to keep a sandbox for: pass a thread argument to name one")

// registry returns the Registry and thread of the sandbox a call uses.
func (s *server) registry(ss *mcp.ServerSession, thread string) (*sandboxtool.Registry, string, error) {
	if thread != "" {
		return s.threads, thread, nil
	}
	if ss == nil {
		return nil, "", errNoSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", errors.New("the server is shutting down")
	}
	if se, ok := s.sessions[ss]; ok {
		return se.reg, se.thread, nil
	}
	se := &session{
		reg:    sandboxtool.New(s.backend, append([]sandboxtool.Option{sandboxtool.WithPrefix("mcp-session-")}, s.opts...)...),
		thread: strings.ToLower(rand.Text()[:16]),
	}
	s.sessions[ss] = se
	s.watchers.Add(1)
	go func() {
		// The session's sandbox lives as long as the session.
		defer s.watchers.Done()
		_ = ss.Wait()
		s.endSession(ss)
	}()
	return se.reg, se.thread, nil
}

// endSession deletes the sandbox of a session that ended.
func (s *server) endSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	se := s.sessions[ss]
	delete(s.sessions, ss)
	s.mu.Unlock()
	if se == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closed, err := se.reg.Close(ctx)
	for _, c := range closed {
		s.log.Info("session ended", "sandbox", c.SandboxID, "action", string(c.Action))
	}
	if err != nil {
		s.log.Warn("session ended: sandbox cleanup failed", "error", err)
	}
}

// close ends every session, deletes their sandboxes and the threads', and
// waits for the cleanup.
func (s *server) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	live := make([]*mcp.ServerSession, 0, len(s.sessions))
	for ss := range s.sessions {
		live = append(live, ss)
	}
	s.mu.Unlock()
	for _, ss := range live {
		ss.Close()
	}
	s.watchers.Wait()
	_, err := s.threads.Close(ctx)
	return err
}

func (s *server) runPython(ctx context.Context, req *mcp.CallToolRequest, a RunPythonArgs) (*mcp.CallToolResult, any, error) {
	reg, thread, err := s.registry(req.Session, a.Thread)
	if err != nil {
		return nil, nil, err
	}
	out, err := reg.Run(graph.ContextWithConfig(ctx, graph.Config{ThreadID: thread}), a.Code)
	if err != nil {
		return nil, nil, err
	}
	return text(out), nil, nil
}

func (s *server) sandbox(ctx context.Context, ss *mcp.ServerSession, thread string) (sandbox.Sandbox, error) {
	reg, thread, err := s.registry(ss, thread)
	if err != nil {
		return nil, err
	}
	return reg.Sandbox(ctx, thread)
}

func (s *server) writeFile(ctx context.Context, req *mcp.CallToolRequest, a WriteFileArgs) (*mcp.CallToolResult, any, error) {
	p, err := sandbox.ResolvePath(a.Path)
	if err != nil {
		return nil, nil, err
	}
	sb, err := s.sandbox(ctx, req.Session, a.Thread)
	if err != nil {
		return nil, nil, err
	}
	if err := sb.WriteFile(ctx, p, []byte(a.Content)); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), p)), nil, nil
}

func (s *server) readFile(ctx context.Context, req *mcp.CallToolRequest, a ReadFileArgs) (*mcp.CallToolResult, any, error) {
	p, err := sandbox.ResolvePath(a.Path)
	if err != nil {
		return nil, nil, err
	}
	sb, err := s.sandbox(ctx, req.Session, a.Thread)
	if err != nil {
		return nil, nil, err
	}
	data, err := sb.ReadFile(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if utf8.Valid(data) {
		return text(string(data)), nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
		URI: "sandbox://" + sb.ID() + p, MIMEType: "application/octet-stream", Blob: data,
	}}}}, nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
