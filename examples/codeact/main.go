// Command codeact runs the sandbox guide's CodeAct agent end to end: a model node and a ToolNode with the
// run_python tool, one sandbox per graph thread, four scenarios, then every sandbox cleaned up.
//
//	go run ./examples/codeact [-progress] [-keep] [-db threads.db] [-model scripted|<model name>] [-backend local|gvisor|sandboxer]
//	                       [-provider openai|anthropic] [-sandbox-root dir] [-trace]
//
// With -model set to a model name the agent calls an OpenAI-compatible endpoint (OPENAI_API_KEY,
// OPENAI_BASE_URL), or with -provider anthropic Anthropic's Messages API (ANTHROPIC_API_KEY), instead of the
// scripted stand-in; nothing else changes. With -backend gvisor every command runs under gVisor's runsc on this
// machine (AGENTGRAPH_RUNSC names the binary, else runsc on PATH). With -backend sandboxer the sandboxes are
// those of the Sandboxer API (SANDBOXER_API_KEY; SANDBOXER_API_URL for an agentgraph-sandboxd instead of the
// hosted service). With -trace each run's OpenTelemetry spans (runs, steps, nodes, model and tool calls, sandbox
// commands) print to stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/codeact"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/gvisor"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
	"github.com/agentgraph/agentgraph/sandboxtool"
	"github.com/agentgraph/agentgraph/telemetry"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// config is what the flags set.
type config struct {
	Backend     string // "local", "gvisor", or "sandboxer": the Sandboxer API, hosted or an agentgraph-sandboxd
	SandboxRoot string // local or gvisor backend's state directory; "" means the backend's default
	Keep        bool   // stop the sandboxes at the end instead of deleting them
	Model       string // "scripted", or a model name for an OpenAI-compatible endpoint
	Provider    string // "openai" or "anthropic": who serves a named model
	DB          string // bbolt file for checkpoints; "" keeps them in memory
	Progress    bool   // stream node progress to stderr
	Trace       bool   // print each run's spans to stderr
}

func main() {
	local.Init() // first: in the re-executed sandbox helper this never returns

	var cfg config
	flag.StringVar(&cfg.Backend, "backend", "local", "sandbox backend: local (isolated processes on this Linux machine), gvisor (each command under gVisor's runsc on this machine) or sandboxer (the Sandboxer API at SANDBOXER_API_URL with SANDBOXER_API_KEY)")
	flag.StringVar(&cfg.SandboxRoot, "sandbox-root", "", "directory holding the local or gvisor backend's sandboxes (default "+local.DefaultRoot()+" or "+gvisor.DefaultRoot()+")")
	flag.BoolVar(&cfg.Keep, "keep", false, "stop the sandboxes at the end instead of deleting them, so a later run with -db continues with their files")
	flag.StringVar(&cfg.Model, "model", "scripted", "scripted (the guide's stand-in), or a model name for the endpoint at OPENAI_BASE_URL with OPENAI_API_KEY")
	flag.StringVar(&cfg.Provider, "provider", "openai", "who serves -model: openai (any OpenAI-compatible endpoint) or anthropic (with ANTHROPIC_API_KEY)")
	flag.StringVar(&cfg.DB, "db", "", "bbolt file for the threads' checkpoints, so a second run continues them (default: in memory)")
	flag.BoolVar(&cfg.Progress, "progress", false, "print each step of the graph to stderr as it runs")
	flag.BoolVar(&cfg.Trace, "trace", false, "print each run's spans (OpenTelemetry) to stderr as a tree when it ends")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	err := run(ctx, cfg, os.Stdout, os.Stderr)
	if cfg.Progress {
		fmt.Fprintf(os.Stderr, "wall time %.2fs\n", time.Since(start).Seconds())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codeact:", err)
		os.Exit(1)
	}
}

// run builds the agent and runs the guide's four scenarios, printing to stdout what the guide's script
// prints; progress, when asked for, goes to stderr. The sandboxes are cleaned up however run ends.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (err error) {
	backend, err := openBackend(cfg)
	if err != nil {
		return err
	}
	if c, ok := backend.(io.Closer); ok {
		defer c.Close()
	}
	tel, endTrace, err := tracing(cfg.Trace, stderr)
	if err != nil {
		return err
	}
	defer endTrace()
	backend, ctx = tel.Backend(backend), tel.Context(ctx)
	// The guide's tool takes SANDBOX_PREFIX and RUN_TIMEOUT from the environment; scenario 4 relies on it.
	regOpts := []sandboxtool.Option{sandboxtool.WithSettingsFromEnv()}
	if cfg.Keep {
		regOpts = append(regOpts, sandboxtool.WithStopOnClose())
	}
	reg := sandboxtool.New(backend, regOpts...)
	defer func() {
		// Even after an interrupt: the sandboxes must not outlive the run.
		closed, cerr := reg.Close(context.WithoutCancel(ctx))
		for _, c := range closed {
			fmt.Fprintln(stdout, c)
		}
		err = errors.Join(err, cerr)
	}()

	chat, err := codeact.ChatModel(cfg.Model, cfg.Provider)
	if err != nil {
		return err
	}
	chat = tel.Model(chat)
	var saver checkpoint.Saver = checkpoint.NewMemory()
	if cfg.DB != "" {
		db, err := bolt.Open(cfg.DB)
		if err != nil {
			return fmt.Errorf("open checkpoint file: %w", err)
		}
		defer db.Close()
		saver = db
	}
	runPython := tel.Tool(reg.RunPython())
	agent, err := codeact.Build(chat, runPython, saver)
	if err != nil {
		return err
	}
	a := asker{g: agent, stdout: stdout, stderr: stderr, progress: cfg.Progress}

	// 1. The tool on its own, no graph.
	out, err := runPython.Call(graph.ContextWithConfig(ctx, graph.Config{ThreadID: "1"}),
		codeArgs("import platform, os; print(platform.python_version(), os.getcwd())"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s \n\n", out) // Python's print(out, "\n")

	// 2. Graph -> tool -> sandbox, same thread, so the same sandbox.
	if err := a.ask(ctx, "1", "count the primes below 1,000,000"); err != nil {
		return err
	}
	if err := a.ask(ctx, "1", "import json; print(len(json.load(open('primes.json'))), 'primes still on disk')"); err != nil {
		return err
	}

	// 3. A second thread gets its own sandbox.
	if err := a.ask(ctx, "2", "import os; print(os.path.exists('primes.json'))"); err != nil {
		return err
	}

	// 4. A runaway program hits the timeout. The tool reads RUN_TIMEOUT at every call (WithSettingsFromEnv),
	// as the guide's does.
	restore := setenv(sandboxtool.EnvTimeout, "5")
	defer restore()
	return a.ask(ctx, "2", "import time\nwhile True: time.sleep(1)")
}

// tracing returns what -trace asks for: a Telemetry printing each run's spans to w when the run ends, and
// what flushes it. Without -trace the Telemetry reports nothing and its wrappers return what they are given.
func tracing(on bool, w io.Writer) (*telemetry.Telemetry, func(), error) {
	if !on {
		tel, err := telemetry.New()
		return tel, func() {}, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(telemetry.NewSpanPrinter(w)))
	tel, err := telemetry.New(telemetry.WithTracerProvider(tp))
	return tel, func() { _ = tp.Shutdown(context.Background()) }, err
}

// openBackend returns the sandbox backend the flags name.
func openBackend(cfg config) (sandbox.Backend, error) {
	switch cfg.Backend {
	case "local":
		var opts []local.Option
		if cfg.SandboxRoot != "" {
			opts = append(opts, local.WithRoot(cfg.SandboxRoot))
		}
		b, err := local.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("open the local sandbox backend: %w", err)
		}
		return b, nil
	case "gvisor":
		var opts []gvisor.Option
		if cfg.SandboxRoot != "" {
			opts = append(opts, gvisor.WithRoot(cfg.SandboxRoot))
		}
		if p := os.Getenv("AGENTGRAPH_RUNSC"); p != "" {
			opts = append(opts, gvisor.WithRunsc(p))
		}
		b, err := gvisor.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("open the gvisor sandbox backend: %w", err)
		}
		return b, nil
	case "sandboxer":
		b, err := sandboxer.New(sandboxer.OptionsFromEnv()...)
		if err != nil {
			return nil, fmt.Errorf("open the sandboxer backend: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown sandbox backend %q: use -backend local, gvisor or sandboxer", cfg.Backend)
}

type asker struct {
	g        *graph.Graph[prebuilt.MessagesState]
	stdout   io.Writer
	stderr   io.Writer
	progress bool
}

// ask runs one turn of thread and prints the last message, as the guide's ask does.
func (a asker) ask(ctx context.Context, thread, text string) error {
	start := time.Now()
	var last prebuilt.MessagesState
	input := graph.Updates(prebuilt.Messages.Add(model.User(text)))
	for ev, err := range a.g.Stream(ctx, input, graph.WithThread(thread), graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues)) {
		if err != nil {
			return fmt.Errorf("thread %s: %w", thread, err)
		}
		switch ev.Mode {
		case graph.ModeValues:
			last = ev.State
		case graph.ModeUpdates:
			if a.progress {
				fmt.Fprintf(a.stderr, "thread %s  step %d  %-6s %6.2fs  %s\n", thread, ev.Step, ev.Node,
					time.Since(start).Seconds(), describe(ev.Update))
			}
		}
	}
	if len(last.Messages) == 0 {
		return fmt.Errorf("thread %s: the run ended with no messages", thread)
	}
	fmt.Fprintf(a.stdout, "--- thread %s: %s\n\n", thread, last.Messages[len(last.Messages)-1].Content)
	return nil
}

// describe summarises a node's update in a few words for the progress lines.
func describe(update map[string]any) string {
	msgs, _ := update[prebuilt.Messages.Name()].([]model.Message)
	var parts []string
	for _, m := range msgs {
		switch {
		case m.HasToolCalls():
			for _, c := range m.ToolCalls {
				parts = append(parts, fmt.Sprintf("calls %s (%s, %d bytes of arguments)", c.Name, c.ID, len(c.Arguments)))
			}
		case m.Role == model.RoleTool:
			first, _, _ := strings.Cut(m.Content, "\n")
			parts = append(parts, fmt.Sprintf("%s answered %s", m.Name, first))
		default:
			parts = append(parts, fmt.Sprintf("%s replies (%d characters)", m.Role, len(m.Content)))
		}
	}
	if len(parts) == 0 {
		return "no messages"
	}
	return strings.Join(parts, "; ")
}

func codeArgs(code string) json.RawMessage {
	b, _ := json.Marshal(sandboxtool.RunPythonArgs{Code: code})
	return b
}

// setenv sets an environment variable and returns what puts the old value back.
func setenv(key, value string) (restore func()) {
	old, had := os.LookupEnv(key)
	os.Setenv(key, value)
	return func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	}
}
