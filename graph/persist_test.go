package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

var durabilities = []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}

func TestThreadContinues(t *testing.T) {
	for _, d := range durabilities {
		t.Run(d.String(), func(t *testing.T) {
			saver := checkpoint.NewMemory()
			b := newG()
			b.AddNodeFunc("echo", func(ctx context.Context, s St) (graph.Update[St], error) {
				return graph.Updates(Log.Add("echo:" + s.Log[len(s.Log)-1])), nil
			})
			b.AddEdge(graph.START, "echo")
			g := mustCompile(t, b, graph.WithSaver(saver))
			ctx := context.Background()
			if _, err := g.Invoke(ctx, graph.Updates(Log.Add("hi"))); !errors.Is(err, graph.ErrNoThread) {
				t.Fatalf("no thread: err = %v", err)
			}
			for _, msg := range []string{"one", "two"} {
				if _, err := g.Invoke(ctx, graph.Updates(Log.Add(msg)), graph.WithThread("t"), graph.WithDurability(d)); err != nil {
					t.Fatal(err)
				}
			}
			// A fresh graph over the same saver rebuilds the thread from storage.
			g2 := mustCompile(t, b, graph.WithSaver(saver))
			res, err := g2.Invoke(ctx, graph.Updates(Log.Add("three")), graph.WithThread("t"), graph.WithDurability(d))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"one", "echo:one", "two", "echo:two", "three", "echo:three"}
			if !slices.Equal(res.State.Log, want) {
				t.Fatalf("log %v, want %v", res.State.Log, want)
			}
			snap, err := g2.GetState(ctx, graph.WithThread("t"))
			if err != nil || !slices.Equal(snap.Values.Log, want) || len(snap.Next) != 0 {
				t.Fatalf("GetState: %+v %v", snap, err)
			}
		})
	}
}

func TestFailedStepKeepsSiblingWrites(t *testing.T) {
	for _, d := range durabilities {
		t.Run(d.String(), func(t *testing.T) {
			var okRuns, badRuns atomic.Int32
			var fail atomic.Bool
			fail.Store(true)
			b := newG()
			b.AddNodeFunc("good", func(ctx context.Context, s St) (graph.Update[St], error) {
				okRuns.Add(1)
				return graph.Updates(Log.Add("good"), Sum.Set(10)), nil
			})
			b.AddNodeFunc("bad", func(ctx context.Context, s St) (graph.Update[St], error) {
				badRuns.Add(1)
				if fail.Load() {
					return graph.Update[St]{}, errors.New("flaky")
				}
				return graph.Updates(Log.Add("bad"), Sum.Set(1)), nil
			})
			b.AddNode("after", logNode("after"))
			b.AddEdge(graph.START, "good").AddEdge(graph.START, "bad").AddEdge("good", "after")
			g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
			ctx := context.Background()
			opts := []graph.RunOption{graph.WithThread("x"), graph.WithDurability(d)}
			// Let good finish before bad fails, so its writes exist to save.
			b.AddNodeFunc("unused", nil)
			if _, err := g.Invoke(ctx, graph.Updates[St](), opts...); err == nil {
				t.Fatal("want the step to fail")
			}
			snap, err := g.GetState(ctx, graph.WithThread("x"))
			if err != nil {
				t.Fatal(err)
			}
			// The state shows the finished sibling's writes, and Next only
			// what is left to run.
			goodDone := snap.Tasks[1].Node == "good" && snap.Tasks[1].Done
			switch {
			case goodDone && (!slices.Equal(snap.Next, []string{"bad"}) || snap.Values.Sum != 10 || !slices.Equal(snap.Values.Log, []string{"good"})):
				t.Fatalf("next %v, values %+v", snap.Next, snap.Values)
			case !goodDone && !slices.Equal(snap.Next, []string{"bad", "good"}):
				t.Fatalf("next %v", snap.Next)
			}
			fail.Store(false)
			res, err := g.Invoke(ctx, graph.Updates[St](), opts...)
			if err != nil {
				t.Fatal(err)
			}
			goodRan := okRuns.Load()
			if res.State.Sum != 11 || !slices.Contains(res.State.Log, "after") {
				t.Fatalf("state %+v", res.State)
			}
			if badRuns.Load() != 2 {
				t.Fatalf("bad ran %d times", badRuns.Load())
			}
			// good ran once, unless the failure cancelled it first (then its
			// writes were not there to save, and it ran again on resume).
			if goodRan != 1 && !(goodRan == 2 && snap.Tasks[1].Done == false) {
				t.Fatalf("good ran %d times", goodRan)
			}
		})
	}
}

func TestSiblingNotRerunAfterFailure(t *testing.T) {
	var okRuns atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	release := make(chan struct{})
	b := newG()
	b.AddNodeFunc("good", func(ctx context.Context, s St) (graph.Update[St], error) {
		okRuns.Add(1)
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
		}()
		return graph.Updates(Sum.Set(10)), nil
	})
	b.AddNodeFunc("bad", func(ctx context.Context, s St) (graph.Update[St], error) {
		<-release // good has finished
		if fail.Load() {
			return graph.Update[St]{}, errors.New("flaky")
		}
		return graph.Updates(Sum.Set(1)), nil
	})
	b.AddEdge(graph.START, "good").AddEdge(graph.START, "bad")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	ctx := context.Background()
	if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("x")); err == nil {
		t.Fatal("want failure")
	}
	fail.Store(false)
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("x"))
	if err != nil || res.State.Sum != 11 || okRuns.Load() != 1 {
		t.Fatalf("sum=%d good ran %d times err=%v", res.State.Sum, okRuns.Load(), err)
	}
}

func TestInterruptAndResume(t *testing.T) {
	var runs atomic.Int32
	b := newG()
	b.AddNodeFunc("ask", func(ctx context.Context, s St) (graph.Update[St], error) {
		runs.Add(1)
		name, err := graph.Interrupt(ctx, "name?")
		if err != nil {
			return graph.Update[St]{}, err
		}
		age, err := graph.Interrupt(ctx, "age?")
		if err != nil {
			return graph.Update[St]{}, err
		}
		return graph.Updates(Name.Set(fmt.Sprint(name, "/", age))), nil
	})
	b.AddEdge(graph.START, "ask")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Updates(Log.Add("start")), graph.WithThread("i"))
	if err != nil || !res.Interrupted() || res.Interrupts[0].Value != "name?" || res.Interrupts[0].ID == "" {
		t.Fatalf("res %+v err %v", res, err)
	}
	first := res.Interrupts[0].ID
	snap, _ := g.GetState(ctx, graph.WithThread("i"))
	if len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != first {
		t.Fatalf("GetState interrupts %+v", snap.Interrupts)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithThread("i"), graph.WithResume("ada"))
	if err != nil || !res.Interrupted() || res.Interrupts[0].Value != "age?" {
		t.Fatalf("res %+v err %v", res, err)
	}
	// Stream the last resume: the result carries no interrupt.
	var final St
	for ev, err := range g.Stream(ctx, graph.Updates[St](), graph.WithThread("i"), graph.WithResume(36), graph.WithStreamModes(graph.ModeValues)) {
		if err != nil {
			t.Fatal(err)
		}
		final = ev.State
	}
	if final.Name != "ada/36" || runs.Load() != 3 {
		t.Fatalf("name %q runs %d", final.Name, runs.Load())
	}
	if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("i"), graph.WithResume(1)); err == nil {
		t.Fatal("resume with nothing pending must fail")
	}
}

func TestSeveralInterruptsResumeByID(t *testing.T) {
	b := newG()
	for _, n := range []string{"a", "b"} {
		b.AddNodeFunc(n, func(ctx context.Context, s St) (graph.Update[St], error) {
			v, err := graph.Interrupt(ctx, n)
			if err != nil {
				return graph.Update[St]{}, err
			}
			return graph.Updates(Log.Add(fmt.Sprint(n, "=", v))), nil
		})
		b.AddEdge(graph.START, n)
	}
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("m"))
	if err != nil || len(res.Interrupts) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("m"), graph.WithResume("x")); err == nil || !strings.Contains(err.Error(), "ResumeByID") {
		t.Fatalf("single resume with two pending: %v", err)
	}
	ans := map[string]any{}
	for _, in := range res.Interrupts {
		ans[in.ID] = "v" + in.Value.(string)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithThread("m"), graph.WithResumeByID(ans))
	if err != nil || !slices.Equal(res.State.Log, []string{"a=va", "b=vb"}) {
		t.Fatalf("%+v %v", res.State, err)
	}
}

func TestStaticBreakpoints(t *testing.T) {
	b := chain(3)
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()), graph.WithInterruptBefore("n1"), graph.WithInterruptAfter("n2"))
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("bp"))
	if err != nil || !res.Interrupted() || res.Interrupts[0].Node != "n1" || res.Interrupts[0].When != "before" {
		t.Fatalf("%+v %v", res, err)
	}
	if !slices.Equal(res.State.Log, []string{"n0"}) {
		t.Fatalf("log %v", res.State.Log)
	}
	// n2 is the last node: nothing is left to pause before, so the run ends.
	res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithThread("bp"))
	if err != nil || res.Interrupted() || !slices.Equal(res.State.Log, []string{"n0", "n1", "n2"}) {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestHistoryReplayAndFork(t *testing.T) {
	var runs atomic.Int32
	b := newG()
	b.AddNode("a", logNode("a"))
	b.AddNodeFunc("b", func(ctx context.Context, s St) (graph.Update[St], error) {
		runs.Add(1)
		return graph.Updates(Log.Add(fmt.Sprint("b", s.Count))), nil
	})
	b.AddEdge(graph.START, "a").AddEdge("a", "b")
	saver := checkpoint.NewMemory()
	g := mustCompile(t, b, graph.WithSaver(saver))
	ctx := context.Background()
	if _, err := g.Invoke(ctx, graph.Updates(Count.Set(1)), graph.WithThread("h"), graph.WithMetadata("user", "u1")); err != nil {
		t.Fatal(err)
	}
	var snaps []graph.Snapshot[St]
	for s, err := range g.GetStateHistory(ctx, graph.WithThread("h")) {
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	var sources []string
	for _, s := range snaps {
		sources = append(sources, fmt.Sprint(s.Metadata.Source, s.Metadata.Step, s.Next))
	}
	if want := []string{"loop1 []", "loop0 [b]", "input-1 [a]"}; !slices.Equal(sources, want) {
		t.Fatalf("history %v, want %v", sources, want)
	}
	if snaps[0].Metadata.Extra["user"] != "u1" {
		t.Fatalf("metadata %+v", snaps[0].Metadata)
	}
	afterA := snaps[1]
	// Replay from after a: b runs again, the old branch stays.
	res, err := g.Invoke(ctx, graph.Updates[St](), graph.WithThread("h"), graph.WithCheckpointID(afterA.Config.CheckpointID))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b1"}) || runs.Load() != 2 {
		t.Fatalf("replay %+v %v runs=%d", res.State, err, runs.Load())
	}
	// Fork: change count at that checkpoint, as node a, then continue.
	cfg, err := g.UpdateState(ctx, graph.Updates(Count.Set(9)), "a", graph.WithCheckpoint(afterA.Config))
	if err != nil {
		t.Fatal(err)
	}
	fork, _ := g.GetState(ctx, graph.WithCheckpoint(cfg))
	if fork.Metadata.Source != checkpoint.SourceUpdate || !slices.Equal(fork.Next, []string{"b"}) {
		t.Fatalf("fork snapshot %+v", fork)
	}
	res, err = g.Invoke(ctx, graph.Updates[St](), graph.WithThread("h"))
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b9"}) {
		t.Fatalf("fork run %+v %v", res.State, err)
	}
	old, err := g.GetState(ctx, graph.WithCheckpoint(snaps[0].Config))
	if err != nil || !slices.Equal(old.Values.Log, []string{"a", "b1"}) || old.Values.Count != 1 {
		t.Fatalf("old branch changed: %+v %v", old.Values, err)
	}
}

func TestOneRunPerThread(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	b := newG()
	b.AddNodeFunc("wait", func(ctx context.Context, s St) (graph.Update[St], error) {
		close(entered)
		<-release
		return graph.Update[St]{}, nil
	})
	b.AddEdge(graph.START, "wait")
	g := mustCompile(t, b, graph.WithSaver(checkpoint.NewMemory()))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := g.Invoke(context.Background(), graph.Updates[St](), graph.WithThread("busy")); err != nil {
			t.Error(err)
		}
	}()
	<-entered
	_, err := g.Invoke(context.Background(), graph.Updates[St](), graph.WithThread("busy"))
	close(release)
	wg.Wait()
	if !errors.Is(err, checkpoint.ErrThreadBusy) {
		t.Fatalf("err = %v", err)
	}
}

// measureSaver counts the bytes of checkpoints put.
type measureSaver struct {
	*checkpoint.Memory
	bytes atomic.Int64
}

func (m *measureSaver) Put(ctx context.Context, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Config, error) {
	m.bytes.Add(int64(cp.Size()))
	return m.Memory.Put(ctx, cfg, cp, md)
}

func TestCheckpointBytesGrowLinearly(t *testing.T) {
	turns := func(n int) int64 {
		s := &measureSaver{Memory: checkpoint.NewMemory()}
		b := newG()
		b.AddNode("reply", logNode(strings.Repeat("r", 200)))
		b.AddEdge(graph.START, "reply")
		g := mustCompile(t, b, graph.WithSaver(s))
		for i := 0; i < n; i++ {
			if _, err := g.Invoke(context.Background(), graph.Updates(Log.Add(strings.Repeat("u", 200))), graph.WithThread("lin")); err != nil {
				t.Fatal(err)
			}
		}
		return s.bytes.Load()
	}
	small, large := turns(100), turns(1000)
	// Whole-state checkpoints would make this about 100; linear is about 10.
	if ratio := float64(large) / float64(small); ratio > 20 {
		t.Fatalf("1000 turns wrote %d bytes, 100 turns %d: ratio %.1f, want linear (~10)", large, small, ratio)
	}
}
