// Command agentserver measures agentgraph's Agent Server beside LangGraph's
// JS Agent Server (@langchain/langgraph-api, pinned in package-lock.json)
// serving the same scripted CodeAct graph: runs per second on one thread,
// runs per second on 50 threads at once, and the time to the first streamed
// event. Both servers run as child processes on loopback and keep threads in
// memory; one Go client measures both. From bench/:
//
//	(cd agentserver && npm ci)   # once
//	go run ./agentserver
//
// It prints a Markdown table of medians and the ratio of agentgraph's figure
// to LangGraph's; -json FILE writes the figures there too (the benchmark
// harness in bench/ reads them).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/server"
)

func main() {
	serve := flag.String("serve", "", "serve agentgraph's side on this address and print it (used by the benchmark itself)")
	trials := flag.Int("trials", 5, "trials per figure; the table shows their median")
	perThread := flag.Int("per-thread", 4, "runs per thread in a concurrent trial")
	threads := flag.Int("threads", 50, "threads run at once in a concurrent trial")
	seqRuns := flag.Int("seq-runs", 20, "runs one after another on one new thread in a sequential trial")
	firstEvents := flag.Int("first-events", 100, "streamed runs timed for the first event, per server")
	only := flag.String("only", "", "measure only agentgraph or langgraphjs")
	jsonOut := flag.String("json", "", "also write the figures to this file as JSON")
	flag.Parse()
	if *serve != "" {
		if err := serveAgentgraph(*serve); err != nil {
			fmt.Fprintln(os.Stderr, "agentserver:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{trials: *trials, perThread: *perThread, threads: *threads, seqRuns: *seqRuns, firstEvents: *firstEvents}
	if err := compare(ctx, cfg, *only, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "agentserver:", err)
		os.Exit(1)
	}
}

// serveAgentgraph serves the scripted CodeAct graph until SIGTERM, with
// run_python answering at once as in codeact.mjs.
func serveAgentgraph(addr string) error {
	runPython := prebuilt.MustTool("run_python", "Run a Python program in the thread's sandbox.",
		func(ctx context.Context, a struct {
			Code string `json:"code"`
		}) (string, error) {
			return fmt.Sprintf("[sb_bench] exit code 0\n%d bytes of code", len(a.Code)), nil
		})
	saver := checkpoint.NewMemory()
	// The guide's graph (internal/codeact builds the same one).
	tools := []prebuilt.Tool{runPython}
	agent, err := prebuilt.NewModelNode(scripted.CodeAct(), prebuilt.Messages, tools)
	if err != nil {
		return err
	}
	toolNode, err := prebuilt.NewToolNode(prebuilt.Messages, tools)
	if err != nil {
		return err
	}
	g, err := graph.New(prebuilt.Messages).
		AddNode(prebuilt.AgentNode, agent).
		AddNode(prebuilt.ToolsNode, toolNode).
		AddEdge(graph.START, prebuilt.AgentNode).
		AddConditionalEdges(prebuilt.AgentNode, prebuilt.ToolsCondition(prebuilt.Messages), prebuilt.ToolsBranch()).
		AddEdge(prebuilt.ToolsNode, prebuilt.AgentNode).
		Compile(graph.WithSaver(saver))
	if err != nil {
		return err
	}
	srv, err := server.New(server.WithGraph("codeact", g), server.WithSaver(saver))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	hs := &http.Server{Handler: srv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type config struct {
	trials, perThread, threads, seqRuns, firstEvents int
}

// figures are one server's medians, and the trials behind the runs/s ones.
type figures struct {
	Sequential       float64   `json:"sequential_runs_per_s"` // runs per second
	Concurrent       float64   `json:"concurrent_runs_per_s"`
	FirstEventMS     float64   `json:"first_event_ms"`
	SequentialTrials []float64 `json:"sequential_trials"`
	ConcurrentTrials []float64 `json:"concurrent_trials"`
}

// output is what -json writes.
type output struct {
	Trials      int                `json:"trials"`
	SeqRuns     int                `json:"seq_runs"`
	Threads     int                `json:"threads"`
	PerThread   int                `json:"per_thread"`
	FirstEvents int                `json:"first_events"`
	Servers     map[string]figures `json:"servers"`
}

func compare(ctx context.Context, cfg config, only, jsonOut string) error {
	results := map[string]figures{}
	for _, name := range []string{"agentgraph", "langgraphjs"} {
		if only != "" && only != name {
			continue
		}
		url, stop, err := start(ctx, name)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "measuring %s at %s\n", name, url)
		f, err := measure(ctx, cfg, url)
		stop()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		results[name] = f
	}
	fmt.Printf("| figure (median of %d trials) | agentgraph | LangGraph.js | ratio |\n|---|---|---|---|\n", cfg.trials)
	row := func(what string, ours, theirs float64, unit string, higherIsBetter bool) {
		ratio := "n/a"
		if ours > 0 && theirs > 0 {
			if higherIsBetter {
				ratio = fmt.Sprintf("%.1f×", ours/theirs)
			} else {
				ratio = fmt.Sprintf("%.1f×", theirs/ours)
			}
		}
		fmt.Printf("| %s | %.4g %s | %.4g %s | %s |\n", what, ours, unit, theirs, unit, ratio)
	}
	a, l := results["agentgraph"], results["langgraphjs"]
	row(fmt.Sprintf("runs/s, %d runs one after another on one thread", cfg.seqRuns), a.Sequential, l.Sequential, "runs/s", true)
	row(fmt.Sprintf("runs/s, %d threads at once (%d runs each)", cfg.threads, cfg.perThread), a.Concurrent, l.Concurrent, "runs/s", true)
	row("time to first streamed event", a.FirstEventMS, l.FirstEventMS, "ms", false)
	if jsonOut == "" {
		return nil
	}
	data, err := json.MarshalIndent(output{Trials: cfg.trials, SeqRuns: cfg.seqRuns, Threads: cfg.threads, PerThread: cfg.perThread,
		FirstEvents: cfg.firstEvents, Servers: results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(jsonOut, append(data, '\n'), 0o644)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// start runs a server as a child process and returns its URL and a
// function that stops it and everything it started.
func start(ctx context.Context, name string) (string, func(), error) {
	var cmd *exec.Cmd
	var url string
	switch name {
	case "agentgraph":
		cmd = exec.Command(os.Args[0], "-serve", "127.0.0.1:0")
	case "langgraphjs":
		dir, err := benchDir()
		if err != nil {
			return "", nil, err
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph-api")); err != nil {
			return "", nil, fmt.Errorf("LangGraph's server is not installed: run `npm ci` in %s", dir)
		}
		// Its in-memory state is kept here between runs; start clean.
		if err := os.RemoveAll(filepath.Join(dir, ".langgraph_api")); err != nil {
			return "", nil, err
		}
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		url = fmt.Sprintf("http://127.0.0.1:%d", port)
		cmd = exec.Command(filepath.Join(dir, "node_modules", ".bin", "langgraphjs"), "dev", "--config", "langgraph.json",
			"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--no-browser", "--no-reload")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LANGGRAPH_CLI_NO_ANALYTICS=1")
	}
	// Its own process group, so that stopping it stops every process it
	// started (the JS server runs workers under tsx).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	if url == "" {
		select {
		case addr := <-lines:
			url = "http://" + strings.TrimSpace(addr)
		case <-exited:
			return "", nil, errors.New("the server exited before it listened")
		case <-time.After(30 * time.Second):
			stop()
			return "", nil, errors.New("the server did not say where it listens within 30s")
		}
	}
	deadline := time.Now().Add(180 * time.Second)
	for {
		resp, err := http.Get(url + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, stop, nil
			}
		}
		select {
		case <-exited:
			return "", nil, errors.New("the server exited before it answered /ok")
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("no answer on /ok within 180s")
		}
	}
}

func benchDir() (string, error) {
	for _, d := range []string{"agentserver", "."} {
		if _, err := os.Stat(filepath.Join(d, "codeact.mjs")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", errors.New("run from bench/ or bench/agentserver: codeact.mjs not found")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

func post(ctx context.Context, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return resp, nil
}

func newThread(ctx context.Context, url string) (string, error) {
	resp, err := post(ctx, url+"/threads", `{}`)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return "", err
	}
	return t.ThreadID, nil
}

const runBody = `{"assistant_id":"codeact","input":{"messages":[{"role":"user","content":"print(sum(range(10)))"}]}}`

// runOnce runs the graph to the end on thread and checks its answer.
func runOnce(ctx context.Context, url, thread string) error {
	resp, err := post(ctx, url+"/threads/"+thread+"/runs/wait", runBody)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(`Tool said:\n[sb_bench] exit code 0\n21 bytes of code`)) {
		return fmt.Errorf("unexpected answer: %.300s", b)
	}
	return nil
}

// firstEvent streams a run and returns the time until its first event
// arrived; it reads the stream to its end.
func firstEvent(ctx context.Context, url, thread string) (time.Duration, error) {
	body := strings.Replace(runBody, `"input"`, `"stream_mode":["values"],"input"`, 1)
	t0 := time.Now()
	resp, err := post(ctx, url+"/threads/"+thread+"/runs/stream", body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var took time.Duration
	for {
		line, err := r.ReadString('\n')
		if took == 0 && strings.HasPrefix(line, "data:") {
			took = time.Since(t0)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if took == 0 {
		return 0, errors.New("the stream carried no event")
	}
	return took, nil
}

func median[T float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func measure(ctx context.Context, cfg config, url string) (figures, error) {
	var f figures
	// Warm up: the JS server compiles and loads the graph on first use.
	for range 3 {
		th, err := newThread(ctx, url)
		if err != nil {
			return f, err
		}
		if err := runOnce(ctx, url, th); err != nil {
			return f, err
		}
	}
	var seq, conc []float64
	for range cfg.trials {
		th, err := newThread(ctx, url)
		if err != nil {
			return f, err
		}
		t0 := time.Now()
		for range cfg.seqRuns {
			if err := runOnce(ctx, url, th); err != nil {
				return f, err
			}
		}
		seq = append(seq, float64(cfg.seqRuns)/time.Since(t0).Seconds())
	}
	for range cfg.trials {
		ids := make([]string, cfg.threads)
		for i := range ids {
			id, err := newThread(ctx, url)
			if err != nil {
				return f, err
			}
			ids[i] = id
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(ids))
		t0 := time.Now()
		for _, id := range ids {
			wg.Go(func() {
				for range cfg.perThread {
					if err := runOnce(ctx, url, id); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		took := time.Since(t0)
		close(errs)
		if err := <-errs; err != nil {
			return f, err
		}
		conc = append(conc, float64(cfg.threads*cfg.perThread)/took.Seconds())
	}
	var first []time.Duration
	for range cfg.firstEvents {
		th, err := newThread(ctx, url)
		if err != nil {
			return f, err
		}
		d, err := firstEvent(ctx, url, th)
		if err != nil {
			return f, err
		}
		first = append(first, d)
	}
	f.Sequential, f.Concurrent, f.FirstEventMS = median(seq), median(conc), ms(median(first))
	f.SequentialTrials, f.ConcurrentTrials = seq, conc
	fmt.Fprintf(os.Stderr, "  sequential %v\n  concurrent %v\n", seq, conc)
	return f, nil
}
