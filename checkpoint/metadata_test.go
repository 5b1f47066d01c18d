package checkpoint_test

import (
	"slices"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func TestMetadataMatches(t *testing.T) {
	md := checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: 3, RunID: "run-1", Extra: map[string]string{"user": "ann"}}
	for _, tc := range []struct {
		filter map[string]string
		want   bool
	}{
		{nil, true},
		{map[string]string{}, true},
		{map[string]string{"source": "loop"}, true},
		{map[string]string{"source": "input"}, false},
		{map[string]string{"step": "3", "run_id": "run-1", "user": "ann"}, true},
		{map[string]string{"step": "03"}, false},
		{map[string]string{"run_id": "run-2"}, false},
		{map[string]string{"user": "bob"}, false},
		{map[string]string{"team": ""}, false}, // a missing key never matches, not even the empty value
	} {
		if got := md.Matches(tc.filter); got != tc.want {
			t.Errorf("Matches(%v) = %v; want %v", tc.filter, got, tc.want)
		}
	}
}

func TestIsSpecialChannel(t *testing.T) {
	for _, ch := range []string{checkpoint.ErrorChannel, checkpoint.InterruptChannel, checkpoint.ResumeChannel} {
		if !checkpoint.IsSpecialChannel(ch) {
			t.Errorf("IsSpecialChannel(%q) = false", ch)
		}
	}
	for _, ch := range []string{"", "messages", "__error", "__pregel_tasks"} {
		if checkpoint.IsSpecialChannel(ch) {
			t.Errorf("IsSpecialChannel(%q) = true", ch)
		}
	}
}

func TestCompareWrites(t *testing.T) {
	w := func(task, channel string, index int) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{TaskID: task, Channel: channel, Index: index}
	}
	// In the order Savers return them: by task; a task's special channels first, by name; then by index.
	sorted := []checkpoint.PendingWrite{
		w("a", checkpoint.ErrorChannel, 5),
		w("a", checkpoint.InterruptChannel, 0),
		w("a", "messages", 0),
		w("a", "count", 1),
		w("b", checkpoint.ResumeChannel, 9),
		w("b", "messages", 0),
	}
	shuffled := []checkpoint.PendingWrite{sorted[3], sorted[5], sorted[0], sorted[4], sorted[2], sorted[1]}
	slices.SortFunc(shuffled, checkpoint.CompareWrites)
	for i := range sorted {
		if checkpoint.CompareWrites(shuffled[i], sorted[i]) != 0 || shuffled[i].Channel != sorted[i].Channel {
			t.Fatalf("sorted writes %v; want %v", shuffled, sorted)
		}
	}
	// The same write: a special channel's record is replaced whatever its index; others match by index.
	for _, tc := range []struct {
		a, b checkpoint.PendingWrite
		same bool
	}{
		{w("a", checkpoint.ErrorChannel, 0), w("a", checkpoint.ErrorChannel, 7), true},
		{w("a", "messages", 0), w("a", "count", 0), true},
		{w("a", "messages", 0), w("a", "messages", 1), false},
		{w("a", checkpoint.ErrorChannel, 0), w("b", checkpoint.ErrorChannel, 0), false},
	} {
		if same := checkpoint.CompareWrites(tc.a, tc.b) == 0; same != tc.same {
			t.Errorf("CompareWrites(%v, %v) == 0 is %v; want %v", tc.a, tc.b, same, tc.same)
		}
	}
}
