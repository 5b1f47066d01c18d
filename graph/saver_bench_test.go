package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/graph"
)

// chatLoop is an agent loop whose turns append a call and a result of
// about 200 bytes each, like a short tool-calling conversation.
func chatLoop(turns int) *graph.StateGraph[St] {
	call, result := strings.Repeat("c", 200), strings.Repeat("r", 200)
	sb := newG()
	sb.AddNodeFunc("agent", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add(call), Count.Set(s.Count+1)), nil
	})
	sb.AddNodeFunc("tools", func(ctx context.Context, s St) (graph.Update[St], error) {
		return graph.Updates(Log.Add(result)), nil
	})
	sb.AddEdge(graph.START, "agent").AddEdge("tools", "agent")
	sb.AddConditionalEdges("agent", graph.RouteFunc(func(s St) string {
		if s.Count >= turns {
			return graph.END
		}
		return "tools"
	}), graph.BranchConfig{Paths: []string{"tools", graph.END}})
	return sb
}

type saverCase struct {
	name string
	open func(b *testing.B) checkpoint.Saver
}

var saverCases = []saverCase{
	{"memory", func(b *testing.B) checkpoint.Saver { return checkpoint.NewMemory() }},
	{"bolt", func(b *testing.B) checkpoint.Saver {
		s, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}},
}

// BenchmarkGrowth runs one thread for 100 and for 1000 agent turns with a
// saver. Linear cost means the 1000-turn time is about 10 times the
// 100-turn time; whole-state checkpoints would make it about 100.
func BenchmarkGrowth(b *testing.B) {
	for _, sc := range saverCases {
		for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityExit} {
			for _, turns := range []int{100, 1000} {
				b.Run(fmt.Sprintf("%s/%s/turns=%d", sc.name, d, turns), func(b *testing.B) {
					saver := sc.open(b)
					g := mustCompile(b, chatLoop(turns), graph.WithSaver(saver))
					ctx := context.Background()
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						i++
						if _, err := g.Invoke(ctx, graph.Updates(Log.Add("go")), graph.WithThread(fmt.Sprint(i)), graph.WithDurability(d), graph.WithRecursionLimit(3*turns)); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*turns), "µs/turn")
				})
			}
		}
	}
}

// BenchmarkBoltFileSize reports the bbolt file's size after a 1000-turn
// thread (saved at every step) divided by the final state's JSON size.
func BenchmarkBoltFileSize(b *testing.B) {
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "size.db")
		saver, err := bolt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		g := mustCompile(b, chatLoop(1000), graph.WithSaver(saver))
		res, err := g.Invoke(context.Background(), graph.Updates(Log.Add("go")), graph.WithThread("t"), graph.WithDurability(graph.DurabilitySync))
		if err != nil {
			b.Fatal(err)
		}
		saver.Close()
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		js, _ := json.Marshal(res.State)
		b.ReportMetric(float64(fi.Size())/float64(len(js)), "file/state")
		b.ReportMetric(float64(fi.Size())/1e6, "MB")
	}
}

// BenchmarkResumeColdThread reads a 1000-turn thread's latest state from
// storage with no cache: the cost of the chain back to a full checkpoint.
func BenchmarkResumeColdThread(b *testing.B) {
	for _, sc := range saverCases {
		b.Run(sc.name, func(b *testing.B) {
			saver := sc.open(b)
			g := mustCompile(b, chatLoop(1000), graph.WithSaver(saver))
			ctx := context.Background()
			if _, err := g.Invoke(ctx, graph.Updates(Log.Add("go")), graph.WithThread("t"), graph.WithDurability(graph.DurabilitySync)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				// A new compiled graph each time has no cache.
				fresh := mustCompile(b, chatLoop(1000), graph.WithSaver(saver))
				snap, err := fresh.GetState(ctx, graph.WithThread("t"))
				if err != nil || len(snap.Values.Log) != 2000 {
					b.Fatal(err, len(snap.Values.Log))
				}
			}
		})
	}
}
