package checkpointtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func deleter(t *testing.T, s checkpoint.Saver) checkpoint.ThreadDeleter {
	t.Helper()
	d, ok := s.(checkpoint.ThreadDeleter)
	if !ok {
		t.Skipf("%T does not implement checkpoint.ThreadDeleter", s)
	}
	return d
}

func copier(t *testing.T, s checkpoint.Saver) checkpoint.ThreadCopier {
	t.Helper()
	c, ok := s.(checkpoint.ThreadCopier)
	if !ok {
		t.Skipf("%T does not implement checkpoint.ThreadCopier", s)
	}
	return c
}

func locker(t *testing.T, s checkpoint.Saver) checkpoint.ThreadLocker {
	t.Helper()
	l, ok := s.(checkpoint.ThreadLocker)
	if !ok {
		t.Skipf("%T does not implement checkpoint.ThreadLocker", s)
	}
	return l
}

var deleteTests = []test{
	{"AllNamespaces", func(t *testing.T, s checkpoint.Saver) {
		d := deleter(t, s)
		root := chain(t, s, thread("t1"), 3)
		child := chain(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"}, 2)
		mustWrite(t, s, root[2], "task", pw(0, "ch", "v"))
		mustWrite(t, s, child[1], "task", pw(0, "ch", "v"))
		if err := d.DeleteThread(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, s, thread("t1"))
		wantNotFound(t, s, root[1])
		wantNotFound(t, s, checkpoint.Config{ThreadID: "t1", Namespace: "child:1"})
		if l, ok := s.(checkpoint.Lister); ok {
			for _, ns := range []string{"", "child:1"} {
				for tp, err := range l.List(ctx, checkpoint.Config{ThreadID: "t1", Namespace: ns}, checkpoint.ListOptions{}) {
					t.Fatalf("List of deleted thread, namespace %q: %v %v", ns, tp, err)
				}
			}
		}
	}},
	{"OtherThreadsKept", func(t *testing.T, s checkpoint.Saver) {
		d := deleter(t, s)
		chain(t, s, thread("t1"), 2)
		kept := chain(t, s, thread("t10"), 2) // a thread id with t1 as prefix
		keptChild := chain(t, s, checkpoint.Config{ThreadID: "t2", Namespace: "x"}, 1)
		if err := d.DeleteThread(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		if tp := mustGet(t, s, thread("t10")); tp.Checkpoint.ID != kept[1].CheckpointID {
			t.Fatalf("thread t10 latest %q, want %q", tp.Checkpoint.ID, kept[1].CheckpointID)
		}
		mustGet(t, s, keptChild[0])
	}},
	{"MissingThread", func(t *testing.T, s checkpoint.Saver) {
		if err := deleter(t, s).DeleteThread(ctx, "nobody"); err != nil {
			t.Fatalf("DeleteThread of a thread with no checkpoints: %v, want nil", err)
		}
	}},
	{"ReuseAfterDelete", func(t *testing.T, s checkpoint.Saver) {
		d := deleter(t, s)
		old := chain(t, s, thread("t1"), 3)
		if err := d.DeleteThread(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		fresh := chain(t, s, thread("t1"), 1)
		tp := mustGet(t, s, thread("t1"))
		if tp.Checkpoint.ID != fresh[0].CheckpointID || len(tp.PendingWrites) != 0 {
			t.Fatalf("latest after delete and put = %q, want %q", tp.Checkpoint.ID, fresh[0].CheckpointID)
		}
		wantNotFound(t, s, old[2])
	}},
}

var copyTests = []test{
	{"Everything", func(t *testing.T, s checkpoint.Saver) {
		c := copier(t, s)
		root := chain(t, s, thread("src"), 3)
		child := chain(t, s, checkpoint.Config{ThreadID: "src", Namespace: "child:1"}, 2)
		rich := mustPut(t, s, root[2], richCP(), richMD())
		mustWrite(t, s, rich, "task", pw(0, "ch", "v"), pw(0, checkpoint.ErrorChannel, "e"))
		mustWrite(t, s, root[0], "task0", pw(3, "ch", "old"))
		if err := c.CopyThread(ctx, "src", "dst"); err != nil {
			t.Fatal(err)
		}
		for _, cfg := range append(append(root, child...), rich) {
			want := mustGet(t, s, cfg)
			dcfg := cfg
			dcfg.ThreadID = "dst"
			got := mustGet(t, s, dcfg)
			if got.Config != dcfg {
				t.Fatalf("copied Config = %+v, want %+v", got.Config, dcfg)
			}
			if d := diffCheckpoint(got.Checkpoint, want.Checkpoint); d != "" {
				t.Fatalf("copy of %s: %s", cfg.CheckpointID, d)
			}
			if d := diffMetadata(got.Metadata, want.Metadata); d != "" {
				t.Fatalf("copy of %s: %s", cfg.CheckpointID, d)
			}
			if g, w := writeKeys(got.PendingWrites), writeKeys(want.PendingWrites); !slices.Equal(g, w) {
				t.Fatalf("copy of %s has writes %q, want %q", cfg.CheckpointID, g, w)
			}
			if want.ParentConfig != nil {
				wp := *want.ParentConfig
				wp.ThreadID = "dst"
				if got.ParentConfig == nil || *got.ParentConfig != wp {
					t.Fatalf("copy of %s: ParentConfig %+v, want %+v", cfg.CheckpointID, got.ParentConfig, wp)
				}
			}
		}
		if got := mustGet(t, s, thread("dst")); got.Checkpoint.ID != rich.CheckpointID {
			t.Fatalf("latest of copy = %q, want %q", got.Checkpoint.ID, rich.CheckpointID)
		}
		if _, ok := s.(checkpoint.Lister); ok {
			if got, want := ids(list(t, s, thread("dst"), checkpoint.ListOptions{})), ids(list(t, s, thread("src"), checkpoint.ListOptions{})); !slices.Equal(got, want) {
				t.Fatalf("copy lists %q, source lists %q", got, want)
			}
		}
	}},
	{"Independent", func(t *testing.T, s checkpoint.Saver) {
		c := copier(t, s)
		src := chain(t, s, thread("src"), 2)
		if err := c.CopyThread(ctx, "src", "dst"); err != nil {
			t.Fatal(err)
		}
		// Continue both; each sees only its own branch.
		dcfg := src[1]
		dcfg.ThreadID = "dst"
		dnext := mustPut(t, s, dcfg, newCP("k", "dst"), checkpoint.Metadata{Step: 2})
		mustWrite(t, s, dcfg, "task", pw(0, "ch", "dst only"))
		snext := mustPut(t, s, src[1], newCP("k", "src"), checkpoint.Metadata{Step: 2})
		if got := mustGet(t, s, thread("src")); got.Checkpoint.ID != snext.CheckpointID {
			t.Fatalf("source latest %q, want %q", got.Checkpoint.ID, snext.CheckpointID)
		}
		if got := mustGet(t, s, thread("dst")); got.Checkpoint.ID != dnext.CheckpointID {
			t.Fatalf("copy latest %q, want %q", got.Checkpoint.ID, dnext.CheckpointID)
		}
		wantWrites(t, s, src[1])
		if d, ok := s.(checkpoint.ThreadDeleter); ok {
			if err := d.DeleteThread(ctx, "src"); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, dcfg); got.Checkpoint.ID != src[1].CheckpointID {
				t.Fatalf("copy lost checkpoint %q when the source was deleted", src[1].CheckpointID)
			}
		}
	}},
	{"MissingSource", func(t *testing.T, s checkpoint.Saver) {
		err := copier(t, s).CopyThread(ctx, "nobody", "dst")
		if !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("CopyThread from a thread with no checkpoints: %v, want an error wrapping ErrNotFound", err)
		}
		wantNotFound(t, s, thread("dst"))
	}},
	{"DestinationNotEmpty", func(t *testing.T, s checkpoint.Saver) {
		c := copier(t, s)
		chain(t, s, thread("src"), 2)
		dst := chain(t, s, checkpoint.Config{ThreadID: "dst", Namespace: "child:1"}, 1)
		if err := c.CopyThread(ctx, "src", "dst"); !errors.Is(err, checkpoint.ErrThreadExists) {
			t.Fatalf("CopyThread onto a thread with checkpoints: %v, want an error wrapping ErrThreadExists", err)
		}
		wantNotFound(t, s, thread("dst"))
		mustGet(t, s, dst[0])
		if err := c.CopyThread(ctx, "src", "src"); err == nil {
			t.Fatal("CopyThread of a thread onto itself succeeded")
		}
	}},
}

var lockTests = []test{
	{"Exclusive", func(t *testing.T, s checkpoint.Saver) {
		l := locker(t, s)
		unlock, err := l.TryLock("t1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
			t.Fatalf("second TryLock of a held thread: %v, want an error wrapping ErrThreadBusy", err)
		}
		other, err := l.TryLock("t2")
		if err != nil {
			t.Fatalf("TryLock of another thread while t1 is held: %v", err)
		}
		other()
		unlock()
		again, err := l.TryLock("t1")
		if err != nil {
			t.Fatalf("TryLock after unlock: %v", err)
		}
		unlock() // stale and repeated: must not release the new hold
		if _, err := l.TryLock("t1"); !errors.Is(err, checkpoint.ErrThreadBusy) {
			t.Fatalf("an old unlock released a newer hold: TryLock = %v", err)
		}
		again()
		again()
		final, err := l.TryLock("t1")
		if err != nil {
			t.Fatalf("TryLock after double unlock: %v", err)
		}
		final()
	}},
	{"OneWinner", func(t *testing.T, s checkpoint.Saver) {
		l := locker(t, s)
		const n = 16
		results := make(chan func(), n)
		start := make(chan struct{})
		done := make(chan struct{})
		for range n {
			go func() {
				<-start
				unlock, err := l.TryLock("t1")
				if err != nil {
					unlock = nil
				}
				results <- unlock
				<-done
			}()
		}
		close(start)
		var winners []func()
		for range n {
			if u := <-results; u != nil {
				winners = append(winners, u)
			}
		}
		close(done)
		if len(winners) != 1 {
			t.Fatalf("%d of %d concurrent TryLock calls won, want exactly 1", len(winners), n)
		}
		winners[0]()
	}},
}
