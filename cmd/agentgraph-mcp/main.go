// Command agentgraph-mcp is an MCP server that gives any MCP client (a
// desktop assistant, an IDE, an agent) Python sandboxes: the tools
// run_python, write_file and read_file, each session with a sandbox of its
// own that is deleted when the session ends.
//
//	agentgraph-mcp [-http addr] [-sandbox-root dir] [-timeout 30s] [-host-network]
//
// Without -http it speaks MCP over its standard input and output, one
// session per process, as a client that starts it expects. With -http it
// serves the streamable HTTP transport at /mcp on addr, one sandbox per
// session. A call may name a thread instead, to use a sandbox that several
// sessions share and that is kept until the server stops. Sandboxes run on
// the local backend (Linux namespaces; see docs/security.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

func main() {
	local.Init() // first: in the re-executed sandbox helper this never returns

	addr := flag.String("http", "", "serve the streamable HTTP transport at /mcp on this address (default: stdio)")
	root := flag.String("sandbox-root", "", "directory holding the sandboxes (default "+local.DefaultRoot()+")")
	timeout := flag.Duration("timeout", sandboxtool.DefaultTimeout, "longest a run_python program may run (1s to 10m)")
	hostNet := flag.Bool("host-network", false, "give programs the host's network, so pip can reach a registry")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil)) // stdout carries the protocol over stdio
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *root, *timeout, *hostNet, log); err != nil {
		log.Error("agentgraph-mcp", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, root string, timeout time.Duration, hostNet bool, log *slog.Logger) (err error) {
	var opts []local.Option
	if root != "" {
		opts = append(opts, local.WithRoot(root))
	}
	backend, err := local.New(opts...)
	if err != nil {
		return err
	}
	defer backend.Close()
	s := newServer(backend, log, sandboxtool.WithTimeout(timeout), sandboxtool.WithCreateOptions(sandbox.CreateOptions{HostNetwork: hostNet}))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, s.close(cctx))
	}()
	if addr == "" {
		err := s.mcp.Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed) {
			return nil // the client hung up, or a signal came
		}
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving MCP", "url", fmt.Sprintf("http://%s/mcp", ln.Addr()))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	return err
}

// handler serves the streamable HTTP transport at /mcp. Sessions idle for
// an hour end, and their sandboxes with them.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: time.Hour, Logger: s.log}))
	return mux
}
