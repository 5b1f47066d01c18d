package storetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store/storetest"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := storetest.NewClock(t0)
	now := clock.After(0)
	if got := <-now; !got.Equal(t0) {
		t.Errorf("After(0) sent %v; want %v at once", got, t0)
	}
	late, early := clock.After(2*time.Second), clock.After(time.Second)
	if n := clock.Timers(); n != 2 {
		t.Fatalf("Timers() = %d; want 2", n)
	}
	clock.Advance(time.Second)
	select {
	case got := <-early:
		if !got.Equal(t0.Add(time.Second)) {
			t.Errorf("the 1s timer sent %v", got)
		}
	default:
		t.Fatal("the 1s timer did not fire when the clock reached it")
	}
	select {
	case <-late:
		t.Fatal("the 2s timer fired after 1s")
	default:
	}
	clock.Advance(time.Hour)
	if got := <-late; !got.Equal(t0.Add(time.Hour + time.Second)) {
		t.Errorf("the 2s timer sent %v; want the time the clock jumped to", got)
	}
	if n := clock.Timers(); n != 0 {
		t.Errorf("Timers() = %d after all fired; want 0", n)
	}

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.WaitTimers(done, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitTimers with a cancelled context = %v; want context.Canceled", err)
	}
	if err := clock.WaitTimers(done, 0); err != nil {
		t.Errorf("WaitTimers(0) = %v; want nil", err)
	}
}
