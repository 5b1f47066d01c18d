// Command agentgraph-sandbox manages the local sandboxes that agentgraph programs create: list, inspect,
// run commands in, move files in and out of, stop, resume, delete, and gc the expired ones.
//
// Usage:
//
//	agentgraph-sandbox [-root DIR] list [-name NAME] [-state running|stopped] [-json]
//	agentgraph-sandbox [-root DIR] create [-name NAME] [-size small|default|large] [-ttl 1h] [-net] [-env K=V]...
//	agentgraph-sandbox [-root DIR] inspect ID
//	agentgraph-sandbox [-root DIR] exec [-timeout 30s] [-cwd DIR] [-env K=V]... ID COMMAND...
//	agentgraph-sandbox [-root DIR] stop|resume|delete ID...
//	agentgraph-sandbox [-root DIR] cat ID PATH          (download a file to stdout)
//	agentgraph-sandbox [-root DIR] put ID PATH          (write stdin to a file)
//	agentgraph-sandbox [-root DIR] ls ID [DIR]
//	agentgraph-sandbox [-root DIR] rm ID PATH
//	agentgraph-sandbox [-root DIR] gc [-delete]         (stop expired sandboxes; -delete removes them)
//
// The root defaults to local.DefaultRoot(). exec exits with the command's exit code (124 on timeout).
//
// With -backend sandboxer every command but gc works on the sandboxes of the Sandboxer API instead: the hosted
// service, or an agentgraph-sandboxd at SANDBOXER_API_URL, with the key in SANDBOXER_API_KEY.
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
	"text/tabwriter"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandbox/sandboxer"
)

func main() {
	local.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentgraph-sandbox:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

type envFlag map[string]string

func (e envFlag) String() string { return fmt.Sprint(map[string]string(e)) }
func (e envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	e[k] = v
	return nil
}

// run parses the global flags, opens the backend and runs one command. It returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	global := flag.NewFlagSet("agentgraph-sandbox", flag.ContinueOnError)
	global.SetOutput(stderr)
	root := global.String("root", local.DefaultRoot(), "directory holding the sandboxes")
	backend := global.String("backend", "local", "local (this machine's sandboxes under -root) or sandboxer (the Sandboxer API at SANDBOXER_API_URL, with SANDBOXER_API_KEY)")
	if err := global.Parse(args); err != nil {
		return 2, err
	}
	args = global.Args()
	if len(args) == 0 {
		return 2, errors.New("missing command: list, create, inspect, exec, stop, resume, delete, cat, put, ls, rm or gc")
	}
	b, err := openBackend(*backend, *root)
	if err != nil {
		return 1, err
	}
	defer b.(io.Closer).Close()
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &commands{b: b, stdin: stdin, stdout: stdout, stderr: stderr}
	switch cmd {
	case "list":
		return c.list(ctx, fs, args)
	case "create":
		return c.create(ctx, fs, args)
	case "inspect":
		return c.inspect(ctx, fs, args)
	case "exec":
		return c.exec(ctx, fs, args)
	case "stop", "resume", "delete":
		return c.changeState(ctx, cmd, fs, args)
	case "cat", "put", "ls", "rm":
		return c.file(ctx, cmd, fs, args)
	case "gc":
		return c.gc(ctx, fs, args)
	}
	return 2, fmt.Errorf("unknown command %q", cmd)
}

// openBackend opens the backend the -backend flag names; both kinds are io.Closers.
func openBackend(name, root string) (sandbox.Backend, error) {
	switch name {
	case "local":
		return local.New(local.WithRoot(root), local.WithReapInterval(-1))
	case "sandboxer":
		return sandboxer.New(sandboxer.OptionsFromEnv()...)
	}
	return nil, fmt.Errorf("unknown backend %q: use -backend local or -backend sandboxer", name)
}

// commands runs the CLI's commands on one backend. Each parses its own flags from fs and returns the exit
// code: 2 for a usage error, 1 for a failure, else 0 (exec: the command's).
type commands struct {
	b      sandbox.Backend
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// list prints the sandboxes as a table or as JSON.
func (c *commands) list(ctx context.Context, fs *flag.FlagSet, args []string) (int, error) {
	name := fs.String("name", "", "only sandboxes with this name")
	state := fs.String("state", "", "only sandboxes in this state (running, stopped)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	infos, err := c.b.List(ctx, sandbox.Filter{Name: *name, State: sandbox.State(*state)})
	if err != nil {
		return 1, err
	}
	if *asJSON {
		return 0, printJSON(c.stdout, infos)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSIZE\tCREATED\tEXPIRES")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.ID, in.Name, in.State, in.Size,
			in.CreatedAt.Local().Format(time.DateTime), in.ExpiresAt.Local().Format(time.DateTime))
	}
	return 0, tw.Flush()
}

// create makes a sandbox and prints its id.
func (c *commands) create(ctx context.Context, fs *flag.FlagSet, args []string) (int, error) {
	opts := sandbox.CreateOptions{Env: map[string]string{}}
	fs.StringVar(&opts.Name, "name", "", "name")
	size := fs.String("size", "default", "small, default or large")
	fs.DurationVar(&opts.TTL, "ttl", sandbox.DefaultTTL, "time to live")
	fs.BoolVar(&opts.HostNetwork, "net", false, "give commands the host's network")
	fs.Var(envFlag(opts.Env), "env", "KEY=VALUE for every command (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	opts.Size = sandbox.Size(*size)
	s, err := c.b.Create(ctx, opts)
	if err != nil {
		return 1, err
	}
	fmt.Fprintln(c.stdout, s.ID())
	return 0, nil
}

// inspect prints one sandbox's Info as JSON.
func (c *commands) inspect(ctx context.Context, fs *flag.FlagSet, args []string) (int, error) {
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return 2, errors.New("usage: inspect ID")
	}
	s, err := c.b.Get(ctx, fs.Arg(0))
	if err != nil {
		return 1, err
	}
	in, err := s.Info(ctx)
	if err != nil {
		return 1, err
	}
	return 0, printJSON(c.stdout, in)
}

// exec runs a command in a sandbox, passes its output through and exits with its exit code (124 when it
// timed out).
func (c *commands) exec(ctx context.Context, fs *flag.FlagSet, args []string) (int, error) {
	opts := sandbox.ExecOptions{Env: map[string]string{}}
	fs.DurationVar(&opts.Timeout, "timeout", sandbox.DefaultExecTimeout, "wall-clock limit, 1s to 600s")
	fs.StringVar(&opts.Cwd, "cwd", "", "working directory, relative to /home/user")
	fs.Var(envFlag(opts.Env), "env", "KEY=VALUE (repeatable)")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 {
		return 2, errors.New("usage: exec [-timeout D] [-cwd DIR] [-env K=V] ID COMMAND [ARG ...]")
	}
	s, err := c.b.Get(ctx, fs.Arg(0))
	if err != nil {
		return 1, err
	}
	r, err := s.Exec(ctx, strings.Join(fs.Args()[1:], " "), opts)
	if err != nil {
		return 1, err
	}
	io.WriteString(c.stdout, r.Stdout)
	io.WriteString(c.stderr, r.Stderr)
	if r.TimedOut {
		fmt.Fprintf(c.stderr, "agentgraph-sandbox: timed out after %v\n", opts.Timeout)
		return 124, nil
	}
	return r.ExitCode, nil
}

// changeState stops, resumes or deletes each sandbox named, going on past failures and reporting them all.
func (c *commands) changeState(ctx context.Context, cmd string, fs *flag.FlagSet, args []string) (int, error) {
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		return 2, fmt.Errorf("usage: %s ID [ID ...]", cmd)
	}
	var errs []error
	for _, id := range fs.Args() {
		s, err := c.b.Get(ctx, id)
		if err == nil {
			switch cmd {
			case "stop":
				err = s.Stop(ctx)
			case "resume":
				err = s.Resume(ctx)
			default:
				err = s.Delete(ctx)
			}
		}
		errs = append(errs, err)
	}
	return 0, errors.Join(errs...)
}

// file runs the file commands: cat downloads a file to stdout, put writes stdin to one, ls lists a
// directory and rm removes a file.
func (c *commands) file(ctx context.Context, cmd string, fs *flag.FlagSet, args []string) (int, error) {
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 || (cmd != "ls" && fs.NArg() != 2) {
		return 2, fmt.Errorf("usage: %s ID PATH", cmd)
	}
	s, err := c.b.Get(ctx, fs.Arg(0))
	if err != nil {
		return 1, err
	}
	p := fs.Arg(1)
	switch cmd {
	case "cat":
		_, err = s.(sandbox.Downloader).Download(ctx, p, c.stdout)
	case "put":
		var data []byte
		if data, err = io.ReadAll(io.LimitReader(c.stdin, sandbox.MaxDownloadSize+1)); err == nil {
			err = s.WriteFile(ctx, p, data)
		}
	case "ls":
		err = c.listFiles(ctx, s, p)
	case "rm":
		err = s.(sandbox.FileRemover).RemoveFile(ctx, p)
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// listFiles prints dir's entries ("." when dir is empty), one a line: kind, size, time, name.
func (c *commands) listFiles(ctx context.Context, s sandbox.Sandbox, dir string) error {
	if dir == "" {
		dir = "."
	}
	files, err := s.(sandbox.FileLister).ListFiles(ctx, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		kind := "-"
		if f.IsDir {
			kind = "d"
		}
		fmt.Fprintf(c.stdout, "%s %10d %s %s\n", kind, f.Size, f.ModTime.Local().Format(time.DateTime), f.Name)
	}
	return nil
}

// gc stops the sandboxes past their TTL and, with -delete, deletes every stopped one past it.
func (c *commands) gc(ctx context.Context, fs *flag.FlagSet, args []string) (int, error) {
	del := fs.Bool("delete", false, "delete expired sandboxes instead of only stopping them")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	reaper, ok := c.b.(sandbox.Reaper)
	if !ok {
		return 2, errors.New("gc works on the local backend: a remote server stops its expired sandboxes itself")
	}
	stopped, err := reaper.Reap(ctx)
	for _, id := range stopped {
		fmt.Fprintln(c.stdout, "stopped", id)
	}
	if err != nil || !*del {
		return 0, err
	}
	infos, err := c.b.List(ctx, sandbox.Filter{State: sandbox.StateStopped})
	if err != nil {
		return 1, err
	}
	var errs []error
	for _, in := range infos {
		if time.Now().Before(in.ExpiresAt) {
			continue
		}
		if s, err := c.b.Get(ctx, in.ID); err == nil {
			if err := s.Delete(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintln(c.stdout, "deleted", in.ID)
		}
	}
	return 0, errors.Join(errs...)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
