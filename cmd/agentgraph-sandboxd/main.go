// Command agentgraph-sandboxd serves this machine's sandboxes over the Sandboxer API v1, so that graphs on
// other machines use them through sandbox/sandboxer (SANDBOXER_API_URL=http(s)://host:port/api/v1).
//
// Usage:
//
//	agentgraph-sandboxd serve -keys FILE [-addr 127.0.0.1:8470] [-root DIR] [-state FILE]
//	                          [-tls-cert FILE -tls-key FILE] [-max-sandboxes 10] [-max-commands 16]
//	                          [-max-body 1048576] [-grace 30s]
//	agentgraph-sandboxd keys add -keys FILE -name NAME [-max-sandboxes N] [-max-commands N]
//	agentgraph-sandboxd keys list -keys FILE
//	agentgraph-sandboxd keys remove -keys FILE ID|NAME
//
// keys add prints the new key once, on stdout; the file keeps only its hash. serve rereads the key file on
// SIGHUP. On SIGINT or SIGTERM it stops taking requests, lets running ones finish for the grace period,
// and exits; sandboxes are left as they are (the local backend's detached commands end with the process).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxd"
)

func main() {
	local.Init() // first: in the re-executed sandbox helper this never returns
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentgraph-sandboxd:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

const usage = "usage: agentgraph-sandboxd serve -keys FILE [flags], or agentgraph-sandboxd keys add|list|remove -keys FILE"

// run runs one command and returns the exit code: 2 for a usage error, 1 for a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "keys":
		if len(args) < 2 {
			return 2, errors.New("usage: agentgraph-sandboxd keys add|list|remove -keys FILE [flags]")
		}
		return keys(args[1], args[2:], stdout, stderr)
	}
	return 2, fmt.Errorf("unknown command %q: %s", args[0], usage)
}

func serve(ctx context.Context, args []string, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8470", "address to listen on (host:port)")
	keyFile := fs.String("keys", "", "key file (create it with: agentgraph-sandboxd keys add)")
	root := fs.String("root", local.DefaultRoot(), "directory of the local backend's sandboxes")
	stateFile := fs.String("state", "", "file recording which key owns which sandbox (default: sandboxd-state.json beside the key file)")
	cert := fs.String("tls-cert", "", "TLS certificate (PEM); with -tls-key, serve HTTPS")
	key := fs.String("tls-key", "", "TLS private key (PEM)")
	maxSandboxes := fs.Int("max-sandboxes", 10, "running sandboxes per key, unless the key sets its own")
	maxCommands := fs.Int("max-commands", 16, "commands at once per key, unless the key sets its own")
	maxBody := fs.Int64("max-body", 1<<20, "largest request body in bytes, file writes aside")
	grace := fs.Duration("grace", 30*time.Second, "how long running requests may finish at shutdown")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *keyFile == "" || fs.NArg() != 0 || (*cert == "") != (*key == "") {
		return 2, errors.New("usage: agentgraph-sandboxd serve -keys FILE [-addr HOST:PORT] [-tls-cert FILE -tls-key FILE] [flags]")
	}
	if *stateFile == "" {
		*stateFile = filepath.Join(filepath.Dir(*keyFile), "sandboxd-state.json")
	}
	ks, err := sandboxd.ReadKeys(*keyFile)
	if err != nil {
		return 1, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	backend, err := local.New(local.WithRoot(*root), local.WithLogger(logger))
	if err != nil {
		return 1, fmt.Errorf("open the local backend: %w", err)
	}
	defer backend.Close()
	srv, err := sandboxd.New(backend, sandboxd.WithKeys(ks), sandboxd.WithStateFile(*stateFile), sandboxd.WithLogger(logger),
		sandboxd.WithDefaultLimits(sandboxd.Limits{Sandboxes: *maxSandboxes, Commands: *maxCommands}), sandboxd.WithMaxBodyBytes(*maxBody))
	if err != nil {
		return 1, err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 1, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stderr, "agentgraph-sandboxd: serving %s with %d keys at %s://%s%s\n", backend.Root(), len(ks.List()), scheme, ln.Addr(), sandboxd.Prefix)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	served := make(chan error, 1)
	go func() {
		if *cert != "" {
			served <- hs.ServeTLS(ln, *cert, *key)
		} else {
			served <- hs.Serve(ln)
		}
	}()
	for {
		select {
		case err := <-served:
			return 1, err
		case <-hup:
			if ks, err := sandboxd.ReadKeys(*keyFile); err != nil {
				logger.Error("agentgraph-sandboxd: reload keys; keeping the old ones", "err", err)
			} else {
				srv.SetKeys(ks)
				logger.Info("agentgraph-sandboxd: reloaded keys", "keys", len(ks.List()))
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	// Stop taking requests and let the running ones finish; no sandbox is stopped.
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	err = hs.Shutdown(sctx)
	if err != nil {
		hs.Close()
	}
	<-served
	fmt.Fprintln(stderr, "agentgraph-sandboxd: stopped; the sandboxes are left as they are")
	if errors.Is(err, context.DeadlineExceeded) {
		return 0, nil // requests cut off after the grace period; that is what the flag asked for
	}
	return 0, err
}

func keys(cmd string, args []string, stdout, stderr io.Writer) (int, error) {
	fset := flag.NewFlagSet("keys "+cmd, flag.ContinueOnError)
	fset.SetOutput(stderr)
	file := fset.String("keys", "", "key file")
	name := fset.String("name", "", "name of the new key: who or what uses it")
	var l sandboxd.Limits
	fset.IntVar(&l.Sandboxes, "max-sandboxes", 0, "running sandboxes at once (0: the server's default)")
	fset.IntVar(&l.Commands, "max-commands", 0, "commands at once (0: the server's default)")
	if err := fset.Parse(args); err != nil {
		return 2, err
	}
	if *file == "" {
		return 2, errors.New("-keys FILE is required")
	}
	ks, err := sandboxd.ReadKeys(*file)
	if errors.Is(err, fs.ErrNotExist) && cmd == "add" {
		ks, err = &sandboxd.Keys{}, nil
	}
	if err != nil {
		return 1, err
	}
	switch cmd {
	case "add":
		secret, k, err := ks.Add(*name, l)
		if err != nil {
			return 2, err
		}
		if err := ks.WriteFile(*file); err != nil {
			return 1, err
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "added key %s (%s) to %s; the key above is shown only now (SANDBOXER_API_KEY)\n", k.ID, k.Name, *file)
		return 0, nil
	case "list":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tKEY\tCREATED\tMAX SANDBOXES\tMAX COMMANDS")
		for _, k := range ks.List() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Hint, k.CreatedAt.Local().Format(time.DateTime),
				orDefault(k.Limits.Sandboxes), orDefault(k.Limits.Commands))
		}
		return 0, tw.Flush()
	case "remove":
		if fset.NArg() != 1 {
			return 2, errors.New("usage: agentgraph-sandboxd keys remove -keys FILE ID|NAME")
		}
		if err := ks.Remove(fset.Arg(0)); err != nil {
			return 1, err
		}
		if err := ks.WriteFile(*file); err != nil {
			return 1, err
		}
		fmt.Fprintf(stderr, "removed %s; a running server forgets it on SIGHUP or restart\n", fset.Arg(0))
		return 0, nil
	}
	return 2, fmt.Errorf("unknown keys command %q: use add, list or remove", cmd)
}

func orDefault(n int) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}
