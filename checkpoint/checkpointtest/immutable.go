package checkpointtest

import (
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// scribble changes every part of cp and md that a careless caller could.
func scribble(cp *checkpoint.Checkpoint, md *checkpoint.Metadata) {
	cp.ID, cp.ParentID, cp.Full, cp.V = "changed", "changed", !cp.Full, 99
	for _, v := range cp.Values {
		if len(v) > 0 {
			v[0] ^= 0xff
		}
	}
	cp.Values["added"] = []byte("x")
	for _, ws := range cp.Deltas {
		for _, w := range ws {
			if len(w) > 0 {
				w[0] ^= 0xff
			}
		}
		if len(ws) > 0 {
			ws[0] = []byte("swapped")
		}
	}
	for k := range cp.Versions {
		cp.Versions[k]++
	}
	for _, vs := range cp.Seen {
		for k := range vs {
			vs[k]++
		}
	}
	for i := range cp.Tasks {
		cp.Tasks[i].Node = "changed"
		if len(cp.Tasks[i].Input) > 0 {
			cp.Tasks[i].Input[0] ^= 0xff
		}
	}
	if md != nil {
		md.Step++
		md.Parents[""] = "changed"
		md.Extra["user"] = "mallory"
	}
}

var immutableTests = []test{
	{"PutArgument", func(t *testing.T, s checkpoint.Saver) {
		cp, md := richCP(), richMD()
		want := richCP()
		want.ID = cp.ID
		cfg := mustPut(t, s, thread("t1"), cp, md)
		scribble(cp, &md)
		got := mustGet(t, s, cfg)
		if d := diffCheckpoint(got.Checkpoint, want); d != "" {
			t.Fatalf("changing the checkpoint passed to Put changed the stored one: %s", d)
		}
		if d := diffMetadata(got.Metadata, richMD()); d != "" {
			t.Fatalf("changing the metadata passed to Put changed the stored one: %s", d)
		}
	}},
	{"PutArgumentLarge", func(t *testing.T, s checkpoint.Saver) {
		// Values long enough that Adopt would keep them are copied by Put.
		cp := bigCP()
		want := bigCP()
		want.ID = cp.ID
		cfg := mustPut(t, s, thread("t1"), cp, richMD())
		scribble(cp, nil)
		if d := diffCheckpoint(mustGet(t, s, cfg).Checkpoint, want); d != "" {
			t.Fatalf("changing the checkpoint passed to Put changed the stored one: %s", d)
		}
	}},
	{"GetResult", func(t *testing.T, s checkpoint.Saver) {
		cp := richCP()
		cfg := mustPut(t, s, thread("t1"), cp, richMD())
		mustWrite(t, s, cfg, "task", pw(0, "ch", "value"))
		for _, c := range []checkpoint.Config{cfg, thread("t1")} {
			got := mustGet(t, s, c)
			scribble(got.Checkpoint, &got.Metadata)
			got.PendingWrites[0].Value[0] = 'X'
			got.PendingWrites[0].Channel = "changed"
			got.ParentConfig = &checkpoint.Config{ThreadID: "changed"}
		}
		got := mustGet(t, s, cfg)
		if d := diffCheckpoint(got.Checkpoint, cp); d != "" {
			t.Fatalf("changing what Get returned changed the stored checkpoint: %s", d)
		}
		if d := diffMetadata(got.Metadata, richMD()); d != "" {
			t.Fatalf("changing what Get returned changed the stored metadata: %s", d)
		}
		wantWrites(t, s, cfg, "task/0/ch=value")
	}},
	{"ListResult", func(t *testing.T, s checkpoint.Saver) {
		lister(t, s)
		cp := richCP()
		cfg := mustPut(t, s, thread("t1"), cp, richMD())
		mustWrite(t, s, cfg, "task", pw(0, "ch", "value"))
		for _, tp := range list(t, s, thread("t1"), checkpoint.ListOptions{}) {
			scribble(tp.Checkpoint, &tp.Metadata)
			tp.PendingWrites[0].Value[0] = 'X'
		}
		got := mustGet(t, s, cfg)
		if d := diffCheckpoint(got.Checkpoint, cp); d != "" {
			t.Fatalf("changing what List returned changed the stored checkpoint: %s", d)
		}
		wantWrites(t, s, cfg, "task/0/ch=value")
	}},
	{"PutWritesArgument", func(t *testing.T, s checkpoint.Saver) {
		cfg := mustPut(t, s, thread("t1"), newCP(), checkpoint.Metadata{})
		ws := []checkpoint.PendingWrite{pw(0, "ch", "value"), pw(1, checkpoint.ErrorChannel, "err")}
		mustWrite(t, s, cfg, "task", ws...)
		ws[0].Value[0] = 'X'
		ws[1].Value[0] = 'X'
		ws[0].Channel = "changed"
		wantWrites(t, s, cfg, "task/1/"+checkpoint.ErrorChannel+"=err", "task/0/ch=value")
	}},
	{"OlderCheckpointsUnchanged", func(t *testing.T, s checkpoint.Saver) {
		// Putting a child, writes on it, or a copy never touches the parent.
		cp := richCP()
		first := mustPut(t, s, thread("t1"), cp, richMD())
		mustWrite(t, s, first, "task", pw(0, "ch", "value"))
		before := mustGet(t, s, first)
		second := mustPut(t, s, first, newCP("messages", "[]"), checkpoint.Metadata{Step: 4})
		mustWrite(t, s, second, "task", pw(0, "ch", "other"))
		if c, ok := s.(checkpoint.ThreadCopier); ok {
			if err := c.CopyThread(ctx, "t1", "t2"); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, checkpoint.Config{ThreadID: "t2", CheckpointID: first.CheckpointID}, "task2", pw(0, "ch", "copy"))
		}
		after := mustGet(t, s, first)
		if d := diffCheckpoint(after.Checkpoint, before.Checkpoint); d != "" {
			t.Fatal(d)
		}
		wantWrites(t, s, first, "task/0/ch=value")
	}},
}
