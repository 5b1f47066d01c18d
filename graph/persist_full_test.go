package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

type fullSt struct {
	Log   []string `json:"log"`
	Any   []any    `json:"any"`
	Last  []string `json:"last"`
	Upper []string `json:"upper"`
	N     int      `json:"n"`
}

var (
	fLog = graph.SliceField("log", func(s *fullSt) *[]string { return &s.Log }, graph.Append[string]())
	fAny = graph.SliceField("any", func(s *fullSt) *[]any { return &s.Any }, graph.ReduceSlice(func(cur, upd []any) []any {
		return append(cur, upd...)
	}))
	// fLast grows by what is written and renames its first element to the
	// count: its full values must be encoded, not spliced.
	fLast = graph.SliceField("last", func(s *fullSt) *[]string { return &s.Last }, graph.ReduceSlice(func(cur, upd []string) []string {
		out := slices.Concat(cur, upd)
		out[0] = strconv.Itoa(len(out))
		return out
	}))
	// fUpper appends the upper case of what is written: not the writes.
	fUpper = graph.SliceField("upper", func(s *fullSt) *[]string { return &s.Upper }, graph.ReduceSlice(func(cur, upd []string) []string {
		for _, u := range upd {
			cur = append(cur, strings.ToUpper(u))
		}
		return cur
	}))
	fN = graph.Field("n", func(s *fullSt) *int { return &s.N }, graph.LastValue[int]())
)

func fullLoop(t *testing.T, saver checkpoint.Saver, turns int, opts ...graph.CompileOption) *graph.Graph[fullSt] {
	t.Helper()
	sb := graph.New[fullSt](fLog, fAny, fLast, fUpper, fN)
	sb.AddNodeFunc("agent", func(_ context.Context, s fullSt) (graph.Update[fullSt], error) {
		word := strings.Repeat(string(rune('a'+s.N%26)), 100+s.N%7)
		return graph.Updates(fLog.Add(word, "x"), fAny.Add(map[string]any{"n": s.N, "w": word}, []any{s.N}), fLast.Add(word), fUpper.Add(word), fN.Set(s.N+1)), nil
	})
	sb.AddNodeFunc("tools", func(_ context.Context, s fullSt) (graph.Update[fullSt], error) {
		return graph.Updates(fLog.Add("result"), fLast.Add("r")), nil
	})
	sb.AddEdge(graph.START, "agent").AddEdge("tools", "agent")
	sb.AddConditionalEdges("agent", graph.RouteFunc(func(s fullSt) string {
		if s.N%turns == 0 {
			return graph.END
		}
		return "tools"
	}), graph.BranchConfig{Paths: []string{"tools", graph.END}})
	g, err := sb.Compile(append(opts, graph.WithSaver(saver))...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// plainJSON is encoding/json: a codec the engine knows nothing about, so it
// encodes every full checkpoint's values from the state.
type plainJSON struct{}

func (plainJSON) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (plainJSON) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Full checkpoints of a long thread reuse the bytes of the last full one for
// keys that only grew. They must hold what encoding the state gives: the
// same thread run with a codec the engine cannot splice for must store, at
// every full checkpoint, values that decode to the same.
func TestFullCheckpointsMatchTheState(t *testing.T) {
	for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityExit} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			ctx := context.Background()
			run := func(opts ...graph.CompileOption) []*checkpoint.Tuple {
				saver := checkpoint.NewMemory()
				g := fullLoop(t, saver, 40, opts...)
				// Several runs on one thread: exit durability stores one
				// checkpoint a run, and the thread's state carries over.
				for range 12 {
					if _, err := g.Invoke(ctx, graph.Updates(fLog.Add("go")), graph.WithThread("t"), graph.WithDurability(d), graph.WithRecursionLimit(1000)); err != nil {
						t.Fatal(err)
					}
				}
				var cps []*checkpoint.Tuple
				for tp, err := range saver.List(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{}) {
					if err != nil {
						t.Fatal(err)
					}
					cps = append(cps, tp)
				}
				return cps
			}
			spliced, encoded := run(), run(graph.WithCodec(plainJSON{}))
			if len(spliced) != len(encoded) {
				t.Fatalf("%d checkpoints, %d with encoding/json", len(spliced), len(encoded))
			}
			fulls := 0
			for i, tp := range spliced {
				cp, want := tp.Checkpoint, encoded[i].Checkpoint
				if cp.Full != want.Full {
					t.Fatalf("checkpoint %d: full %v, with encoding/json %v", i, cp.Full, want.Full)
				}
				if !cp.Full {
					continue
				}
				fulls++
				for _, key := range []string{"log", "any", "last", "upper", "n"} {
					var got, exp any
					if err := json.Unmarshal(cp.Values[key], &got); err != nil {
						t.Fatalf("full checkpoint %d: key %s: %v", i, key, err)
					}
					if err := json.Unmarshal(want.Values[key], &exp); err != nil {
						t.Fatalf("full checkpoint %d: key %s with encoding/json: %v", i, key, err)
					}
					if !reflect.DeepEqual(got, exp) {
						t.Fatalf("full checkpoint %d: key %s holds %d bytes that decode to other values than the state's %d", i, key, len(cp.Values[key]), len(want.Values[key]))
					}
					if key == "log" && !bytes.Equal(cp.Values[key], want.Values[key]) {
						t.Fatalf("full checkpoint %d: key log is not encoding/json's encoding of the state", i)
					}
				}
			}
			if fulls < 4 {
				t.Fatalf("%d full checkpoints, want at least 4 to check", fulls)
			}
		})
	}
}
