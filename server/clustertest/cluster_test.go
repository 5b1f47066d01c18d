// Package clustertest runs several Agent Server processes on one
// PostgreSQL database and kills one of them in the middle of its runs.
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/pgtest"
	"github.com/agentgraph/agentgraph/server"
)

// Set in a child process: the database to serve from, and how long each
// node naps (a duration; default 40ms).
const (
	envServe = "AGENTGRAPH_CLUSTERTEST_SERVE"
	envNap   = "AGENTGRAPH_CLUSTERTEST_NAP"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envServe); url != "" {
		if err := serve(url); err != nil {
			fmt.Fprintln(os.Stderr, "clustertest server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Trace is the state of the test graph: the input of the thread's latest
// run, and a line for every input and node run, in order.
type Trace struct {
	Current string
	Log     []string
}

var (
	current = graph.Field("current", func(s *Trace) *string { return &s.Current }, graph.LastValue[string]())
	logKey  = graph.SliceField("log", func(s *Trace) *[]string { return &s.Log }, graph.Append[string]())
)

// Each run goes a, then b1 and b2 side by side, then c.
var nodes = []string{"a", "b1", "b2", "c"}

// recordingGraph's nodes each take a moment, then record that they ran
// in node_effects, once per thread, run input and node (a unique key); a
// node that finds its row already there records the repeat in
// node_repeats.
func recordingGraph(pool *pgxpool.Pool, saver *postgres.Saver, nap time.Duration) (*graph.Graph[Trace], error) {
	b := graph.New(current, logKey)
	for _, name := range nodes {
		b.AddNodeFunc(name, func(ctx context.Context, s Trace) (graph.Update[Trace], error) {
			select {
			case <-time.After(nap):
			case <-ctx.Done():
				return graph.Update[Trace]{}, ctx.Err()
			}
			thread := graph.ThreadIDFrom(ctx)
			tag, err := pool.Exec(ctx, `INSERT INTO node_effects (thread_id, input, node, pid) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
				thread, s.Current, name, os.Getpid())
			if err != nil {
				return graph.Update[Trace]{}, err
			}
			if tag.RowsAffected() == 0 {
				if _, err := pool.Exec(ctx, `INSERT INTO node_repeats (thread_id, input, node, pid) VALUES ($1, $2, $3, $4)`,
					thread, s.Current, name, os.Getpid()); err != nil {
					return graph.Update[Trace]{}, err
				}
			}
			return graph.Updates(logKey.Add(name + ":" + s.Current)), nil
		})
	}
	b.AddEdge(graph.START, "a")
	b.AddEdge("a", "b1")
	b.AddEdge("a", "b2")
	b.AddEdge("b1", "c")
	b.AddEdge("b2", "c")
	b.AddEdge("c", graph.END)
	return b.Compile(graph.WithSaver(saver))
}

// serve is a child process: an Agent Server of the recording graph on the
// database at url, on a loopback port it prints, until SIGTERM.
func serve(url string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	saver, err := postgres.New(ctx, pool, postgres.WithLeaseTTL(2*time.Second))
	if err != nil {
		return err
	}
	defer saver.Close()
	nap := 40 * time.Millisecond
	if v := os.Getenv(envNap); v != "" {
		if nap, err = time.ParseDuration(v); err != nil {
			return err
		}
	}
	g, err := recordingGraph(pool, saver, nap)
	if err != nil {
		return err
	}
	srv, err := server.New(server.WithGraph("trace", g), server.WithSaver(saver), server.WithWorkers(4),
		server.WithPostgres(pool, server.PostgresConfig{RunTimeout: 4 * time.Second, RescueMargin: 3 * time.Second}))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Shutdown(ctx)
		return err
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), hs.Shutdown(sctx))
}

// proc is a server process started by the test.
type proc struct {
	cmd  *exec.Cmd
	url  string
	pid  int
	done chan struct{} // closed once the process has exited and been waited for
}

func startProc(t *testing.T, url string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envServe+"="+url), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addr <- a
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait() // the victim's is "signal: killed"
		close(p.done)
	}()
	t.Cleanup(func() {
		// Whatever the test did, the process ends and is waited for.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("server %d stderr:\n%s", p.pid, tailOf(stderr.String(), 4000))
		}
	})
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("server process did not start: %s", stderr.String())
	}
	return p
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v %v", url, resp.StatusCode, v, err)
	}
	return v
}

// TestKillOneOfThree runs 200 runs over 50 threads on three servers and
// kills one with SIGKILL while it runs some: every run ends once, in
// success, every thread holds every run's trace in order, every node's
// side effect happened once, and no lease or job is left.
func TestKillOneOfThree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	url := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`CREATE TABLE node_effects (thread_id text, input text, node text, pid int, UNIQUE (thread_id, input, node))`,
		`CREATE TABLE node_repeats (thread_id text, input text, node text, pid int)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var procs []*proc
	for range 3 {
		procs = append(procs, startProc(t, url))
	}
	victim := procs[0]

	const threads, perThread = 50, 4
	start := time.Now()
	for i := range threads {
		p := procs[i%3]
		post(t, p.url+"/threads", fmt.Sprintf(`{"thread_id":"t%02d"}`, i))
	}
	// Runs go to the three servers in turn; each thread's queue in order.
	runs := map[string]string{} // run id: thread id
	for k := range perThread {
		for i := range threads {
			p := procs[(i+k)%3]
			body := fmt.Sprintf(`{"assistant_id":"trace","input":{"current":"%d","log":["in:%d"]},"multitask_strategy":"enqueue"}`, k, k)
			rec := post(t, fmt.Sprintf("%s/threads/t%02d/runs", p.url, i), body)
			runs[rec["run_id"].(string)] = fmt.Sprintf("t%02d", i)
		}
	}
	// Kill the victim once it has started nodes, so that it dies holding
	// runs in flight.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM node_effects WHERE pid = $1`, victim.pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim ran no nodes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killedAt := time.Since(start)

	// Wait for every run to end.
	deadline = time.Now().Add(100 * time.Second)
	for {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentgraph_server_runs WHERE status IN ('pending', 'running')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still open %s after the kill", open, time.Since(start)-killedAt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("200 runs, victim killed after %s, all ended after %s", killedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Every run ended in success, and its stream ended exactly once.
	var total, success, ends, retried int
	err = pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'success'), count(*) FILTER (WHERE attempt > 1),
		(SELECT count(*) FROM agentgraph_server_run_events WHERE event = '')
		FROM agentgraph_server_runs`).Scan(&total, &success, &retried, &ends)
	if err != nil {
		t.Fatal(err)
	}
	if total != threads*perThread || success != total || ends != total {
		rows, _ := pool.Query(ctx, `SELECT run_id, status, attempt, coalesce(result::text, '') FROM agentgraph_server_runs WHERE status <> 'success'`)
		for rows.Next() {
			var id, status, result string
			var attempt int
			if rows.Scan(&id, &status, &attempt, &result) == nil {
				t.Logf("run %s: %s after %d attempts: %s", id, status, attempt, result)
			}
		}
		rows.Close()
		t.Fatalf("runs %d, succeeded %d, streams ended %d; want %d of each", total, success, ends, threads*perThread)
	}
	if retried == 0 {
		t.Fatal("no run was taken up again after the kill: the victim held none")
	}
	for run, thread := range runs {
		resp, err := http.Get(fmt.Sprintf("%s/threads/%s/runs/%s", procs[2].url, thread, run))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ Status string }
		err = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if err != nil || rec.Status != "success" {
			t.Fatalf("run %s of %s seen from a survivor: %q %v", run, thread, rec.Status, err)
		}
	}
	var endedTwice int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT run_id FROM agentgraph_server_run_events WHERE event = '' GROUP BY run_id HAVING count(*) > 1) x`).Scan(&endedTwice); err != nil {
		t.Fatal(err)
	}
	if endedTwice != 0 {
		t.Fatalf("%d runs ended twice", endedTwice)
	}

	// Every thread holds its four runs' traces, in order, read from a
	// survivor.
	for i := range threads {
		resp, err := http.Get(fmt.Sprintf("%s/threads/t%02d/state", procs[1+i%2].url, i))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Values struct {
				Log []string `json:"log"`
			} `json:"values"`
			Next []string `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for k := range perThread {
			want = append(want, fmt.Sprintf("in:%d", k), fmt.Sprintf("a:%d", k), fmt.Sprintf("b1:%d", k), fmt.Sprintf("b2:%d", k), fmt.Sprintf("c:%d", k))
		}
		got := slices.Clone(st.Values.Log)
		// b1 and b2 run side by side; their order in a step is the graph's.
		for j := 0; j+1 < len(got); j++ {
			if strings.HasPrefix(got[j], "b2:") && strings.HasPrefix(got[j+1], "b1:") {
				got[j], got[j+1] = got[j+1], got[j]
			}
		}
		if !slices.Equal(got, want) || len(st.Next) != 0 {
			t.Fatalf("thread t%02d: log %q next %q\nwant %q", i, st.Values.Log, st.Next, want)
		}
	}

	// Every node's side effect happened exactly once; a node began again
	// only in a run the kill cut short, and only if its write was not saved.
	var effects int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM node_effects`).Scan(&effects); err != nil {
		t.Fatal(err)
	}
	if effects != threads*perThread*len(nodes) {
		t.Fatalf("%d node side effects, want %d", effects, threads*perThread*len(nodes))
	}
	var repeats, badRepeats int
	err = pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE e.pid <> $1)
		FROM node_repeats r JOIN node_effects e USING (thread_id, input, node)`, victim.pid).Scan(&repeats, &badRepeats)
	if err != nil {
		t.Fatal(err)
	}
	if badRepeats != 0 {
		t.Fatalf("%d nodes ran again that a live server had finished", badRepeats)
	}
	t.Logf("%d runs taken up again after the kill; %d nodes whose side effect the victim had made but whose write it had not saved ran again", retried, repeats)

	// No lease and no job left behind. River marks a job completed a
	// moment after its run has ended.
	var leases int
	var jobs []string
	deadline = time.Now().Add(10 * time.Second)
	for {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentgraph_thread_leases`).Scan(&leases); err != nil {
			t.Fatal(err)
		}
		rows, err := pool.Query(ctx, `SELECT state::text || ' ' || attempt FROM river_job WHERE kind = 'agentgraph_run' AND state <> 'completed'`)
		if err != nil {
			t.Fatal(err)
		}
		if jobs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if leases == 0 && len(jobs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %d thread leases, unfinished run jobs (state, attempt): %q", leases, jobs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunsPerSecond measures runs a second with 1, 2 and 4 server
// processes on one database, nodes not napping: 400 runs over 100 threads,
// created on the servers in turn, timed until the last ends. Set
// AGENTGRAPH_CLUSTERTEST_FIGURES=1 to run it.
func TestRunsPerSecond(t *testing.T) {
	if os.Getenv("AGENTGRAPH_CLUSTERTEST_FIGURES") == "" {
		t.Skip("a measurement: set AGENTGRAPH_CLUSTERTEST_FIGURES=1")
	}
	srv := pgtest.Start(t)
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			url := srv.NewDatabase(t)
			ctx := context.Background()
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			for _, q := range []string{
				`CREATE TABLE node_effects (thread_id text, input text, node text, pid int, UNIQUE (thread_id, input, node))`,
				`CREATE TABLE node_repeats (thread_id text, input text, node text, pid int)`,
			} {
				if _, err := pool.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			var procs []*proc
			for range n {
				procs = append(procs, startProc(t, url, envNap+"=0s"))
			}
			const threads, perThread = 100, 4
			for i := range threads {
				post(t, procs[i%n].url+"/threads", fmt.Sprintf(`{"thread_id":"t%02d"}`, i))
			}
			start := time.Now()
			for k := range perThread {
				for i := range threads {
					body := fmt.Sprintf(`{"assistant_id":"trace","input":{"current":"%d","log":["in:%d"]},"multitask_strategy":"enqueue"}`, k, k)
					post(t, fmt.Sprintf("%s/threads/t%02d/runs", procs[(i+k)%n].url, i), body)
				}
			}
			for {
				var open int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM agentgraph_server_runs WHERE status IN ('pending', 'running')`).Scan(&open); err != nil {
					t.Fatal(err)
				}
				if open == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			d := time.Since(start)
			t.Logf("%d server processes: %d runs in %s, %.0f runs/s", n, threads*perThread, d.Round(time.Millisecond), float64(threads*perThread)/d.Seconds())
		})
	}
}
