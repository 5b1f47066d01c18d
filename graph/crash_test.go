package graph_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
)

const crashChildEnv = "AGENTGRAPH_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		db, log, _ := strings.Cut(spec, ",")
		if err := crashChild(db, log); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashGraph is a chain of 30 nodes with a fan-out of 5 parallel nodes and a
// join in the middle. Each node records that it ran, and under which task,
// in an append-only log, then dawdles so that kills land mid-step.
func crashGraph(record func(node, task string) error) *graph.StateGraph[St] {
	b := newG()
	node := func(name string) graph.NodeFunc[St] {
		return func(ctx context.Context, s St) (graph.Update[St], error) {
			cfg, _ := graph.ConfigFrom(ctx)
			if err := record(name, cfg.TaskID); err != nil {
				return graph.Update[St]{}, err
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			return graph.Updates(Log.Add(name), Sum.Set(len(name))), nil
		}
	}
	prev := graph.START
	for i := range 30 {
		name := fmt.Sprint("n", i)
		b.AddNode(name, node(name))
		if i == 16 {
			var par []string
			for j := range 5 {
				p := fmt.Sprint("p", j)
				par = append(par, p)
				b.AddNode(p, node(p)).AddEdge("n15", p)
			}
			b.AddWaitingEdge(par, name)
		} else {
			b.AddEdge(prev, name)
		}
		prev = name
	}
	return b
}

func crashChild(dbPath, logPath string) error {
	saver, err := bolt.Open(dbPath, bolt.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer saver.Close()
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	g, err := crashGraph(func(node, task string) error {
		if _, err := fmt.Fprintf(logf, "%s %s\n", node, task); err != nil {
			return err
		}
		return logf.Sync()
	}).Compile(graph.WithSaver(saver))
	if err != nil {
		return err
	}
	ctx := context.Background()
	input := graph.Updates(Log.Add("start"))
	if _, err := g.GetState(ctx, graph.WithThread("crash")); err == nil {
		input = graph.Updates[St]() // continue the thread where it stopped
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	_, err = g.Invoke(ctx, input, graph.WithThread("crash"), graph.WithDurability(graph.DurabilitySync))
	return err
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for a few seconds")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbPath, logPath := filepath.Join(dir, "crash.db"), filepath.Join(dir, "runs.log")
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 300 {
			t.Fatal("the child never finished")
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dbPath+","+logPath)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Kill at a random point for a while; then let a run finish.
		var wait <-chan time.Time
		if kills < 25 {
			wait = time.After(time.Duration(5+rand.IntN(60)) * time.Millisecond)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, stderr.String())
			}
		case <-wait:
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			continue
		}
		break
	}

	// The final state equals an uninterrupted run's.
	ref, err := crashGraph(func(string, string) error { return nil }).Compile()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Invoke(context.Background(), graph.Updates(Log.Add("start")))
	if err != nil {
		t.Fatal(err)
	}
	saver, err := bolt.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	g, err := crashGraph(func(string, string) error { return nil }).Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(context.Background(), graph.WithThread("crash"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snap.Values.Log, want.State.Log) || snap.Values.Sum != want.State.Sum || len(snap.Next) != 0 {
		t.Fatalf("after %d kills the state is\n%v (sum %d, next %v)\nwant\n%v (sum %d)", kills, snap.Values.Log, snap.Values.Sum, snap.Next, want.State.Log, want.State.Sum)
	}

	// No completed task ran twice: a node that ran more than once always ran
	// under the same task id, i.e. its step had not been committed when the
	// process died, and the resumed run re-planned nothing it had finished.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tasks := map[string]map[string]bool{}
	runs := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		node, task, _ := strings.Cut(sc.Text(), " ")
		if tasks[node] == nil {
			tasks[node] = map[string]bool{}
		}
		tasks[node][task] = true
		runs++
	}
	for node, ids := range tasks {
		if len(ids) > 1 {
			t.Errorf("node %s ran under %d different tasks: a completed task ran again", node, len(ids))
		}
	}
	if len(tasks) != 35 {
		t.Errorf("%d nodes ran, want 35", len(tasks))
	}
	t.Logf("%d kills, %d node runs for 35 nodes", kills, runs)
}
