package checkpointtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var listTests = []test{
	{"NewestFirst", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 6)
		got := list(t, s, thread("t1"), checkpoint.ListOptions{})
		if want := reversed(cfgIDs(cfgs)); !slices.Equal(ids(got), want) {
			t.Fatalf("List ids %q, want newest first %q", ids(got), want)
		}
		for i, tp := range got {
			step := len(cfgs) - 1 - i
			if tp.Metadata.Step != step || tp.Config != cfgs[step] {
				t.Fatalf("item %d: step %d config %+v, want step %d config %+v", i, tp.Metadata.Step, tp.Config, step, cfgs[step])
			}
			if step > 0 && (tp.ParentConfig == nil || *tp.ParentConfig != cfgs[step-1]) {
				t.Fatalf("item %d: ParentConfig %+v, want %+v", i, tp.ParentConfig, cfgs[step-1])
			}
		}
	}},
	{"FullTuples", func(t *testing.T, s checkpoint.Saver) {
		cp, md := richCP(), richMD()
		cfg := mustPut(t, s, thread("t1"), cp, md)
		mustWrite(t, s, cfg, "task", pw(0, "ch", "v"))
		got := list(t, s, thread("t1"), checkpoint.ListOptions{})
		if len(got) != 1 {
			t.Fatalf("List returned %d tuples, want 1", len(got))
		}
		if d := diffCheckpoint(got[0].Checkpoint, cp); d != "" {
			t.Fatal(d)
		}
		if d := diffMetadata(got[0].Metadata, md); d != "" {
			t.Fatal(d)
		}
		if w := writeKeys(got[0].PendingWrites); !slices.Equal(w, []string{"task/0/ch=v"}) {
			t.Fatalf("listed pending writes %q", w)
		}
	}},
	{"EmptyThread", func(t *testing.T, s checkpoint.Saver) {
		chain(t, s, thread("t1"), 2)
		if got := list(t, s, thread("nobody"), checkpoint.ListOptions{}); len(got) != 0 {
			t.Fatalf("List of a thread with no checkpoints returned %q", ids(got))
		}
	}},
	{"Namespace", func(t *testing.T, s checkpoint.Saver) {
		root := chain(t, s, thread("t1"), 2)
		child := chain(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"}, 3)
		chain(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:2"}, 1)
		if got := ids(list(t, s, thread("t1"), checkpoint.ListOptions{})); !slices.Equal(got, reversed(cfgIDs(root))) {
			t.Fatalf("root namespace lists %q, want %q", got, reversed(cfgIDs(root)))
		}
		got := list(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"}, checkpoint.ListOptions{})
		if !slices.Equal(ids(got), reversed(cfgIDs(child))) {
			t.Fatalf("child:1 lists %q, want %q", ids(got), reversed(cfgIDs(child)))
		}
		for _, tp := range got {
			if tp.Config.Namespace != "child:1" {
				t.Fatalf("listed config %+v is not in child:1", tp.Config)
			}
		}
	}},
	{"Filter", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 5) // sources input, loop, input, loop, input
		upd := mustPut(t, s, cfgs[4], newCP(), checkpoint.Metadata{Source: checkpoint.SourceUpdate, Step: 5, RunID: "r-2", Extra: map[string]string{"user": "bob"}})
		mustPut(t, s, thread("t2"), newCP(), checkpoint.Metadata{Source: checkpoint.SourceInput, Step: 0})
		at := func(i ...int) []string {
			var out []string
			for _, j := range i {
				out = append(out, cfgs[j].CheckpointID)
			}
			return out
		}
		for _, tc := range []struct {
			name   string
			filter map[string]string
			want   []string
		}{
			{"source", map[string]string{"source": "input"}, at(4, 2, 0)},
			{"step", map[string]string{"step": "1"}, at(1)},
			{"negative step", map[string]string{"step": "-1"}, nil},
			{"two keys", map[string]string{"source": "loop", "step": "3"}, at(3)},
			{"two keys, no match", map[string]string{"source": "input", "step": "3"}, nil},
			{"extra", map[string]string{"i": "2"}, at(2)},
			{"run id and extra", map[string]string{"run_id": "r-2", "user": "bob"}, []string{upd.CheckpointID}},
			{"missing key", map[string]string{"nope": ""}, nil},
			{"empty", map[string]string{}, append([]string{upd.CheckpointID}, reversed(cfgIDs(cfgs))...)},
		} {
			got := ids(list(t, s, thread("t1"), checkpoint.ListOptions{Filter: tc.filter}))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("%s: filter %v lists %q, want %q", tc.name, tc.filter, got, tc.want)
			}
		}
	}},
	{"BeforeAndLimit", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 6)
		all := cfgIDs(cfgs)
		for _, tc := range []struct {
			name string
			opts checkpoint.ListOptions
			want []string
		}{
			{"limit 1", checkpoint.ListOptions{Limit: 1}, all[5:]},
			{"limit 2", checkpoint.ListOptions{Limit: 2}, reversed(all[4:])},
			{"limit above count", checkpoint.ListOptions{Limit: 100}, reversed(all)},
			{"negative limit", checkpoint.ListOptions{Limit: -1}, reversed(all)},
			{"before", checkpoint.ListOptions{Before: all[3]}, reversed(all[:3])},
			{"before the first", checkpoint.ListOptions{Before: all[0]}, nil},
			{"before and limit", checkpoint.ListOptions{Before: all[4], Limit: 2}, reversed(all[2:4])},
			{"before an id not stored", checkpoint.ListOptions{Before: all[2] + "0"}, reversed(all[:3])},
			{"before, filter, limit", checkpoint.ListOptions{Before: all[5], Limit: 1, Filter: map[string]string{"source": "loop"}}, all[3:4]},
		} {
			got := ids(list(t, s, thread("t1"), tc.opts))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("%s: List(%+v) = %q, want %q", tc.name, tc.opts, got, tc.want)
			}
		}
	}},
	{"OneCheckpointID", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 4)
		got := ids(list(t, s, cfgs[1], checkpoint.ListOptions{}))
		if !slices.Equal(got, []string{cfgs[1].CheckpointID}) {
			t.Fatalf("List with CheckpointID %q = %q, want just that checkpoint", cfgs[1].CheckpointID, got)
		}
		if got := list(t, s, cfgs[1], checkpoint.ListOptions{Before: cfgs[1].CheckpointID}); len(got) != 0 {
			t.Fatalf("List with CheckpointID and Before that excludes it = %q, want nothing", ids(got))
		}
	}},
	{"StopEarly", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 5)
		var got []string
		for tp, err := range lister(t, s).List(ctx, thread("t1"), checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tp.Checkpoint.ID)
			if len(got) == 2 {
				break
			}
		}
		if want := reversed(cfgIDs(cfgs))[:2]; !slices.Equal(got, want) {
			t.Fatalf("first two of List = %q, want %q", got, want)
		}
	}},
	{"SeesPutsWhileIterating", func(t *testing.T, s checkpoint.Saver) {
		// A Put during iteration must neither deadlock nor corrupt the walk.
		cfgs := chain(t, s, thread("t1"), 4)
		var got []string
		for tp, err := range lister(t, s).List(ctx, thread("t1"), checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tp.Checkpoint.ID)
			mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		}
		if want := reversed(cfgIDs(cfgs)); !slices.Equal(got, want) {
			t.Fatalf("List while putting newer checkpoints = %q, want %q", got, want)
		}
	}},
	{"Errors", func(t *testing.T, s checkpoint.Saver) {
		chain(t, s, thread("t1"), 2)
		l := lister(t, s)
		var err error
		for _, e := range l.List(ctx, checkpoint.Config{}, checkpoint.ListOptions{}) {
			err = e
		}
		if !errors.Is(err, checkpoint.ErrInvalid) {
			t.Fatalf("List without thread id: %v, want an error wrapping ErrInvalid", err)
		}
		c, cancel := context.WithCancel(ctx)
		cancel()
		err = nil
		for _, e := range l.List(c, thread("t1"), checkpoint.ListOptions{}) {
			err = e
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("List with a canceled context: %v, want context.Canceled", err)
		}
	}},
}
