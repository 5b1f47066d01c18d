package checkpointtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func mustWrite(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, task string, ws ...checkpoint.PendingWrite) {
	t.Helper()
	if err := s.PutWrites(ctx, cfg, task, ws); err != nil {
		t.Fatalf("PutWrites(%+v, %q): %v", cfg, task, err)
	}
}

func wantWrites(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, want ...string) {
	t.Helper()
	got := writeKeys(mustGet(t, s, cfg).PendingWrites)
	if !slices.Equal(got, want) {
		t.Fatalf("pending writes of %s:\n got  %q\n want %q", cfg.CheckpointID, got, want)
	}
}

var writesTests = []test{
	{"Basic", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, cfg, "task-a", pw(0, "ch1", "v1"), pw(1, "ch2", "v2"), pw(2, "ch1", "v3"))
		wantWrites(t, s, cfg, "task-a/0/ch1=v1", "task-a/1/ch2=v2", "task-a/2/ch1=v3")
	}},
	{"TaskIDFromArgument", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		w := pw(0, "ch", "v")
		w.TaskID = "ignored"
		mustWrite(t, s, cfg, "task-a", w)
		wantWrites(t, s, cfg, "task-a/0/ch=v")
	}},
	{"ManyTasksOrdered", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, cfg, "task-b", pw(1, "ch", "b1"), pw(0, "ch", "b0"))
		mustWrite(t, s, cfg, "task-a", pw(0, "ch", "a0"))
		mustWrite(t, s, cfg, "task-c", pw(-5, "ch", "c-5"), pw(10, "ch", "c10"))
		wantWrites(t, s, cfg, "task-a/0/ch=a0", "task-b/0/ch=b0", "task-b/1/ch=b1", "task-c/-5/ch=c-5", "task-c/10/ch=c10")
	}},
	{"Idempotent", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, cfg, "task-a", pw(0, "ch", "first"), pw(1, "ch", "second"))
		// A retry of the same task: same (task, index) is kept as first stored.
		mustWrite(t, s, cfg, "task-a", pw(0, "ch", "retried"), pw(1, "other", "retried"), pw(2, "ch", "third"))
		mustWrite(t, s, cfg, "task-a", pw(0, "ch", "first"))
		wantWrites(t, s, cfg, "task-a/0/ch=first", "task-a/1/ch=second", "task-a/2/ch=third")
	}},
	{"SpecialChannelsUpserted", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, cfg, "task-a", pw(0, "ch", "v"), pw(1, checkpoint.ErrorChannel, "boom"))
		mustWrite(t, s, cfg, "task-a", pw(0, checkpoint.InterruptChannel, `{"q":1}`))
		mustWrite(t, s, cfg, "task-a", pw(2, checkpoint.ErrorChannel, "boom again"), pw(0, checkpoint.ResumeChannel, "yes"))
		mustWrite(t, s, cfg, "task-a", pw(0, checkpoint.InterruptChannel, `{"q":2}`))
		mustWrite(t, s, cfg, "task-b", pw(0, checkpoint.ErrorChannel, "b failed"))
		wantWrites(t, s, cfg,
			"task-a/2/"+checkpoint.ErrorChannel+"=boom again",
			"task-a/0/"+checkpoint.InterruptChannel+`={"q":2}`,
			"task-a/0/"+checkpoint.ResumeChannel+"=yes",
			"task-a/0/ch=v",
			"task-b/0/"+checkpoint.ErrorChannel+"=b failed",
		)
	}},
	{"EmptyAndNilValues", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, cfg, "task-a", checkpoint.PendingWrite{Index: 0, Channel: "ch"}, checkpoint.PendingWrite{Index: 1, Channel: "ch", Value: []byte{0, 0xff}})
		wantWrites(t, s, cfg, "task-a/0/ch=", "task-a/1/ch=\x00\xff")
	}},
	{"PerCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		first := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		mustWrite(t, s, first, "task-a", pw(0, "ch", "old"))
		second := mustPut(t, s, first, newCP(), checkpoint.Metadata{})
		wantWrites(t, s, second)
		mustWrite(t, s, second, "task-a", pw(0, "ch", "new"))
		wantWrites(t, s, first, "task-a/0/ch=old")
		wantWrites(t, s, second, "task-a/0/ch=new")
		latest := mustGet(t, s, thread("t1"))
		if got := writeKeys(latest.PendingWrites); !slices.Equal(got, []string{"task-a/0/ch=new"}) {
			t.Fatalf("latest checkpoint's writes %q, want the second checkpoint's", got)
		}
	}},
	{"NamespacesIsolated", func(t *testing.T, s checkpoint.Saver) {
		cp := newCP()
		root := mustPut(t, s, thread("t1"), cp, checkpoint.Metadata{})
		// The same checkpoint id in another namespace is another checkpoint.
		cp2 := newCP()
		cp2.ID = cp.ID
		child := mustPut(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"}, cp2, checkpoint.Metadata{})
		mustWrite(t, s, root, "task", pw(0, "ch", "root"))
		mustWrite(t, s, child, "task", pw(0, "ch", "child"))
		wantWrites(t, s, root, "task/0/ch=root")
		wantWrites(t, s, child, "task/0/ch=child")
	}},
	{"UnknownCheckpoint", func(t *testing.T, s checkpoint.Saver) {
		mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		for _, cfg := range []checkpoint.Config{
			{ThreadID: "t1", CheckpointID: checkpoint.NewID()},
			{ThreadID: "nobody", CheckpointID: checkpoint.NewID()},
		} {
			if err := s.PutWrites(ctx, cfg, "task", []checkpoint.PendingWrite{pw(0, "ch", "v")}); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("PutWrites to missing checkpoint %+v: %v, want an error wrapping ErrNotFound", cfg, err)
			}
		}
	}},
	{"InvalidArguments", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		for name, call := range map[string]func() error{
			"no thread":     func() error { return s.PutWrites(ctx, checkpoint.Config{CheckpointID: cfg.CheckpointID}, "task", nil) },
			"no checkpoint": func() error { return s.PutWrites(ctx, thread("t1"), "task", nil) },
			"no task":       func() error { return s.PutWrites(ctx, cfg, "", []checkpoint.PendingWrite{pw(0, "ch", "v")}) },
		} {
			if err := call(); !errors.Is(err, checkpoint.ErrInvalid) {
				t.Errorf("PutWrites with %s: %v, want an error wrapping ErrInvalid", name, err)
			}
		}
	}},
}
