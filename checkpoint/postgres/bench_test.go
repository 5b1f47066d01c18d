package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/pgtest"
)

// benchSavers opens a fresh saver per sub-benchmark; the servers live as
// long as the top-level benchmark.
func benchSaver(b *testing.B, opts ...pgtest.Option) func(b *testing.B) checkpoint.Saver {
	pool := newPool(b, database(b, opts...), 16)
	var n atomic.Int64
	return func(b *testing.B) checkpoint.Saver {
		return newSaver(b, pool, postgres.WithSchema(fmt.Sprintf("bench_%d", n.Add(1))))
	}
}

// BenchmarkSaver measures the saver on a server that skips fsync, as the
// tests run it.
func BenchmarkSaver(b *testing.B) {
	checkpointtest.Benchmark(b, benchSaver(b))
}

// BenchmarkSaverDurable measures the saver on a server that flushes every
// commit to disk, as in production; compare with the bbolt saver's
// BenchmarkSync.
func BenchmarkSaverDurable(b *testing.B) {
	checkpointtest.Benchmark(b, benchSaver(b, pgtest.Durable()))
}

// A short tool-calling conversation: each turn appends a call and a result
// of about 200 bytes each.
type chat struct {
	Log   []string
	Turns int
}

var (
	chatLog   = graph.SliceField("log", func(s *chat) *[]string { return &s.Log }, graph.Append[string]())
	chatTurns = graph.Field("turns", func(s *chat) *int { return &s.Turns }, graph.LastValue[int]())
)

func chatLoop(tb testing.TB, turns int, saver checkpoint.Saver) *graph.Graph[chat] {
	call, result := strings.Repeat("c", 200), strings.Repeat("r", 200)
	sb := graph.New[chat](chatLog, chatTurns)
	sb.AddNodeFunc("agent", func(ctx context.Context, s chat) (graph.Update[chat], error) {
		return graph.Updates(chatLog.Add(call), chatTurns.Set(s.Turns+1)), nil
	})
	sb.AddNodeFunc("tools", func(ctx context.Context, s chat) (graph.Update[chat], error) {
		return graph.Updates(chatLog.Add(result)), nil
	})
	sb.AddEdge(graph.START, "agent").AddEdge("tools", "agent")
	sb.AddConditionalEdges("agent", graph.RouteFunc(func(s chat) string {
		if s.Turns >= turns {
			return graph.END
		}
		return "tools"
	}), graph.BranchConfig{Paths: []string{"tools", graph.END}})
	g, err := sb.Compile(graph.WithSaver(saver))
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

type saverCase struct {
	name string
	open func(b *testing.B) checkpoint.Saver
}

// saverCases are the savers the benchmarks below compare, each as a
// program would open it.
func saverCases(b *testing.B) []saverCase {
	openBolt := func(opts ...bolt.Option) func(b *testing.B) checkpoint.Saver {
		return func(b *testing.B) checkpoint.Saver {
			s, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
	}
	return []saverCase{
		{"memory", func(b *testing.B) checkpoint.Saver { return checkpoint.NewMemory() }},
		{"bolt", openBolt()},
		{"bolt-nosync", openBolt(bolt.WithoutSync())},
		{"postgres", benchSaver(b, pgtest.Durable())},
		{"postgres-nofsync", benchSaver(b)},
	}
}

// BenchmarkPut puts one-message delta checkpoints in a row on one thread.
func BenchmarkPut(b *testing.B) {
	for _, c := range saverCases(b) {
		b.Run(c.name, func(b *testing.B) {
			s := c.open(b)
			cfg := checkpoint.Config{ThreadID: "bench"}
			cp := checkpointtest.DeltaCheckpoint(0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var err error
				cp.ID = checkpoint.NewID()
				if cfg, err = s.Put(context.Background(), cfg, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkGetLatest reads the latest checkpoint, with its pending writes,
// of a thread of 1000 checkpoints.
func BenchmarkGetLatest(b *testing.B) {
	for _, c := range saverCases(b) {
		b.Run(c.name, func(b *testing.B) {
			s := c.open(b)
			cfg := checkpoint.Config{ThreadID: "bench"}
			for i := range 1000 {
				var err error
				if cfg, err = s.Put(context.Background(), cfg, checkpointtest.DeltaCheckpoint(i), checkpoint.Metadata{Step: i}); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.PutWrites(context.Background(), cfg, "task", []checkpoint.PendingWrite{{Channel: "messages", Value: []byte(`"hi"`)}}); err != nil {
				b.Fatal(err)
			}
			latest := checkpoint.Config{ThreadID: "bench"}
			b.ReportAllocs()
			for b.Loop() {
				tp, err := s.Get(context.Background(), latest)
				if err != nil || tp.Config != cfg || len(tp.PendingWrites) != 1 {
					b.Fatal(tp, err)
				}
			}
		})
	}
}

// BenchmarkGrowth runs one thread for 100 and for 1000 agent turns, saving
// at every step, on each saver. Linear cost: the µs/turn of 1000 turns is
// about that of 100.
func BenchmarkGrowth(b *testing.B) {
	cases := saverCases(b)
	for _, c := range cases {
		for _, turns := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/turns=%d", c.name, turns), func(b *testing.B) {
				g := chatLoop(b, turns, c.open(b))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					_, err := g.Invoke(context.Background(), graph.Updates(chatLog.Add("go")), graph.WithThread(fmt.Sprint(i)),
						graph.WithDurability(graph.DurabilitySync), graph.WithRecursionLimit(3*turns))
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*turns), "µs/turn")
			})
		}
	}
}

// TestStorageGrowsLinearly: the bytes a thread takes in the database grow
// with its length, not with its length squared: each row holds what its
// step wrote, and full checkpoints add at most about as much again.
func TestStorageGrowsLinearly(t *testing.T) {
	t.Parallel()
	pool := newPool(t, database(t), 4)
	saver := newSaver(t, pool)
	size := func(turns int) (rows, bytes int64) {
		thread := fmt.Sprint("turns-", turns)
		_, err := chatLoop(t, turns, saver).Invoke(context.Background(), graph.Updates(chatLog.Add("go")), graph.WithThread(thread),
			graph.WithDurability(graph.DurabilitySync), graph.WithRecursionLimit(3*turns))
		if err != nil {
			t.Fatal(err)
		}
		err = pool.QueryRow(context.Background(), `SELECT count(*), sum(octet_length(checkpoint) + octet_length(metadata))
			FROM agentgraph_checkpoints WHERE thread_id = $1`, thread).Scan(&rows, &bytes)
		if err != nil {
			t.Fatal(err)
		}
		return rows, bytes
	}
	shortRows, short := size(100)
	longRows, long := size(1000)
	t.Logf("100 turns: %d rows, %d bytes; 1000 turns: %d rows, %d bytes (%.1f×)", shortRows, short, longRows, long, float64(long)/float64(short))
	if r := float64(long) / float64(short); r < 7 || r > 15 {
		t.Fatalf("1000 turns take %.1f× the bytes of 100 turns; want about 10× (linear)", r)
	}
}
