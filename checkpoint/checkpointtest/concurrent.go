package checkpointtest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

const (
	writers    = 8  // goroutines writing at once
	perWriter  = 25 // checkpoints each writes
	readerRuns = 4  // goroutines reading while others write
)

// putChain puts n checkpoints in a row on cfg, each carrying its step in the
// value "step" and the metadata, and a pending write per checkpoint. It
// returns the configs in order.
func putChain(s checkpoint.Saver, cfg checkpoint.Config, n int, tag string) ([]checkpoint.Config, error) {
	var out []checkpoint.Config
	for i := range n {
		cp := newCP("step", strconv.Itoa(i), "tag", tag)
		got, err := s.Put(ctx, cfg, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i, Extra: map[string]string{"tag": tag}})
		if err != nil {
			return out, fmt.Errorf("%s: Put %d: %w", tag, i, err)
		}
		if err := s.PutWrites(ctx, got, "task-"+tag, []checkpoint.PendingWrite{pw(0, "ch", tag+"/"+strconv.Itoa(i))}); err != nil {
			return out, fmt.Errorf("%s: PutWrites %d: %w", tag, i, err)
		}
		out = append(out, got)
		cfg = got
	}
	return out, nil
}

// checkChain verifies that every checkpoint of a chain putChain wrote is
// stored intact.
func checkChain(t *testing.T, s checkpoint.Saver, cfgs []checkpoint.Config, tag string) {
	t.Helper()
	for i, cfg := range cfgs {
		tp := mustGet(t, s, cfg)
		if string(tp.Checkpoint.Values["step"]) != strconv.Itoa(i) || string(tp.Checkpoint.Values["tag"]) != tag || tp.Metadata.Step != i {
			t.Fatalf("%s checkpoint %d: values %q step %d", tag, i, tp.Checkpoint.Values, tp.Metadata.Step)
		}
		if i > 0 && (tp.ParentConfig == nil || *tp.ParentConfig != cfgs[i-1]) {
			t.Fatalf("%s checkpoint %d: parent %+v, want %+v", tag, i, tp.ParentConfig, cfgs[i-1])
		}
		want := fmt.Sprintf("task-%s/0/ch=%s/%d", tag, tag, i)
		if got := writeKeys(tp.PendingWrites); !slices.Equal(got, []string{want}) {
			t.Fatalf("%s checkpoint %d: writes %q, want %q", tag, i, got, want)
		}
	}
}

var concurrentTests = []test{
	{"ManyThreads", func(t *testing.T, s checkpoint.Saver) {
		chains := make([][]checkpoint.Config, writers)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				cfg := checkpoint.Config{ThreadID: "thread-" + strconv.Itoa(g)}
				if g%2 == 1 {
					cfg.Namespace = "sub:" + strconv.Itoa(g)
				}
				var err error
				if chains[g], err = putChain(s, cfg, perWriter, strconv.Itoa(g)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for g, cfgs := range chains {
			checkChain(t, s, cfgs, strconv.Itoa(g))
			latestCfg := cfgs[0]
			latestCfg.CheckpointID = ""
			if tp := mustGet(t, s, latestCfg); tp.Config != cfgs[len(cfgs)-1] {
				t.Fatalf("thread %d latest %+v, want %+v", g, tp.Config, cfgs[len(cfgs)-1])
			}
			if _, ok := s.(checkpoint.Lister); ok {
				if got, want := ids(list(t, s, latestCfg, checkpoint.ListOptions{})), reversed(cfgIDs(cfgs)); !slices.Equal(got, want) {
					t.Fatalf("thread %d lists %q, want %q", g, got, want)
				}
			}
		}
	}},
	{"OneThread", func(t *testing.T, s checkpoint.Saver) {
		// Several writers, each with its own chain, share one thread and
		// namespace: every checkpoint is kept and the thread orders them
		// by id.
		chains := make([][]checkpoint.Config, writers)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				var err error
				if chains[g], err = putChain(s, thread("shared"), perWriter, strconv.Itoa(g)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var all []string
		for g, cfgs := range chains {
			checkChain(t, s, cfgs, strconv.Itoa(g))
			all = append(all, cfgIDs(cfgs)...)
		}
		slices.Sort(all)
		if tp := mustGet(t, s, thread("shared")); tp.Checkpoint.ID != all[len(all)-1] {
			t.Fatalf("latest %q, want the greatest id %q", tp.Checkpoint.ID, all[len(all)-1])
		}
		if _, ok := s.(checkpoint.Lister); ok {
			got := list(t, s, thread("shared"), checkpoint.ListOptions{})
			if want := reversed(all); !slices.Equal(ids(got), want) {
				t.Fatalf("List of %d checkpoints put concurrently returned %d, or out of order", len(want), len(got))
			}
			for g := range writers {
				tag := strconv.Itoa(g)
				mine := list(t, s, thread("shared"), checkpoint.ListOptions{Filter: map[string]string{"tag": tag}})
				if want := reversed(cfgIDs(chains[g])); !slices.Equal(ids(mine), want) {
					t.Fatalf("writer %d's checkpoints list as %q, want %q", g, ids(mine), want)
				}
			}
		}
	}},
	{"WritesToOneCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				task := fmt.Sprintf("task-%02d", g)
				for i := range perWriter {
					// Each write is sent twice, as a retry would.
					ws := []checkpoint.PendingWrite{pw(i, "ch", strconv.Itoa(i)), pw(i, "ch", "dup")}
					if err := s.PutWrites(ctx, cfg, task, ws); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		var want []string
		for g := range writers {
			for i := range perWriter {
				want = append(want, fmt.Sprintf("task-%02d/%d/ch=%d", g, i, i))
			}
		}
		wantWrites(t, s, cfg, want...)
	}},
	{"ReadersDuringWrites", func(t *testing.T, s checkpoint.Saver) {
		const steps = 4 * perWriter
		first := chain(t, s, thread("t1"), 1)
		var wg sync.WaitGroup
		done := make(chan struct{})
		var cfgs []checkpoint.Config
		wg.Go(func() {
			defer close(done)
			var err error
			if cfgs, err = putChain(s, first[0], steps, "w"); err != nil {
				t.Error(err)
			}
		})
		for r := range readerRuns {
			wg.Go(func() {
				last := ""
				for {
					select {
					case <-done:
						return
					default:
					}
					tp, err := s.Get(ctx, thread("t1"))
					if err != nil {
						t.Errorf("reader %d: Get latest: %v", r, err)
						return
					}
					if tp.Checkpoint.ID < last {
						t.Errorf("reader %d: latest went back from %q to %q", r, last, tp.Checkpoint.ID)
						return
					}
					last = tp.Checkpoint.ID
					if tp.Checkpoint.ID != first[0].CheckpointID && string(tp.Checkpoint.Values["step"]) != strconv.Itoa(tp.Metadata.Step) {
						t.Errorf("reader %d: torn read: values %q with step %d", r, tp.Checkpoint.Values, tp.Metadata.Step)
						return
					}
					if l, ok := s.(checkpoint.Lister); ok && r%2 == 1 {
						prev := ""
						for tp, err := range l.List(ctx, thread("t1"), checkpoint.ListOptions{Limit: 10}) {
							if err != nil {
								t.Errorf("reader %d: List: %v", r, err)
								return
							}
							if prev != "" && tp.Checkpoint.ID >= prev {
								t.Errorf("reader %d: List out of order: %q after %q", r, tp.Checkpoint.ID, prev)
								return
							}
							prev = tp.Checkpoint.ID
						}
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		checkChain(t, s, cfgs, "w")
	}},
	{"DeleteDuringWrites", func(t *testing.T, s checkpoint.Saver) {
		d := deleter(t, s)
		victims := chain(t, s, thread("victim"), 3)
		var wg sync.WaitGroup
		chains := make([][]checkpoint.Config, writers)
		for g := range writers {
			wg.Go(func() {
				var err error
				if chains[g], err = putChain(s, thread("keep-"+strconv.Itoa(g)), perWriter/5+1, strconv.Itoa(g)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Go(func() {
			if err := d.DeleteThread(ctx, "victim"); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if t.Failed() {
			return
		}
		wantNotFound(t, s, victims[0])
		for g, cfgs := range chains {
			checkChain(t, s, cfgs, strconv.Itoa(g))
		}
	}},
}
