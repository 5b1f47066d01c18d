package mcptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// A Dialer makes the transport of a new session with a server. The client
// calls it once when it connects and again each time it reconnects, so it
// must make a new transport each time (an exec.Cmd runs only once).
type Dialer func(ctx context.Context) (mcp.Transport, error)

// Command dials a server by running name with args and speaking to it over
// its standard input and output. The process ends when the session ends.
func Command(name string, args ...string) Dialer {
	return CommandFunc(func() *exec.Cmd { return exec.Command(name, args...) })
}

// CommandFunc dials a server by running the command newCmd returns, which
// may set its environment and working directory.
func CommandFunc(newCmd func() *exec.Cmd) Dialer {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.CommandTransport{Command: newCmd()}, nil
	}
}

// HTTP dials a server at endpoint over the streamable HTTP transport,
// with client (nil: http.DefaultClient).
func HTTP(endpoint string, client *http.Client) Dialer {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil
	}
}

// Option configures Connect.
type Option func(*options)

type options struct {
	name    string
	version string
	log     *slog.Logger
}

// WithClientInfo sets the name and version the client gives the server
// (default "agentgraph", "1").
func WithClientInfo(name, version string) Option {
	return func(o *options) { o.name, o.version = name, version }
}

// WithLogger logs the client's reconnections and failures to l.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// Client is a session with an MCP server, renewed when it drops. It is safe
// for concurrent use.
type Client struct {
	dial   Dialer
	client *mcp.Client
	log    *slog.Logger

	mu      sync.Mutex
	session *mcp.ClientSession // nil after a drop, until the next call
	tools   []prebuilt.Tool
	stale   bool // the server said its tools changed
	closed  bool
	watch   sync.WaitGroup
}

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("mcptool: the client is closed")

// Connect starts a session with the server dial reaches and lists its
// tools. Close the client to end the session (and the server's process,
// over stdio).
func Connect(ctx context.Context, dial Dialer, opts ...Option) (*Client, error) {
	o := options{name: "agentgraph", version: "1"}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{dial: dial, log: o.log}
	c.client = mcp.NewClient(&mcp.Implementation{Name: o.name, Version: o.version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.stale = true
			c.mu.Unlock()
		},
	})
	c.mu.Lock()
	_, err := c.sessionLocked(ctx)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if _, err := c.Tools(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// sessionLocked returns the live session, starting one if there is none.
func (c *Client) sessionLocked(ctx context.Context) (*mcp.ClientSession, error) {
	if c.closed {
		return nil, ErrClosed
	}
	if c.session != nil {
		return c.session, nil
	}
	t, err := c.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcptool: dial the server: %w", err)
	}
	s, err := c.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcptool: connect to the server: %w", err)
	}
	c.session = s
	c.stale = true // a new session may offer other tools
	c.watch.Add(1)
	go func() {
		// Notice a drop, so the next call starts a new session.
		defer c.watch.Done()
		err := s.Wait()
		c.mu.Lock()
		if c.session == s {
			c.session = nil
			if !c.closed && c.log != nil {
				c.log.Warn("mcp session ended; the next call reconnects", "error", err)
			}
		}
		c.mu.Unlock()
	}()
	return s, nil
}

// drop forgets s after a failure that shows it is gone.
func (c *Client) drop(s *mcp.ClientSession) {
	c.mu.Lock()
	if c.session == s {
		c.session = nil
	}
	c.mu.Unlock()
	s.Close()
}

// Close ends the session. Tools of the client fail with ErrClosed after it.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.session
	c.session = nil
	c.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	c.watch.Wait()
	return err
}

// Tools returns the server's tools as prebuilt tools, listing them again
// when the server said they changed or the session was renewed since the
// last list. Each tool's schema is the server's input schema; a call goes to
// the server through the client's current session.
func (c *Client) Tools(ctx context.Context) ([]prebuilt.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.sessionLocked(ctx)
	if err != nil {
		return nil, err
	}
	if !c.stale && c.tools != nil {
		return c.tools, nil
	}
	c.stale = false
	var tools []prebuilt.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			c.stale = true
			return nil, fmt.Errorf("mcptool: list tools: %w", err)
		}
		tool, err := c.adapt(t)
		if err != nil {
			c.stale = true
			return nil, err
		}
		tools = append(tools, tool)
	}
	c.tools = tools
	return tools, nil
}

func (c *Client) adapt(t *mcp.Tool) (prebuilt.Tool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcptool: tool %q: encode its input schema: %w", t.Name, err)
	}
	if string(schema) == "null" {
		schema = nil
	}
	name := t.Name
	tool, err := prebuilt.NewRawTool(model.ToolSpec{Name: name, Description: t.Description, Parameters: schema},
		func(ctx context.Context, args json.RawMessage) (any, error) {
			res, err := c.CallTool(ctx, name, args)
			if err != nil {
				return nil, err
			}
			return Content(name, res)
		})
	if err != nil {
		return nil, fmt.Errorf("mcptool: tool %q of the server: %w", name, err)
	}
	return tool, nil
}

// CallTool calls the server's tool name with args (a JSON object) and
// returns the server's result as it is. When the session has dropped it
// starts a new one. A call that fails because the session was lost (the
// connection closed or hit its end, or the server no longer knows the
// session) is sent once more on a new session; as with any call across a
// network that fails without an answer, the server may have run it, so
// tools with effects should be safe to repeat. Arguments the server rejects
// as invalid give a *prebuilt.ArgumentError.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		s, err := c.sessionLocked(ctx)
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil {
			return res, nil
		}
		if attempt == 0 && ctx.Err() == nil && lost(err) {
			c.drop(s)
			if c.log != nil {
				c.log.Info("mcp session lost; calling again on a new session", "tool", name, "error", err)
			}
			continue
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == -32602 { // invalid params
			return nil, &prebuilt.ArgumentError{Tool: name, Problems: []string{we.Message}}
		}
		return nil, fmt.Errorf("mcptool: call %q: %w", name, err)
	}
}

// lost reports an error that means the session is gone.
func lost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe)
}

// ToolError is a result the server marked as an error (isError): the tool
// ran and failed. Text is what the server said.
type ToolError struct {
	Tool string
	Text string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("tool %s reported an error: %s", e.Tool, e.Text)
}

// Content turns a tool's result into what the tool message says: the text
// of its text parts, one per line; images and audio as data URLs
// ("data:image/png;base64,..."); resource links as their URI; embedded
// resources as their text, or a data URL of their bytes. A result with
// structured content and no content parts gives that content as JSON. A
// result the server marked as an error gives a *ToolError with that text.
func Content(tool string, res *mcp.CallToolResult) (string, error) {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, dataURL(c.MIMEType, c.Data))
		case *mcp.AudioContent:
			parts = append(parts, dataURL(c.MIMEType, c.Data))
		case *mcp.ResourceLink:
			parts = append(parts, c.URI)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" || r.Blob == nil {
					parts = append(parts, r.Text)
				} else {
					parts = append(parts, dataURL(r.MIMEType, r.Blob))
				}
			}
		}
	}
	text := strings.Join(parts, "\n")
	if len(parts) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", fmt.Errorf("mcptool: tool %q: encode its structured content: %w", tool, err)
		}
		text = string(b)
	}
	if res.IsError {
		return "", &ToolError{Tool: tool, Text: text}
	}
	return text, nil
}

func dataURL(mime string, data []byte) string {
	if mime == "" {
		mime = "application/octet-stream"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}
