// Command agentgraph-server serves the CodeAct agent of examples/codeact as graph "codeact" over
// LangGraph's Agent Server API, so @langchain/langgraph-sdk, langgraph_sdk, agent-chat-ui and LangGraph
// Studio can drive it, and serves agentgraph's own studio page (package studio) at /:
//
//	go run ./cmd/agentgraph-server [-addr 127.0.0.1:2024] [-db agentgraph.db] [-model scripted|<name>]
//	                              [-provider openai|anthropic] [-workers N] [-api-key KEY] [-cors ORIGIN,...]
//	                              [-postgres URL [-worker-only] [-run-timeout D]]
//
// Threads' checkpoints live in the bbolt file -db, the server's thread and run records in
// -db.server beside it, and the store (/store, and graph.StoreFrom in nodes) in -db.store, so all of
// them survive a restart. SIGTERM or Ctrl-C stops taking runs and stops the running ones at their
// next step boundary; a step still going after -grace is cancelled. Stopped and queued runs continue
// when the server starts again on the same -db.
//
// With -postgres, threads' checkpoints, the server's records and the store live in that PostgreSQL
// database instead, and every run is a job of River's queue there: any number of servers on the
// database share the runs, and a client may reach any of them (docs/howto-scale-out.md).
// -worker-only runs jobs without serving the API (only GET /ok, for health checks).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/internal/codeact"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/studio"
)

type flags struct {
	addr, db, model, provider, apiKey, cors, sandboxRoot string
	workers                                              int
	grace                                                time.Duration
	maxBody                                              int64
	postgres                                             string
	workerOnly                                           bool
	runTimeout                                           time.Duration
}

func main() {
	local.Init() // first: in the re-executed sandbox helper this never returns
	var f flags
	flag.StringVar(&f.addr, "addr", "127.0.0.1:2024", "address to listen on")
	flag.StringVar(&f.db, "db", "agentgraph.db", "bbolt file for threads (checkpoints); the server's records go beside it in FILE.server, the store in FILE.store")
	flag.StringVar(&f.model, "model", "scripted", "scripted (the guide's stand-in), or a model name for the endpoint at OPENAI_BASE_URL with OPENAI_API_KEY")
	flag.StringVar(&f.provider, "provider", "openai", "who serves -model: openai (any OpenAI-compatible endpoint) or anthropic (ANTHROPIC_API_KEY)")
	flag.StringVar(&f.apiKey, "api-key", os.Getenv("AGENTGRAPH_API_KEY"), "require this key in the x-api-key header (default $AGENTGRAPH_API_KEY; empty: no key)")
	flag.StringVar(&f.cors, "cors", "", "comma-separated origins browsers may call from (* for any)")
	flag.StringVar(&f.sandboxRoot, "sandbox-root", "", "directory of the local sandbox backend (default "+local.DefaultRoot()+")")
	flag.IntVar(&f.workers, "workers", 0, "runs executing at once (default: twice the CPUs)")
	flag.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGTERM, how long running runs may take to reach a step boundary before their step is cancelled")
	flag.Int64Var(&f.maxBody, "max-body", 10<<20, "largest request body in bytes")
	flag.StringVar(&f.postgres, "postgres", os.Getenv("AGENTGRAPH_POSTGRES"), "PostgreSQL URL: keep threads, runs and the store there and share runs with every server on it, instead of -db (default $AGENTGRAPH_POSTGRES)")
	flag.BoolVar(&f.workerOnly, "worker-only", false, "with -postgres: run jobs but serve no API, only GET /ok")
	flag.DurationVar(&f.runTimeout, "run-timeout", 10*time.Minute, "with -postgres: longest a run may take; a run of a server that died is taken up by another this long (plus 30s) after it started")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "agentgraph-server:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if set, receives the listening address.
func run(ctx context.Context, f flags, logw io.Writer, ready chan<- string) (err error) {
	logger := log.New(logw, "", log.LstdFlags)
	var opts []local.Option
	if f.sandboxRoot != "" {
		opts = append(opts, local.WithRoot(f.sandboxRoot))
	}
	backend, err := local.New(opts...)
	if err != nil {
		return fmt.Errorf("open the local sandbox backend: %w", err)
	}
	if c, ok := any(backend).(io.Closer); ok {
		defer c.Close()
	}
	// Threads outlive the process, so their sandboxes are stopped, not
	// deleted, when it exits: a thread's files are there on its next run.
	reg := sandboxtool.New(backend, sandboxtool.WithSettingsFromEnv(), sandboxtool.WithStopOnClose())
	defer func() {
		_, cerr := reg.Close(context.WithoutCancel(ctx))
		err = errors.Join(err, cerr)
	}()
	chat, err := codeact.ChatModel(f.model, f.provider)
	if err != nil {
		return err
	}
	b, err := openBackend(ctx, f)
	if err != nil {
		return err
	}
	defer b.close()
	agent, err := codeact.Build(chat, reg.RunPython(), b.saver)
	if err != nil {
		return err
	}
	sopts := append(b.opts,
		server.WithGraph("codeact", agent, server.WithDescription("The CodeAct agent: a model that answers by running Python in its thread's sandbox")),
		server.WithSaver(b.saver), server.WithStore(b.store), server.WithMaxBodyBytes(f.maxBody),
		server.WithThreadFiles(reg)) // each thread's sandbox home at /threads/{id}/files
	if f.workers > 0 {
		sopts = append(sopts, server.WithWorkers(f.workers))
	}
	if f.apiKey != "" {
		sopts = append(sopts, server.WithAPIKey(f.apiKey))
	}
	if f.cors != "" {
		sopts = append(sopts, server.WithCORS(strings.Split(f.cors, ",")...))
	}
	srv, err := server.New(sopts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return err
	}
	// The studio page at / uses the same API from the same origin.
	var h http.Handler = studio.Mount(srv)
	if f.workerOnly {
		h = healthOnly()
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	switch {
	case f.workerOnly:
		logger.Printf("running runs of graph codeact from %s; health at http://%s/ok", b.where, ln.Addr())
	default:
		logger.Printf("serving graph codeact on http://%s, the studio at http://%s/ (threads in %s)", ln.Addr(), ln.Addr(), b.where)
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	logger.Printf("shutting down: stopping running runs at their next step (at most %s)", f.grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), f.grace)
	defer cancel()
	// Stop the runs first: their streams end, so the HTTP server can drain.
	serr := srv.Shutdown(graceCtx)
	herr := hs.Shutdown(graceCtx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, serr, herr)
}
