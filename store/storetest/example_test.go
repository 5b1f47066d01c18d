package storetest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/store/storetest"
)

// A store's own test file runs the suite, giving each store the suite's
// clock and TTL policy:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, cfg storetest.Config) store.Store {
//			s, err := mystore.Open(filepath.Join(t.TempDir(), "db"),
//				mystore.WithClock(cfg.Clock), mystore.WithTTL(cfg.TTL))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
func ExampleRun() {
	// Run needs a *testing.T; see store.NewMemory's and store/bolt's tests.
}

// A Clock moves only when told; timers fire as it passes them, and a test
// waits for a sleeper to arm its timer instead of sleeping itself.
func ExampleClock() {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	ctx := context.Background()

	woke := make(chan time.Time)
	go func() {
		woke <- <-clock.After(time.Minute)
	}()
	if err := clock.WaitTimers(ctx, 1); err != nil {
		panic(err)
	}
	fmt.Println("waiting:", clock.Timers())
	clock.Advance(30 * time.Second)
	fmt.Println("after 30s:", clock.Timers())
	clock.Advance(30 * time.Second)
	fmt.Println("woke at", (<-woke).Format("15:04:05"), "now", clock.Now().Format("15:04:05"))
	// Output:
	// waiting: 1
	// after 30s: 1
	// woke at 12:01:00 now 12:01:00
}
