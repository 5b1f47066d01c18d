package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgtest"
)

// pgServers starts n servers on one new database, each with its own pool
// and saver, serving the gated two-step graph; the test's cleanup stops
// them all.
func pgServers(t *testing.T, n int, g *gate) []*httptest.Server {
	t.Helper()
	url := pgtest.Start(t).NewDatabase(t)
	var out []*httptest.Server
	for range n {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		saver, err := pgsaver.New(ctx, pool, pgsaver.WithLeaseTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { saver.Close() })
		_, ts := startServer(t, g, WithGraph("steps", twoStepGraph(t, saver, g)), WithSaver(saver), WithWorkers(4),
			WithPostgres(pool, PostgresConfig{RunTimeout: 20 * time.Second, RescueMargin: 3 * time.Second}))
		out = append(out, ts)
	}
	return out
}

// TestPostgresRunsAcrossServers creates runs on one server and streams,
// joins, reads and cancels them from another.
func TestPostgresRunsAcrossServers(t *testing.T) {
	g := newGate()
	ts := pgServers(t, 2, g)
	a, b := ts[0], ts[1]
	if code, _, _ := call(t, a, "POST", "/threads", `{"thread_id":"x1"}`); code != 200 {
		t.Fatalf("create thread: %d", code)
	}
	if got := threadStatus(t, b, "x1"); got != "idle" {
		t.Fatalf("thread seen from the other server: %q", got)
	}
	run := startRun(t, a, "x1", "hello", "")
	entered(t, g, "hello")
	// The other server streams the run from its start, while it runs.
	req, _ := http.NewRequest("GET", b.URL+"/threads/x1/runs/"+run+"/stream", nil)
	resp, err := b.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- ev
			}
		}
	}()
	if ev := <-events; ev != "metadata" {
		t.Fatalf("first event %q, want metadata", ev)
	}
	close(g.release)
	var seen []string
	for ev := range events {
		seen = append(seen, ev)
	}
	if len(seen) < 2 || seen[len(seen)-1] != "values" {
		t.Fatalf("streamed events after metadata: %q", seen)
	}
	if rec := waitRun(t, b, "x1", run); rec["status"] != "success" {
		t.Fatalf("run seen from the other server: %v", rec["status"])
	}
	if got := contents(t, b, "x1"); !same(got, []string{"human: hello", "ai: first: hello", "ai: second: hello"}) {
		t.Fatalf("messages: %q", got)
	}
	if got := threadStatus(t, a, "x1"); got != "idle" {
		t.Fatalf("thread after its run: %q", got)
	}

	// Cancelled from the server that did not create it.
	g.release = make(chan struct{})
	slow := startRun(t, a, "x1", "slow", "")
	entered(t, g, "slow")
	if code, body, _ := call(t, b, "POST", "/threads/x1/runs/"+slow+"/cancel?wait=true", ""); code != 204 {
		t.Fatalf("cancel and wait: %d %q", code, body)
	}
	if rec := waitRun(t, a, "x1", slow); rec["status"] != "interrupted" {
		t.Fatalf("cancelled run: %v", rec["status"])
	}
	if n := g.second.Load(); n != 1 {
		t.Fatalf("second node ran %d times, want 1 (the cancelled run went on)", n)
	}
	// A stream joined after the end replays the run's events and ends.
	code, body, _ := call(t, a, "GET", "/threads/x1/runs/"+run+"/stream", "")
	if code != 200 || !strings.HasPrefix(body, "event: metadata") || !strings.Contains(body, "event: values") {
		t.Fatalf("late join: %d %q", code, body)
	}
}

// TestPostgresMultitaskAcrossServers holds every strategy when the second
// run comes to another server than the first.
func TestPostgresMultitaskAcrossServers(t *testing.T) {
	for _, c := range []struct {
		strategy    string
		firstStatus string
		createCode  int
		messages    []string
	}{
		{"reject", "success", 422, []string{"human: one", "ai: first: one", "ai: second: one"}},
		{"interrupt", "interrupted", 200, []string{"human: one", "human: two", "ai: first: two", "ai: second: two"}},
		{"rollback", "deleted", 200, []string{"human: two", "ai: first: two", "ai: second: two"}},
		{"enqueue", "success", 200, []string{"human: one", "ai: first: one", "ai: second: one", "human: two", "ai: first: two", "ai: second: two"}},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			g := newGate()
			ts := pgServers(t, 2, g)
			a, b := ts[0], ts[1]
			call(t, a, "POST", "/threads", `{"thread_id":"m"}`)
			first := startRun(t, a, "m", "one", "")
			entered(t, g, "one")
			body := `{"assistant_id":"steps","input":{"messages":[{"type":"human","content":"two"}]},"multitask_strategy":"` + c.strategy + `"}`
			code, v := callJSON(t, b, "POST", "/threads/m/runs", body)
			if code != c.createCode {
				t.Fatalf("second run: %d %v, want %d", code, v, c.createCode)
			}
			var second string
			if code == 200 {
				second = obj(t, v)["run_id"].(string)
			}
			if c.strategy == "enqueue" {
				if code, v := callJSON(t, a, "GET", "/threads/m/runs/"+second, ""); code != 200 || obj(t, v)["status"] != "pending" {
					t.Fatalf("queued run: %d %v", code, v)
				}
			}
			close(g.release)
			if c.firstStatus == "deleted" {
				waitRun(t, b, "m", second)
				if code, _ := callJSON(t, a, "GET", "/threads/m/runs/"+first, ""); code != 404 {
					t.Fatalf("rolled-back run: %d, want 404", code)
				}
			} else if rec := waitRun(t, b, "m", first); rec["status"] != c.firstStatus {
				t.Fatalf("first run: %v, want %s", rec["status"], c.firstStatus)
			}
			if second != "" {
				if rec := waitRun(t, a, "m", second); rec["status"] != "success" {
					t.Fatalf("second run: %v", rec["status"])
				}
			}
			if got := contents(t, a, "m"); !same(got, c.messages) {
				t.Fatalf("messages %q\nwant %q", got, c.messages)
			}
			if got := threadStatus(t, b, "m"); got != "idle" {
				t.Fatalf("thread at the end: %q", got)
			}
		})
	}
}
