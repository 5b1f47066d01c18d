package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Snapshot is the state of a thread at one checkpoint.
type Snapshot[S any] struct {
	Values       S
	Next         []string
	Config       checkpoint.Config
	ParentConfig *checkpoint.Config
	Metadata     checkpoint.Metadata
	CreatedAt    time.Time
	Tasks        []TaskInfo
	Interrupts   []Interruption
}

// TaskInfo is a task a checkpoint planned and what became of it so far.
type TaskInfo struct {
	ID         string
	Node       string
	Done       bool
	Err        string
	Interrupts []Interruption
	// State is, with WithSubgraphs, the Snapshot of the subgraph a pending
	// Subgraph task left in the thread (a Snapshot of the subgraph's state
	// type), or nil.
	State any
}

func (g *Graph[S]) stateRunner(ctx context.Context, saver checkpoint.Saver, cfg checkpoint.Config, take bool) (*runner[S], *loadedState[S], error) {
	if saver == nil {
		return nil, nil, ErrNoSaver
	}
	if cfg.ThreadID == "" {
		return nil, nil, ErrNoThread
	}
	r := &runner[S]{g: g, ctx: ctx}
	r.rc.cfg = Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cfg.CheckpointID, RunID: checkpoint.NewID()}
	r.rc.durability = DurabilitySync
	r.shared = runShared{cfg: r.rc.cfg, saver: saver, durability: DurabilitySync, emit: r.emitFromTask, emitSub: r.emitSubFromTask}
	r.alloc()
	r.p = newPersister(g, r)
	st, err := r.p.load(ctx, take)
	if err != nil {
		r.p.close()
		return nil, nil, err
	}
	if st != nil {
		r.state, r.barriers, r.version, r.step = st.state, st.barriers, st.version, st.step
		if st.waiting != nil {
			r.waiting = st.waiting
		}
	} else {
		r.step = -2
	}
	return r, st, nil
}

// GetState returns the state of the thread named by WithThread, at its
// latest checkpoint or at the one WithCheckpointID names.
func (g *Graph[S]) GetState(ctx context.Context, opts ...StateOption) (Snapshot[S], error) {
	var sc stateConfig
	for _, o := range opts {
		o.applyState(&sc)
	}
	return g.getState(ctx, sc)
}

func (g *Graph[S]) getState(ctx context.Context, sc stateConfig) (Snapshot[S], error) {
	return g.getStateWith(ctx, g.opts.saver, sc)
}

func (g *Graph[S]) getStateWith(ctx context.Context, saver checkpoint.Saver, sc stateConfig) (Snapshot[S], error) {
	cfg := sc.addr
	r, st, err := g.stateRunner(ctx, saver, cfg, false)
	if err != nil {
		return Snapshot[S]{Config: cfg}, err
	}
	defer r.p.close()
	if st == nil {
		return Snapshot[S]{Config: cfg}, fmt.Errorf("graph: thread %q: %w", cfg.ThreadID, checkpoint.ErrNotFound)
	}
	return r.snapshot(st, sc.subgraphs)
}

// snapshot describes the loaded checkpoint as the thread stands: the writes
// of the tasks that finished in a step that failed or paused are applied, so
// Values is current and Next lists only what still has to run.
func (r *runner[S]) snapshot(st *loadedState[S], subgraphs bool) (Snapshot[S], error) {
	t := st.tuple
	snap := Snapshot[S]{
		Config: t.Config, ParentConfig: t.ParentConfig,
		Metadata: t.Metadata, CreatedAt: t.Checkpoint.TS,
	}
	tasks, err := r.restoreTasks(st)
	if err != nil {
		return snap, err
	}
	var done []*task[S]
	for _, tk := range tasks {
		if tk.done {
			done = append(done, tk)
		}
	}
	if len(done) > 0 {
		if err := r.apply(done); err != nil {
			return snap, err
		}
	}
	snap.Values = r.g.view(&r.state)
	failed := map[string]string{}
	for _, w := range t.PendingWrites {
		if w.Channel == checkpoint.ErrorChannel {
			failed[w.TaskID] = string(w.Value)
		}
	}
	for _, tk := range tasks {
		id := tk.cx.tc.taskID()
		info := TaskInfo{ID: id, Node: tk.node.name, Done: tk.done, Err: failed[id], Interrupts: tk.cx.tc.raised}
		if subgraphs && !tk.done {
			if sn, ok := tk.node.node.(subgraphSnapshotter); ok {
				addr := checkpoint.Config{ThreadID: t.Config.ThreadID, Namespace: childNamespace(t.Config.Namespace, tk.node.name, id)}
				if info.State, err = sn.snapshot(r.ctx, r.shared.saver, addr); err != nil {
					return snap, err
				}
			}
		}
		snap.Tasks = append(snap.Tasks, info)
		if !tk.done {
			snap.Next = append(snap.Next, tk.node.name)
		}
		snap.Interrupts = append(snap.Interrupts, tk.cx.tc.raised...)
	}
	return snap, nil
}

// GetStateHistory yields the checkpoints of the thread named by WithThread
// as snapshots, newest first. It needs a saver that implements
// checkpoint.Lister.
func (g *Graph[S]) GetStateHistory(ctx context.Context, opts ...HistoryOption) iter.Seq2[Snapshot[S], error] {
	var hc historyConfig
	for _, o := range opts {
		o.applyHistory(&hc)
	}
	cfg := hc.addr
	return func(yield func(Snapshot[S], error) bool) {
		if cfg.ThreadID == "" {
			yield(Snapshot[S]{}, ErrNoThread)
			return
		}
		l, ok := g.opts.saver.(checkpoint.Lister)
		if !ok {
			yield(Snapshot[S]{}, errors.New("graph: GetStateHistory: the saver cannot list checkpoints (it does not implement checkpoint.Lister)"))
			return
		}
		for t, err := range l.List(ctx, cfg, hc.list) {
			if err != nil {
				yield(Snapshot[S]{}, err)
				return
			}
			snap, err := g.getState(ctx, stateConfig{addr: t.Config})
			if !yield(snap, err) || err != nil {
				return
			}
		}
	}
}

// UpdateState writes upd to the thread named by WithThread (at its latest
// checkpoint, or the one WithCheckpointID names) as if node asNode had returned
// it: the writes go through the keys' reducers, a new checkpoint (source
// "update") is stored after cfg's checkpoint, and asNode's edges decide what
// runs next when the thread continues. asNode START treats upd as input; END
// leaves nothing to run. Updating an old checkpoint forks the thread there:
// the old branch stays as it was.
func (g *Graph[S]) UpdateState(ctx context.Context, upd Update[S], asNode string, opts ...ThreadOption) (checkpoint.Config, error) {
	var cfg checkpoint.Config
	for _, o := range opts {
		o(&cfg)
	}
	if l, ok := g.opts.saver.(checkpoint.ThreadLocker); ok && cfg.ThreadID != "" {
		unlock, err := l.TryLock(cfg.ThreadID)
		if err != nil {
			return cfg, fmt.Errorf("graph: UpdateState on thread %q: %w", cfg.ThreadID, err)
		}
		defer unlock()
	}
	r, _, err := g.stateRunner(ctx, g.opts.saver, cfg, true)
	if err != nil {
		return cfg, err
	}
	defer r.p.close()
	var spec *nodeSpec[S]
	switch asNode {
	case START, "":
		spec = g.start
	case END:
		spec = &nodeSpec[S]{name: END, idx: -1}
	default:
		var ok bool
		if spec, ok = g.byName[asNode]; !ok {
			return cfg, fmt.Errorf("graph: UpdateState as unknown node %q", asNode)
		}
	}
	r.step++
	t := &task[S]{node: spec, upd: upd}
	t.cx.tc = taskCtx{run: &r.shared, node: spec.name, step: r.step}
	if err := r.applyAndRoute([]*task[S]{t}); err != nil {
		return cfg, err
	}
	next, err := r.plan([]*task[S]{t})
	if err != nil {
		return cfg, err
	}
	if err := r.p.commit(r, checkpoint.SourceUpdate, []*task[S]{t}, next); err != nil {
		return cfg, err
	}
	if err := r.p.finish(); err != nil {
		return cfg, err
	}
	r.p.ok = true
	r.p.remember(r)
	return r.p.cfg, nil
}
