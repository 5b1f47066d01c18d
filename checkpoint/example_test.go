package checkpoint_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func ExampleNewMemory() {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	thread := checkpoint.Config{ThreadID: "chat-1"}

	first, _ := saver.Put(ctx, thread, &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: checkpoint.NewID(), Full: true,
		Values: map[string][]byte{"messages": []byte(`["hi"]`)},
	}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})

	// The next step stores only what it appended.
	_, _ = saver.Put(ctx, first, &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: checkpoint.NewID(),
		Deltas: map[string][][]byte{"messages": {[]byte(`"hello!"`)}},
	}, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: 0})

	latest, _ := saver.Get(ctx, thread)
	fmt.Println(latest.Metadata.Step, latest.ParentConfig.CheckpointID == first.CheckpointID)
	fmt.Println(string(latest.Checkpoint.Deltas["messages"][0]))

	_, err := saver.Get(ctx, checkpoint.Config{ThreadID: "no-such-thread"})
	fmt.Println(errors.Is(err, checkpoint.ErrNotFound))
	// Output:
	// 0 true
	// "hello!"
	// true
}

func ExampleThreadLocks() {
	var locks checkpoint.ThreadLocks
	unlock, _ := locks.TryLock("chat-1")
	_, err := locks.TryLock("chat-1")
	fmt.Println(errors.Is(err, checkpoint.ErrThreadBusy))
	unlock()
	unlock() // idempotent
	again, err := locks.TryLock("chat-1")
	fmt.Println(err)
	again()
	// Output:
	// true
	// <nil>
}
