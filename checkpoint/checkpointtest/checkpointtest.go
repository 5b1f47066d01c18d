package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Run checks that the savers newSaver makes obey the checkpoint.Saver
// contract, in subtests named by area ("Put/...", "PutWrites/...", "List/...").
// newSaver is called once per subtest and must return an empty saver; it
// releases what it opens with t.Cleanup. Optional interfaces (Lister,
// ThreadDeleter, ThreadCopier, ThreadLocker) are tested when the saver
// implements them and their subtests are skipped, saying so, when it does
// not.
//
// Beyond the behaviour LangGraph's checkpoint conformance suite checks, Run
// checks concurrent writers (many goroutines on many threads and on one
// thread: nothing lost, order kept), readers racing writers, checkpoints
// stored with checkpoint.Adopt, and that neither the values passed to Put
// and PutWrites nor those returned by Get and List share memory with what
// is stored.
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver) {
	t.Helper()
	for _, group := range []struct {
		name  string
		tests []test
	}{
		{"Put", putTests},
		{"Get", getTests},
		{"PutWrites", writesTests},
		{"List", listTests},
		{"DeleteThread", deleteTests},
		{"CopyThread", copyTests},
		{"TryLock", lockTests},
		{"Adopt", adoptTests},
		{"Immutable", immutableTests},
		{"Concurrent", concurrentTests},
	} {
		t.Run(group.name, func(t *testing.T) {
			for _, tc := range group.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, newSaver(t))
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, s checkpoint.Saver)
}

// Helpers shared by the tests.

var ctx = context.Background()

// thread addresses the root namespace of a thread. Every subtest has its own
// saver, so names need only be distinct within a subtest.
func thread(name string) checkpoint.Config { return checkpoint.Config{ThreadID: name} }

// newCP returns a checkpoint with a fresh id and one value per pair.
func newCP(kv ...string) *checkpoint.Checkpoint {
	cp := &checkpoint.Checkpoint{V: checkpoint.Version, ID: checkpoint.NewID(), TS: time.Now()}
	if len(kv) > 0 {
		cp.Values = make(map[string][]byte, len(kv)/2)
		cp.Versions = make(map[string]uint64, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			cp.Values[kv[i]] = []byte(kv[i+1])
			cp.Versions[kv[i]] = 1
		}
	}
	return cp
}

// richCP exercises every field of Checkpoint.
func richCP() *checkpoint.Checkpoint {
	return &checkpoint.Checkpoint{
		V:    checkpoint.Version,
		ID:   checkpoint.NewID(),
		TS:   time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC),
		Full: true,
		Values: map[string][]byte{
			"messages": []byte(`[{"role":"user","content":"hi"}]`),
			"count":    []byte(`42`),
			"empty":    []byte(`""`),
			"binary":   {0, 1, 2, 0xff, 0xfe},
		},
		Deltas: map[string][][]byte{
			"messages": {[]byte(`{"role":"assistant","content":"hello"}`), []byte(`{"role":"tool"}`)},
			"log":      {[]byte(`"a"`)},
		},
		Versions: map[string]uint64{"messages": 7, "count": 3, "empty": 1, "binary": 1<<63 + 5, "log": 2},
		Seen: map[string]map[string]uint64{
			"agent": {"messages": 6, "count": 3},
			"tools": {"messages": 7},
		},
		Tasks: []checkpoint.Task{
			{ID: "task-1", Node: "agent"},
			{ID: "task-2", Node: "tools", Input: []byte(`{"call":"run_python"}`)},
		},
	}
}

func richMD() checkpoint.Metadata {
	return checkpoint.Metadata{
		Source:  checkpoint.SourceLoop,
		Step:    3,
		Parents: map[string]string{"": "parent-id", "sub:1": "other"},
		RunID:   "run-42",
		Extra:   map[string]string{"user": "alice", "score": "42"},
	}
}

func mustPut(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, cp *checkpoint.Checkpoint, md checkpoint.Metadata) checkpoint.Config {
	t.Helper()
	got, err := s.Put(ctx, cfg, cp, md)
	if err != nil {
		t.Fatalf("Put(%+v, %s): %v", cfg, cp.ID, err)
	}
	return got
}

// chain puts n checkpoints in a row on cfg's thread and namespace, each the
// child of the one before, with metadata step i and source alternating input
// and loop; it returns their configs oldest first.
func chain(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, n int) []checkpoint.Config {
	t.Helper()
	var out []checkpoint.Config
	for i := range n {
		src := checkpoint.SourceInput
		if i%2 == 1 {
			src = checkpoint.SourceLoop
		}
		cp := newCP("step", strconv.Itoa(i))
		got := mustPut(t, s, cfg, cp, checkpoint.Metadata{Source: src, Step: i, Extra: map[string]string{"i": strconv.Itoa(i)}})
		out = append(out, got)
		cfg = got
	}
	return out
}

func mustGet(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config) *checkpoint.Tuple {
	t.Helper()
	tp, err := s.Get(ctx, cfg)
	if err != nil {
		t.Fatalf("Get(%+v): %v", cfg, err)
	}
	if tp == nil || tp.Checkpoint == nil {
		t.Fatalf("Get(%+v) returned no checkpoint and no error", cfg)
	}
	return tp
}

func wantNotFound(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config) {
	t.Helper()
	tp, err := s.Get(ctx, cfg)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Get(%+v) = %v, %v; want an error wrapping ErrNotFound", cfg, tp, err)
	}
}

func lister(t *testing.T, s checkpoint.Saver) checkpoint.Lister {
	t.Helper()
	l, ok := s.(checkpoint.Lister)
	if !ok {
		t.Skipf("%T does not implement checkpoint.Lister", s)
	}
	return l
}

func list(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, opts checkpoint.ListOptions) []*checkpoint.Tuple {
	t.Helper()
	var out []*checkpoint.Tuple
	for tp, err := range lister(t, s).List(ctx, cfg, opts) {
		if err != nil {
			t.Fatalf("List(%+v, %+v): %v", cfg, opts, err)
		}
		out = append(out, tp)
	}
	return out
}

func ids(tps []*checkpoint.Tuple) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.Checkpoint.ID
	}
	return out
}

func cfgIDs(cfgs []checkpoint.Config) []string {
	out := make([]string, len(cfgs))
	for i, c := range cfgs {
		out[i] = c.CheckpointID
	}
	return out
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// diffCheckpoint describes how got differs from want, or returns "". A nil
// and an empty map, slice or byte string count as equal: savers may encode
// either way.
func diffCheckpoint(got, want *checkpoint.Checkpoint) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil || want == nil:
		return fmt.Sprintf("checkpoint %v, want %v", got, want)
	}
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if got.V != want.V {
		add("V %d, want %d", got.V, want.V)
	}
	if got.ID != want.ID {
		add("ID %q, want %q", got.ID, want.ID)
	}
	if got.ParentID != want.ParentID {
		add("ParentID %q, want %q", got.ParentID, want.ParentID)
	}
	if !got.TS.Equal(want.TS) {
		add("TS %v, want %v", got.TS, want.TS)
	}
	if got.Full != want.Full {
		add("Full %v, want %v", got.Full, want.Full)
	}
	if !maps.EqualFunc(got.Values, want.Values, bytesEqual) {
		add("Values %q, want %q", got.Values, want.Values)
	}
	if !maps.EqualFunc(got.Deltas, want.Deltas, func(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytesEqual) }) {
		add("Deltas %q, want %q", got.Deltas, want.Deltas)
	}
	if !maps.Equal(got.Versions, want.Versions) {
		add("Versions %v, want %v", got.Versions, want.Versions)
	}
	if !maps.EqualFunc(got.Seen, want.Seen, func(a, b map[string]uint64) bool { return maps.Equal(a, b) }) {
		add("Seen %v, want %v", got.Seen, want.Seen)
	}
	if !slices.EqualFunc(got.Tasks, want.Tasks, func(a, b checkpoint.Task) bool {
		return a.ID == b.ID && a.Node == b.Node && bytesEqual(a.Input, b.Input)
	}) {
		add("Tasks %q, want %q", got.Tasks, want.Tasks)
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

func diffMetadata(got, want checkpoint.Metadata) string {
	if got.Source != want.Source || got.Step != want.Step || got.RunID != want.RunID ||
		!maps.Equal(got.Parents, want.Parents) || !maps.Equal(got.Extra, want.Extra) {
		return fmt.Sprintf("metadata %+v, want %+v", got, want)
	}
	return ""
}

// writeKey is how tests compare pending writes.
func writeKey(w checkpoint.PendingWrite) string {
	return fmt.Sprintf("%s/%d/%s=%s", w.TaskID, w.Index, w.Channel, w.Value)
}

func writeKeys(ws []checkpoint.PendingWrite) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = writeKey(w)
	}
	return out
}

func pw(idx int, channel, value string) checkpoint.PendingWrite {
	return checkpoint.PendingWrite{Index: idx, Channel: channel, Value: []byte(value)}
}
