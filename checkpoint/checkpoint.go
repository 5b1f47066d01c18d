// Package checkpoint defines how a graph's threads are made durable: the
// Saver interface that storage backends implement, the checkpoint, metadata
// and pending-write types they store, and an in-memory Saver.
//
// A Saver is deliberately small (Get, Put, PutWrites). Listing, deleting a
// thread, copying a thread and thread locking are optional interfaces that
// callers discover with a type assertion, in the manner of database/sql/driver.
package checkpoint

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Version is the format version of Checkpoint written by this package.
const Version = 1

// ErrNotFound reports that no checkpoint matches a Config.
var ErrNotFound = errors.New("checkpoint: not found")

// ErrThreadBusy reports that another run holds the thread.
var ErrThreadBusy = errors.New("checkpoint: thread is busy with another run")

// Config addresses a thread, a namespace within it (subgraphs; "" is the
// root graph) and optionally one checkpoint. An empty CheckpointID means the
// latest checkpoint of the thread and namespace.
type Config struct {
	ThreadID     string `json:"thread_id"`
	Namespace    string `json:"checkpoint_ns,omitempty"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Checkpoint is the state of a thread after one step, stored as the changes
// since its parent. Channel values are already encoded by the graph's Codec;
// a Saver stores the bytes as they are and never interprets them.
//
// The state at a checkpoint is rebuilt by starting from the nearest ancestor
// whose Full flag is set and applying, checkpoint by checkpoint, Values (the
// channel takes that value) and then Deltas (the writes are folded into the
// channel by its reducer). A stored checkpoint is never mutated.
type Checkpoint struct {
	V        int       `json:"v"`
	ID       string    `json:"id"`
	ParentID string    `json:"parent_id,omitempty"`
	TS       time.Time `json:"ts"`
	// Full is true when Values holds every channel: replay starts here.
	Full bool `json:"full,omitempty"`
	// Values maps a channel to its whole encoded value.
	Values map[string][]byte `json:"values,omitempty"`
	// Deltas maps a channel to the encoded writes reduced into it at this
	// step, in the order they were applied.
	Deltas map[string][][]byte `json:"deltas,omitempty"`
	// Versions holds the new version of each channel this checkpoint changed;
	// a channel's version is the latest one along the chain of parents.
	Versions map[string]uint64 `json:"versions,omitempty"`
	// Seen maps each node that ran in this step to the channel versions it
	// saw; the key "*" stands for every channel at or below that version.
	Seen map[string]map[string]uint64 `json:"seen,omitempty"`
	// Tasks are the tasks planned to run next.
	Tasks []Task `json:"tasks,omitempty"`
}

// Task is a task planned by a checkpoint. Input is set for a task created by a
// Send: the encoded argument the node receives instead of the state.
type Task struct {
	ID    string `json:"id"`
	Node  string `json:"node"`
	Input []byte `json:"input,omitempty"`
}

// Source says what wrote a checkpoint.
type Source string

// The sources of a checkpoint.
const (
	SourceInput  Source = "input"  // the input of a run
	SourceLoop   Source = "loop"   // a step of the run loop
	SourceUpdate Source = "update" // UpdateState
	SourceFork   Source = "fork"   // a copy of another checkpoint
)

// Metadata describes a checkpoint. Extra holds user-supplied string metadata.
type Metadata struct {
	Source  Source            `json:"source"`
	Step    int               `json:"step"`
	Parents map[string]string `json:"parents,omitempty"`
	RunID   string            `json:"run_id,omitempty"`
	Extra   map[string]string `json:"extra,omitempty"`
}

// Special channels of pending writes. Writes to them are upserted rather
// than inserted once: a task may replace its error or interrupt record.
const (
	ErrorChannel     = "__error__"
	InterruptChannel = "__interrupt__"
	ResumeChannel    = "__resume__"
)

// PendingWrite is one write a task made during a step that has not yet been
// folded into a checkpoint: either the step is still running, or it failed
// and these are the writes of the tasks that succeeded.
type PendingWrite struct {
	TaskID  string `json:"task_id"`
	Index   int    `json:"idx"`
	Channel string `json:"channel"`
	Value   []byte `json:"value,omitempty"`
}

// Tuple is a stored checkpoint with everything a Saver keeps beside it.
type Tuple struct {
	Config        Config
	Checkpoint    *Checkpoint
	Metadata      Metadata
	ParentConfig  *Config
	PendingWrites []PendingWrite
}

// Saver stores the checkpoints of threads. Implementations must be safe for
// concurrent use by many goroutines and threads.
type Saver interface {
	// Get returns the checkpoint cfg names, or the latest one of the thread and
	// namespace when cfg.CheckpointID is empty, with its pending writes. It
	// returns an error wrapping ErrNotFound when there is none.
	Get(ctx context.Context, cfg Config) (*Tuple, error)
	// Put stores cp in the thread and namespace of cfg, with cfg.CheckpointID
	// naming its parent (empty for the first), and returns the Config of the
	// new checkpoint.
	Put(ctx context.Context, cfg Config, cp *Checkpoint, md Metadata) (Config, error)
	// PutWrites stores pending writes of one task against the checkpoint cfg
	// names. It is idempotent: a write whose (task, index) is already stored
	// is ignored, except on the special channels, which are replaced.
	PutWrites(ctx context.Context, cfg Config, taskID string, writes []PendingWrite) error
}

// ListOptions narrows List. Filter matches metadata: "source", "step",
// "run_id" and the keys of Metadata.Extra. Before keeps checkpoints whose id
// sorts before it. Limit <= 0 means no limit.
type ListOptions struct {
	Filter map[string]string
	Before string
	Limit  int
}

// Lister is a Saver that can list the checkpoints of a thread and namespace,
// newest first.
type Lister interface {
	List(ctx context.Context, cfg Config, opts ListOptions) iter.Seq2[*Tuple, error]
}

// ThreadDeleter is a Saver that can delete every checkpoint and pending write
// of a thread, in all namespaces.
type ThreadDeleter interface {
	DeleteThread(ctx context.Context, threadID string) error
}

// ThreadCopier is a Saver that can copy every checkpoint of a thread to a new
// thread id, which must be empty.
type ThreadCopier interface {
	CopyThread(ctx context.Context, srcThreadID, dstThreadID string) error
}

// ThreadLocker is a Saver that can give one run exclusive use of a thread.
// TryLock returns an error wrapping ErrThreadBusy when another holder has it.
type ThreadLocker interface {
	TryLock(threadID string) (unlock func(), err error)
}
