package checkpointtest_test

import (
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

// A saver's own test file runs the suite and the benchmarks:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
//			s, err := mysaver.Open(filepath.Join(t.TempDir(), "db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
//	func BenchmarkSaver(b *testing.B) {
//		checkpointtest.Benchmark(b, func(b *testing.B) checkpoint.Saver { ... })
//	}
func Example() {
	// The benchmarks store the checkpoint of a step that appended one message.
	cp := checkpointtest.DeltaCheckpoint(3)
	fmt.Println(len(cp.Deltas["messages"]), cp.Versions["messages"], cp.Tasks[0].Node)
	// Output: 1 5 tools
}
