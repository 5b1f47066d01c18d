package checkpointtest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

var putTests = []test{
	{"ReturnsConfig", func(t *testing.T, s checkpoint.Saver) {
		cfg := checkpoint.Config{ThreadID: "t1", Namespace: "sub:1"}
		cp := newCP("k", `"v"`)
		got := mustPut(t, s, cfg, cp, checkpoint.Metadata{})
		want := checkpoint.Config{ThreadID: "t1", Namespace: "sub:1", CheckpointID: cp.ID}
		if got != want {
			t.Fatalf("Put returned %+v, want %+v", got, want)
		}
	}},
	{"RoundTripsEveryField", func(t *testing.T, s checkpoint.Saver) {
		cp, md := richCP(), richMD()
		stored := mustPut(t, s, thread("t1"), cp, md)
		tp := mustGet(t, s, stored)
		if d := diffCheckpoint(tp.Checkpoint, cp); d != "" {
			t.Fatalf("Get after Put: %s", d)
		}
		if d := diffMetadata(tp.Metadata, md); d != "" {
			t.Fatalf("Get after Put: %s", d)
		}
		if tp.Config != stored {
			t.Fatalf("Tuple.Config = %+v, want %+v", tp.Config, stored)
		}
		if tp.ParentConfig != nil {
			t.Fatalf("first checkpoint has ParentConfig %+v, want nil", tp.ParentConfig)
		}
		if len(tp.PendingWrites) != 0 {
			t.Fatalf("new checkpoint has pending writes %v", writeKeys(tp.PendingWrites))
		}
	}},
	{"RoundTripsEmptyCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		cp := &checkpoint.Checkpoint{ID: checkpoint.NewID()}
		stored := mustPut(t, s, thread("t1"), cp, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
		tp := mustGet(t, s, stored)
		if d := diffCheckpoint(tp.Checkpoint, cp); d != "" {
			t.Fatalf("Get after Put: %s", d)
		}
		if tp.Metadata.Step != -1 || tp.Metadata.Source != checkpoint.SourceInput {
			t.Fatalf("metadata %+v, want source input step -1", tp.Metadata)
		}
	}},
	{"ParentFromConfig", func(t *testing.T, s checkpoint.Saver) {
		first := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{Step: 0})
		second := mustPut(t, s, first, newCP(), checkpoint.Metadata{Step: 1})
		tp := mustGet(t, s, second)
		want := checkpoint.Config{ThreadID: "t1", CheckpointID: first.CheckpointID}
		if tp.ParentConfig == nil || *tp.ParentConfig != want {
			t.Fatalf("ParentConfig = %+v, want %+v", tp.ParentConfig, want)
		}
		if tp.Checkpoint.ParentID != first.CheckpointID {
			t.Fatalf("Checkpoint.ParentID = %q, want %q", tp.Checkpoint.ParentID, first.CheckpointID)
		}
	}},
	{"ParentInNamespace", func(t *testing.T, s checkpoint.Saver) {
		ns := checkpoint.Config{ThreadID: "t1", Namespace: "child:abc"}
		first := mustPut(t, s, ns, newCP(), checkpoint.Metadata{})
		second := mustPut(t, s, first, newCP(), checkpoint.Metadata{})
		tp := mustGet(t, s, second)
		want := checkpoint.Config{ThreadID: "t1", Namespace: "child:abc", CheckpointID: first.CheckpointID}
		if tp.ParentConfig == nil || *tp.ParentConfig != want {
			t.Fatalf("ParentConfig = %+v, want %+v", tp.ParentConfig, want)
		}
	}},
	{"ParentFromCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		first := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		cp := newCP()
		cp.ParentID = first.CheckpointID
		second := mustPut(t, s, thread("t1"), cp, checkpoint.Metadata{})
		tp := mustGet(t, s, second)
		if tp.ParentConfig == nil || tp.ParentConfig.CheckpointID != first.CheckpointID {
			t.Fatalf("ParentConfig = %+v, want checkpoint %q", tp.ParentConfig, first.CheckpointID)
		}
	}},
	{"ConflictingParentsRejected", func(t *testing.T, s checkpoint.Saver) {
		first := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		cp := newCP()
		cp.ParentID = "some-other-id"
		if _, err := s.Put(ctx, first, cp, checkpoint.Metadata{}); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Fatalf("Put with Config parent %q and ParentID %q: %v; want an error wrapping ErrInvalid", first.CheckpointID, cp.ParentID, err)
		}
		wantNotFound(t, s, checkpoint.Config{ThreadID: "t1", CheckpointID: cp.ID})
	}},
	{"AssignsMissingID", func(t *testing.T, s checkpoint.Saver) {
		stored := mustPut(t, s, thread("t1"), &checkpoint.Checkpoint{Values: map[string][]byte{"k": []byte("1")}}, checkpoint.Metadata{})
		if stored.CheckpointID == "" {
			t.Fatal("Put of a checkpoint without id returned no CheckpointID")
		}
		tp := mustGet(t, s, thread("t1"))
		if tp.Checkpoint.ID != stored.CheckpointID || string(tp.Checkpoint.Values["k"]) != "1" {
			t.Fatalf("latest is %q %q, want %q with k=1", tp.Checkpoint.ID, tp.Checkpoint.Values, stored.CheckpointID)
		}
	}},
	{"SameIDReplaces", func(t *testing.T, s checkpoint.Saver) {
		cp := newCP("k", "1")
		stored := mustPut(t, s, thread("t1"), cp, checkpoint.Metadata{Step: 1})
		if err := s.PutWrites(ctx, stored, "task", []checkpoint.PendingWrite{pw(0, "ch", "w")}); err != nil {
			t.Fatal(err)
		}
		cp2 := newCP("k", "2")
		cp2.ID = cp.ID
		mustPut(t, s, thread("t1"), cp2, checkpoint.Metadata{Step: 2})
		tp := mustGet(t, s, stored)
		if string(tp.Checkpoint.Values["k"]) != "2" || tp.Metadata.Step != 2 {
			t.Fatalf("after a second Put of id %q: k=%q step=%d, want k=2 step=2", cp.ID, tp.Checkpoint.Values["k"], tp.Metadata.Step)
		}
		if len(tp.PendingWrites) != 1 {
			t.Fatalf("pending writes after replacing the checkpoint: %v, want the one write kept", writeKeys(tp.PendingWrites))
		}
		if l, ok := s.(checkpoint.Lister); ok {
			n := 0
			for _, err := range l.List(ctx, thread("t1"), checkpoint.ListOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 1 {
				t.Fatalf("List after putting one id twice has %d checkpoints, want 1", n)
			}
		}
	}},
	{"ThreadsIsolated", func(t *testing.T, s checkpoint.Saver) {
		mustPut(t, s, thread("t1"), newCP("x", `"one"`), checkpoint.Metadata{})
		mustPut(t, s, thread("t2"), newCP("x", `"two"`), checkpoint.Metadata{})
		for th, want := range map[string]string{"t1": `"one"`, "t2": `"two"`} {
			if got := string(mustGet(t, s, thread(th)).Checkpoint.Values["x"]); got != want {
				t.Errorf("thread %s: x = %s, want %s", th, got, want)
			}
		}
	}},
	{"NamespacesIsolated", func(t *testing.T, s checkpoint.Saver) {
		root := mustPut(t, s, thread("t1"), newCP("x", "root"), checkpoint.Metadata{})
		child := mustPut(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"}, newCP("x", "child"), checkpoint.Metadata{})
		if got := mustGet(t, s, thread("t1")); got.Checkpoint.ID != root.CheckpointID {
			t.Fatalf("latest of root namespace is %q, want %q: namespaces leak", got.Checkpoint.ID, root.CheckpointID)
		}
		got := mustGet(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"})
		if got.Checkpoint.ID != child.CheckpointID || got.Config.Namespace != "child:1" {
			t.Fatalf("latest of child:1 is %+v, want %+v", got.Config, child)
		}
		wantNotFound(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:2"})
		wantNotFound(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1", CheckpointID: root.CheckpointID})
	}},
	{"NoThreadID", func(t *testing.T, s checkpoint.Saver) {
		if _, err := s.Put(ctx, checkpoint.Config{}, newCP(), checkpoint.Metadata{}); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Fatalf("Put without thread id: %v, want an error wrapping ErrInvalid", err)
		}
		if _, err := s.Get(ctx, checkpoint.Config{}); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Fatalf("Get without thread id: %v, want an error wrapping ErrInvalid", err)
		}
	}},
	{"NilCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		if _, err := s.Put(ctx, thread("t1"), nil, checkpoint.Metadata{}); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Fatalf("Put(nil): %v, want an error wrapping ErrInvalid", err)
		}
	}},
}

var getTests = []test{
	{"MissingThread", func(t *testing.T, s checkpoint.Saver) {
		wantNotFound(t, s, thread("nobody"))
	}},
	{"MissingID", func(t *testing.T, s checkpoint.Saver) {
		mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		wantNotFound(t, s, checkpoint.Config{ThreadID: "t1", CheckpointID: checkpoint.NewID()})
	}},
	{"LatestIsNewestID", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 5)
		tp := mustGet(t, s, thread("t1"))
		if tp.Checkpoint.ID != cfgs[4].CheckpointID || tp.Metadata.Step != 4 {
			t.Fatalf("latest = %q step %d, want %q step 4", tp.Checkpoint.ID, tp.Metadata.Step, cfgs[4].CheckpointID)
		}
		if tp.Config != cfgs[4] {
			t.Fatalf("latest Config = %+v, want %+v", tp.Config, cfgs[4])
		}
	}},
	{"LatestIgnoresPutOrder", func(t *testing.T, s checkpoint.Saver) {
		older, newer := newCP("k", "old"), newCP("k", "new")
		mustPut(t, s, thread("t1"), newer, checkpoint.Metadata{Step: 2})
		mustPut(t, s, thread("t1"), older, checkpoint.Metadata{Step: 1})
		if tp := mustGet(t, s, thread("t1")); tp.Checkpoint.ID != newer.ID {
			t.Fatalf("latest = %q, want the greatest id %q even though it was put first", tp.Checkpoint.ID, newer.ID)
		}
	}},
	{"ByID", func(t *testing.T, s checkpoint.Saver) {
		cfgs := chain(t, s, thread("t1"), 4)
		for i, cfg := range cfgs {
			tp := mustGet(t, s, cfg)
			if tp.Checkpoint.ID != cfg.CheckpointID || tp.Metadata.Step != i {
				t.Fatalf("Get(%s) = %q step %d, want step %d", cfg.CheckpointID, tp.Checkpoint.ID, tp.Metadata.Step, i)
			}
			if i > 0 && (tp.ParentConfig == nil || *tp.ParentConfig != cfgs[i-1]) {
				t.Fatalf("checkpoint %d: ParentConfig = %+v, want %+v", i, tp.ParentConfig, cfgs[i-1])
			}
		}
	}},
	{"CanceledContext", func(t *testing.T, s checkpoint.Saver) {
		mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Get(c, thread("t1")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Get with a canceled context: %v, want context.Canceled", err)
		}
	}},
}
