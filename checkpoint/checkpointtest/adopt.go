package checkpointtest

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// bigCP is richCP with values long enough for a saver to keep rather than
// copy, a kilobyte and more: two that repeat themselves and one that does
// not.
func bigCP() *checkpoint.Checkpoint {
	cp := richCP()
	cp.Values["history"] = bytes.Repeat([]byte(`{"role":"user","content":"hi"},`), 40)
	cp.Values["state"] = bytes.Repeat([]byte{'x', 0, 0xff}, 40000)
	noise := make([]byte, 5000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	cp.Values["noise"] = noise
	cp.Versions["history"], cp.Versions["state"], cp.Versions["noise"] = 1, 1, 1
	return cp
}

// adoptBig adopts a bigCP into thread t1 of s and returns it, what a Get must give back, and its config.
func adoptBig(t *testing.T, s checkpoint.Saver) (cp, want *checkpoint.Checkpoint, cfg checkpoint.Config) {
	t.Helper()
	cp, want = bigCP(), bigCP()
	want.ID = cp.ID
	cfg, err := checkpoint.Adopt(ctx, s, thread("t1"), cp, richMD())
	if err != nil {
		t.Fatal(err)
	}
	return cp, want, cfg
}

// checkpoint.Adopt stores what Put stores, whether the saver takes the
// bytes over or gets a Put, and what it hands over is the bytes only.
var adoptTests = []test{
	{"LongRunsReadBack", func(t *testing.T, s checkpoint.Saver) {
		// Base64 of a zeroed file: a value that compresses far more than a million to one.
		cp := newCP("blob", `"`+strings.Repeat("A", 20<<20)+`"`)
		cfg, err := checkpoint.Adopt(ctx, s, thread("t1"), cp, richMD())
		if err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, cfg)
		if v := got.Checkpoint.Values["blob"]; len(v) != 20<<20+2 || v[0] != '"' || v[1] != 'A' || v[len(v)-2] != 'A' || !bytes.Equal(v, cp.Values["blob"]) {
			t.Errorf("a 20 MiB run of one byte read back as %d bytes", len(v))
		}
	}},
	{"StoresWhatPutStores", func(t *testing.T, s checkpoint.Saver) {
		cp, want, cfg := adoptBig(t, s)
		if cfg.CheckpointID != cp.ID {
			t.Fatalf("Adopt returned checkpoint %q, want %q", cfg.CheckpointID, cp.ID)
		}
		child, err := checkpoint.Adopt(ctx, s, cfg, newCP("step", "1"), checkpoint.Metadata{Step: 4})
		if err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, cfg)
		if d := diffCheckpoint(got.Checkpoint, want); d != "" {
			t.Fatal(d)
		}
		if d := diffMetadata(got.Metadata, richMD()); d != "" {
			t.Fatal(d)
		}
		if got := mustGet(t, s, thread("t1")); got.Config != child || got.ParentConfig == nil || *got.ParentConfig != cfg {
			t.Fatalf("latest is %+v with parent %+v, want %+v with parent %+v", got.Config, got.ParentConfig, child, cfg)
		}
		if _, ok := s.(checkpoint.Lister); ok {
			tps := list(t, s, thread("t1"), checkpoint.ListOptions{})
			if len(tps) != 2 {
				t.Fatalf("List returned %d checkpoints, want 2", len(tps))
			}
			if d := diffCheckpoint(tps[1].Checkpoint, want); d != "" {
				t.Fatalf("List: %s", d)
			}
		}
	}},
	{"CallerKeepsTheMaps", func(t *testing.T, s checkpoint.Saver) {
		// The bytes are handed over, the Checkpoint and its maps are not.
		cp, want, cfg := adoptBig(t, s)
		cp.ID, cp.Full = "changed", false
		delete(cp.Values, "state")
		cp.Values["history"] = []byte("replaced")
		cp.Values["added"] = []byte("x")
		cp.Deltas["messages"] = nil
		cp.Versions["messages"]++
		cp.Tasks[0].Node = "changed"
		if d := diffCheckpoint(mustGet(t, s, cfg).Checkpoint, want); d != "" {
			t.Fatalf("changing the maps of an adopted checkpoint changed the stored one: %s", d)
		}
	}},
	{"GetResult", func(t *testing.T, s checkpoint.Saver) {
		_, want, cfg := adoptBig(t, s)
		got := mustGet(t, s, cfg)
		scribble(got.Checkpoint, &got.Metadata)
		if d := diffCheckpoint(mustGet(t, s, cfg).Checkpoint, want); d != "" {
			t.Fatalf("changing what Get returned changed the adopted checkpoint: %s", d)
		}
	}},
}
