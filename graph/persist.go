package graph

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// How often a thread stores its whole state. Between two full checkpoints a
// checkpoint holds only what its step changed, and an append-reduced key
// stores only what was appended, so the bytes a step writes grow with the
// step's writes, not with the thread. A full checkpoint is written when the
// deltas since the last one outweigh it (so full copies add at most about
// as many bytes as the deltas did: linear in total), or after maxChain
// steps (so rebuilding a thread's state from storage reads at most maxChain
// checkpoints). Continuing a thread in the same process reads none of them:
// the compiled graph keeps the latest state of recent threads.
const (
	maxChain     = 1024
	minFullBytes = 16 << 10
)

// Channels of pending writes besides the state keys.
const (
	routeChannel     = "__route__"
	sendChannel      = "__send__"
	overwritePrefix  = "__overwrite__:"
	barrierPrefix    = "join:"
	deferredChannel  = "__deferred__"
	errorWriteIndex  = -1
	interruptIndex   = -3
	resumeWriteIndex = -4
)

type chainInfo struct {
	length         int
	bytesSinceFull int
	fullBytes      int
	// tails lets the next full checkpoint reuse the last one's bytes of the
	// slice keys that only grew since (see spliceFull).
	tails map[string]*fullTail
}

// own returns a copy of c whose tails a run may extend without changing c's.
func (c chainInfo) own() chainInfo {
	if c.tails == nil {
		return c
	}
	tails := make(map[string]*fullTail, len(c.tails))
	for name, t := range c.tails {
		t := *t
		t.writes, t.enc = slices.Clip(t.writes), slices.Clip(t.enc)
		tails[name] = &t
	}
	c.tails = tails
	return c
}

type persister[S any] struct {
	g          *Graph[S]
	saver      checkpoint.Saver
	codec      checkpoint.Codec
	durability Durability
	runID      string
	extra      map[string]string

	r        *runner[S]
	cfg      checkpoint.Config // the last stored checkpoint: parent of the next
	head     string            // the latest checkpoint, stored or (exit durability) not yet
	pendMeta checkpoint.Metadata
	pendNext []*task[S]
	seenLog  []seenEntry
	chain    chainInfo
	lastStep int

	values   map[string][]byte
	deltas   map[string][][]byte
	versions map[string]uint64
	diffSize int
	dirty    bool
	// exit durability keeps the run's writes per key and encodes them once,
	// when the checkpoint is stored: as deltas while they stay small,
	// otherwise as the key's whole value.
	held map[AnyKey[S]]*heldWrites[S]

	queue chan func() error
	wg    sync.WaitGroup
	// saveCtx is what saver calls get (see saveGrace).
	saveCtx    context.Context
	saveCancel context.CancelFunc
	stopGrace  func() bool
	grace      atomic.Pointer[time.Timer]
	errMu      sync.Mutex
	err        error
	ok         bool // the run's state matches what is stored
}

type heldWrites[S any] struct {
	ws    []Write[S]
	whole bool
}

// heldBudget bounds the encoded deltas a key may store at the end of an
// exit-durability run before its whole value is stored instead.
const heldBudget = 64 << 10

type loadedState[S any] struct {
	threadState[S]
	tuple *checkpoint.Tuple
}

// saveGrace bounds how long saves may go on once the run's context is
// done. Saves run on a context that keeps the run's values but not its
// cancellation, so that a cancelled run still stores what it finished, and
// that context ends saveGrace after the run's.
const saveGrace = time.Minute

func newPersister[S any](g *Graph[S], r *runner[S]) *persister[S] {
	rc := &r.rc
	p := &persister[S]{
		g: g, r: r, saver: r.shared.saver, codec: g.opts.codec, durability: rc.durability,
		runID: rc.cfg.RunID, extra: rc.metadata,
		cfg: checkpoint.Config{ThreadID: rc.cfg.ThreadID, Namespace: rc.cfg.Namespace, CheckpointID: rc.cfg.CheckpointID},
	}
	p.resetDiff()
	saveCtx, cancel := context.WithCancel(context.WithoutCancel(r.ctx))
	p.saveCtx, p.saveCancel = saveCtx, cancel
	p.stopGrace = context.AfterFunc(r.ctx, func() {
		p.grace.Store(time.AfterFunc(saveGrace, cancel))
	})
	if p.durability == DurabilityAsync {
		q := make(chan func() error, 64)
		p.queue = q
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for op := range q {
				if p.failed() {
					continue
				}
				if err := op(); err != nil {
					p.fail(err)
				}
			}
		}()
	}
	return p
}

func (p *persister[S]) resetDiff() {
	p.values, p.deltas, p.versions, p.seenLog = nil, nil, nil, p.seenLog[:0]
	p.diffSize, p.dirty = 0, false
}

func (p *persister[S]) fail(err error) {
	p.errMu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.errMu.Unlock()
}

func (p *persister[S]) failed() bool {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err != nil
}

// do runs a saver operation now, or queues it behind the earlier ones.
func (p *persister[S]) do(op func(ctx context.Context) error) error {
	if p.queue != nil {
		p.queue <- func() error { return p.call(op) }
		return nil
	}
	return p.saveError(p.call(op))
}

// call runs a saver operation; a panic in the saver or the codec becomes
// its error.
func (p *persister[S]) call(op func(ctx context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the saver or codec panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return op(p.saveCtx)
}

// saveError names the thread in a saver's error, once.
func (p *persister[S]) saveError(err error) error {
	if err == nil {
		return nil
	}
	var se *saveError
	if errors.As(err, &se) {
		return err
	}
	return &saveError{thread: p.cfg.ThreadID, err: err}
}

type saveError struct {
	thread string
	err    error
}

func (e *saveError) Error() string {
	return fmt.Sprintf("graph: thread %q: saving a checkpoint: %v", e.thread, e.err)
}

func (e *saveError) Unwrap() error { return e.err }

func (p *persister[S]) close() {
	if p.queue != nil {
		close(p.queue)
		p.queue = nil
		p.wg.Wait()
	}
	if p.saveCancel != nil {
		p.stopGrace()
		if t := p.grace.Load(); t != nil {
			t.Stop()
		}
		p.saveCancel()
		p.saveCancel = nil
	}
}

// finish stores what is not stored yet and waits for queued saves.
func (p *persister[S]) finish() error {
	if p.durability == DurabilityExit && p.dirty {
		if err := p.flushExit(); err != nil {
			p.fail(err)
		}
	}
	p.close()
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err != nil {
		return p.saveError(p.err)
	}
	return nil
}

// load reads the checkpoint the run starts from, or returns nil for a new
// thread.
func (p *persister[S]) load(ctx context.Context, take bool) (*loadedState[S], error) {
	tuple, err := p.saver.Get(ctx, p.cfg)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if p.cfg.CheckpointID != "" {
			return nil, fmt.Errorf("graph: thread %q has no checkpoint %q: %w", p.cfg.ThreadID, p.cfg.CheckpointID, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("graph: loading thread %q: %w", p.cfg.ThreadID, err)
	}
	st := &loadedState[S]{tuple: tuple}
	key := checkpoint.Config{ThreadID: p.cfg.ThreadID, Namespace: p.cfg.Namespace}
	g := p.g
	g.cacheMu.Lock()
	cached := g.cache[key]
	if cached != nil && cached.cpID == tuple.Checkpoint.ID {
		if take {
			delete(g.cache, key)
		}
	} else {
		cached = nil
	}
	g.cacheMu.Unlock()
	if cached != nil {
		st.threadState = *cached
	} else {
		if err := p.rebuild(ctx, tuple, &st.threadState); err != nil {
			return nil, err
		}
	}
	p.cfg = tuple.Config
	p.head = tuple.Checkpoint.ID
	p.chain = st.chain.own()
	p.lastStep = st.step
	p.ok = true
	return st, nil
}

// rebuild replays the chain of checkpoints from the nearest full one.
func (p *persister[S]) rebuild(ctx context.Context, tuple *checkpoint.Tuple, st *threadState[S]) error {
	chain := []*checkpoint.Checkpoint{tuple.Checkpoint}
	for cur := tuple.Checkpoint; !cur.Full; {
		if cur.ParentID == "" {
			return fmt.Errorf("graph: thread %q: checkpoint %s has no full ancestor: the thread's storage is damaged", p.cfg.ThreadID, cur.ID)
		}
		t, err := p.saver.Get(ctx, checkpoint.Config{ThreadID: p.cfg.ThreadID, Namespace: p.cfg.Namespace, CheckpointID: cur.ParentID})
		if err != nil {
			return fmt.Errorf("graph: thread %q: reading checkpoint %s: %w", p.cfg.ThreadID, cur.ParentID, err)
		}
		cur = t.Checkpoint
		chain = append(chain, cur)
	}
	g := p.g
	st.barriers = make([][]bool, len(g.joins))
	for i, j := range g.joins {
		st.barriers[i] = make([]bool, len(j.fromIdx))
	}
	if g.deferred {
		st.waiting = make([]bool, len(g.nodes))
	}
	for i := len(chain) - 1; i >= 0; i-- {
		cp := chain[i]
		if err := p.replay(cp, st); err != nil {
			return fmt.Errorf("graph: thread %q: checkpoint %s: %w", p.cfg.ThreadID, cp.ID, err)
		}
		size := cp.Size()
		if cp.Full {
			st.chain = chainInfo{fullBytes: size}
		} else {
			st.chain.length++
			st.chain.bytesSinceFull += size
		}
	}
	st.cpID = tuple.Checkpoint.ID
	st.step = tuple.Metadata.Step
	return nil
}

func (p *persister[S]) replay(cp *checkpoint.Checkpoint, st *threadState[S]) error {
	g := p.g
	for name, b := range cp.Values {
		if ki, ok := g.keyByName[name]; ok {
			if err := g.keys[ki].decodeValue(&st.state, p.codec, b); err != nil {
				return err
			}
			continue
		}
		if name == deferredChannel && st.waiting != nil {
			var names []string
			if err := p.codec.Unmarshal(b, &names); err != nil {
				return fmt.Errorf("decode %s: %w", name, err)
			}
			for i, n := range g.nodes {
				st.waiting[i] = slices.Contains(names, n.name)
			}
			continue
		}
		if strings.HasPrefix(name, barrierPrefix) {
			for ji, j := range g.joins {
				if j.channel == name {
					var seen []string
					if err := p.codec.Unmarshal(b, &seen); err != nil {
						return fmt.Errorf("decode %s: %w", name, err)
					}
					for pos, f := range j.from {
						st.barriers[ji][pos] = slices.Contains(seen, f)
					}
				}
			}
		}
	}
	for name, ds := range cp.Deltas {
		ki, ok := g.keyByName[name]
		if !ok {
			return fmt.Errorf("checkpoint writes key %q, which this graph does not declare", name)
		}
		for _, b := range ds {
			if err := g.keys[ki].decodeFold(&st.state, p.codec, b); err != nil {
				return err
			}
		}
	}
	for _, v := range cp.Versions {
		st.version = max(st.version, v)
	}
	return nil
}

// remember leaves the run's final state for the thread's next run.
func (p *persister[S]) remember(r *runner[S]) {
	g := p.g
	key := checkpoint.Config{ThreadID: p.cfg.ThreadID, Namespace: p.cfg.Namespace}
	g.cacheMu.Lock()
	defer g.cacheMu.Unlock()
	if !p.ok || p.failed() || p.cfg.CheckpointID == "" {
		delete(g.cache, key)
		return
	}
	if len(g.cache) >= maxCachedThreads {
		for k := range g.cache {
			delete(g.cache, k)
			break
		}
	}
	g.cache[key] = &threadState[S]{cpID: p.cfg.CheckpointID, state: r.state, barriers: r.barriers, waiting: r.waiting, version: r.version, chain: p.chain, step: p.lastStep}
}

// record notes one key's writes of the current step for the next checkpoint.
func (p *persister[S]) record(k AnyKey[S], s *S, ws []Write[S], version uint64) error {
	name := k.Name()
	p.dirty = true
	if p.versions == nil {
		p.versions = make(map[string]uint64, 2)
	}
	p.versions[name] = version
	whole := k.isLastValue()
	for _, w := range ws {
		if w.isOverwrite() {
			whole = true
		}
	}
	if p.durability == DurabilityExit {
		if p.held == nil {
			p.held = map[AnyKey[S]]*heldWrites[S]{}
		}
		h := p.held[k]
		if h == nil {
			h = &heldWrites[S]{}
			p.held[k] = h
		}
		if whole || h.whole {
			h.whole, h.ws = true, nil
		} else {
			h.ws = append(h.ws, ws...)
		}
		return nil
	}
	if whole {
		b, err := k.encodeValue(s, p.codec)
		if err != nil {
			return fmt.Errorf("graph: encoding key %q: %w", name, err)
		}
		p.diffSize += len(b) - len(p.values[name])
		if p.values == nil {
			p.values = make(map[string][]byte, 2)
		}
		p.values[name] = b
		for _, d := range p.deltas[name] {
			p.diffSize -= len(d)
		}
		delete(p.deltas, name)
		delete(p.chain.tails, name)
		return nil
	}
	start := len(p.deltas[name])
	for _, w := range ws {
		b, err := k.encodeWrite(w, p.codec)
		if err != nil {
			return fmt.Errorf("graph: encoding a write to key %q: %w", name, err)
		}
		if p.deltas == nil {
			p.deltas = make(map[string][][]byte, 2)
		}
		p.deltas[name] = append(p.deltas[name], b)
		p.diffSize += len(b)
	}
	p.addTail(k, s, ws, p.deltas[name][start:])
	return nil
}

// commit ends a step: it makes the step's checkpoint and stores it as the
// durability mode says, and names the next tasks. With sync and async
// durability a task is named after the checkpoint that planned it, so the
// name survives a restart; with exit durability, which stores one
// checkpoint at the end, after the run and the step.
func (p *persister[S]) commit(r *runner[S], source checkpoint.Source, ran, next []*task[S]) error {
	p.dirty = true
	for _, t := range ran {
		if t.node.idx >= 0 {
			p.seenLog = append(p.seenLog, seenEntry{t.node.name, r.version})
		}
	}
	if err := p.recordBarriers(r); err != nil {
		return err
	}
	md := checkpoint.Metadata{Source: source, Step: r.step, RunID: p.runID, Extra: p.extra}
	p.lastStep = r.step
	if p.durability == DurabilityExit {
		// One checkpoint stores the run: Seen is its last step's.
		p.seenLog = p.seenLog[:0]
		for _, t := range ran {
			if t.node.idx >= 0 {
				p.seenLog = append(p.seenLog, seenEntry{t.node.name, r.version})
			}
		}
		for i, t := range next {
			t.cx.tc.name(p.runID, r.step, i)
		}
		p.pendMeta, p.pendNext = md, next
		return nil
	}
	id := checkpoint.NewID()
	for i, t := range next {
		t.cx.tc.name(id, -1, i)
	}
	tasks, err := p.planned(next)
	if err != nil {
		return err
	}
	p.head = id
	return p.store(p.build(r, id, tasks), md)
}

type seenEntry struct {
	node    string
	version uint64
}

// planned describes the next tasks for a checkpoint.
func (p *persister[S]) planned(next []*task[S]) ([]checkpoint.Task, error) {
	if len(next) == 0 {
		return nil, nil
	}
	tasks := make([]checkpoint.Task, len(next))
	for i, t := range next {
		tasks[i] = checkpoint.Task{ID: t.cx.tc.taskID(), Node: t.node.name}
		if t.push {
			b, err := p.codec.Marshal(&t.input)
			if err != nil {
				return nil, fmt.Errorf("graph: encoding the Send to %q: %w", t.node.name, err)
			}
			tasks[i].Input = b
		}
	}
	return tasks, nil
}

func (p *persister[S]) recordBarriers(r *runner[S]) error {
	for ji, j := range p.g.joins {
		seen := []string{}
		for pos, ok := range r.barriers[ji] {
			if ok {
				seen = append(seen, j.from[pos])
			}
		}
		b, err := p.codec.Marshal(seen)
		if err != nil {
			return err
		}
		if p.values == nil {
			p.values = map[string][]byte{}
		}
		p.values[j.channel] = b
	}
	if r.waiting != nil {
		names := []string{}
		for i, w := range r.waiting {
			if w {
				names = append(names, p.g.nodes[i].name)
			}
		}
		b, err := p.codec.Marshal(names)
		if err != nil {
			return err
		}
		if p.values == nil {
			p.values = map[string][]byte{}
		}
		p.values[deferredChannel] = b
	}
	return nil
}

// build turns the diff since the last stored checkpoint into a checkpoint,
// or into a full one when the chain asks for it (see maxChain).
func (p *persister[S]) build(r *runner[S], id string, tasks []checkpoint.Task) *checkpoint.Checkpoint {
	var seen map[string]map[string]uint64
	if len(p.seenLog) > 0 {
		seen = make(map[string]map[string]uint64, len(p.seenLog))
		for _, e := range p.seenLog {
			seen[e.node] = map[string]uint64{"*": e.version}
		}
	}
	cp := &checkpoint.Checkpoint{
		V: checkpoint.Version, ID: id, ParentID: p.cfg.CheckpointID, TS: time.Now().UTC(),
		Values: p.values, Deltas: p.deltas, Versions: p.versions, Seen: seen, Tasks: tasks,
	}
	full := cp.ParentID == "" || p.chain.length+1 >= maxChain ||
		p.chain.bytesSinceFull+p.diffSize >= max(p.chain.fullBytes, minFullBytes)
	if full {
		if err := p.fill(r, cp); err != nil {
			// Stay incremental; the next step tries again.
			full = false
			p.fail(err)
		}
	}
	if full {
		p.chain = chainInfo{fullBytes: cp.Size(), tails: p.chain.tails}
	} else {
		p.chain.length++
		p.chain.bytesSinceFull += p.diffSize
	}
	p.resetDiff()
	return cp
}

// fill makes cp a full checkpoint: every key's whole value.
func (p *persister[S]) fill(r *runner[S], cp *checkpoint.Checkpoint) error {
	values := make(map[string][]byte, len(p.g.keys)+len(p.g.joins))
	var tails map[string]*fullTail
	for _, k := range p.g.keys {
		name := k.Name()
		b, spliced := p.spliceFull(k, &r.state)
		if !spliced {
			var err error
			if b, err = k.encodeValue(&r.state, p.codec); err != nil {
				return fmt.Errorf("graph: encoding key %q: %w", name, err)
			}
		}
		values[name] = b
		if t := p.newTail(k, &r.state, b); t != nil {
			if tails == nil {
				tails = map[string]*fullTail{}
			}
			tails[name] = t
		}
	}
	for _, j := range p.g.joins {
		values[j.channel] = cp.Values[j.channel]
	}
	if b, ok := cp.Values[deferredChannel]; ok {
		values[deferredChannel] = b
	}
	versions := make(map[string]uint64, len(p.g.keys))
	for _, k := range p.g.keys {
		versions[k.Name()] = r.version
	}
	cp.Values, cp.Deltas, cp.Versions, cp.Full = values, nil, versions, true
	p.chain.tails = tails
	return nil
}

// A full checkpoint holds every key's whole value, and encoding a long
// thread's message list again at every full checkpoint is what made them
// cost more than the steps between. For a slice key whose value since the
// last full checkpoint only grew, the JSON of the whole value is the last
// full checkpoint's JSON for the key with the JSON of what was appended
// since spliced in before its closing bracket, so a full checkpoint costs a
// copy. What was appended is noted at each step with its JSON: the step's
// writes, already encoded as the checkpoint's deltas, when the value grew by
// exactly them; otherwise (a reducer that gives messages ids, say) the new
// elements, encoded then. Whether the value only grew is checked at the
// full checkpoint, not assumed from the reducer: its elements must be, bit
// for bit, the elements of the last full value (a copy kept for this) and
// then those noted since. A reducer that keeps, drops, reorders or replaces
// elements fails the check and the value is encoded as before.

// tailMin is the smallest encoded value worth keeping a tail for: below it,
// encoding the value is as cheap as checking it.
const tailMin = 1 << 10

// fullTail is what spliceFull needs about one slice key.
type fullTail struct {
	base  []byte        // the key's JSON in the last full checkpoint
	value reflect.Value // a copy of the slice base encodes
	n     int           // the value's length when last noted
	// What the value grew by since, in order: slices of elements and
	// their JSON.
	writes []reflect.Value
	enc    [][]byte
}

// slicer is implemented by every *Key: its value as a reflect.Value.
type slicer[S any] interface{ valueOf(s *S) reflect.Value }

func (k *Key[S, T]) valueOf(s *S) reflect.Value { return reflect.ValueOf(any(*k.ptr(s))) }

// addTail notes what key k's value in s grew by since it was last noted,
// given the writes that made it grow and their JSON.
func (p *persister[S]) addTail(k AnyKey[S], s *S, ws []Write[S], enc [][]byte) {
	name := k.Name()
	t := p.chain.tails[name]
	if t == nil {
		return
	}
	sk, ok := k.self().(slicer[S])
	var cur reflect.Value
	if ok {
		cur = sk.valueOf(s)
	}
	if !cur.IsValid() || cur.Type() != t.value.Type() || cur.Len() < t.n {
		delete(p.chain.tails, name)
		return
	}
	grown := cur.Slice(t.n, cur.Len())
	off := 0
	for _, w := range ws {
		wv := reflect.ValueOf(w.value())
		if wv.Kind() != reflect.Slice || wv.Type() != cur.Type() || off+wv.Len() > grown.Len() || !sameElems(grown.Slice(off, off+wv.Len()), wv) {
			off = -1
			break
		}
		off += wv.Len()
	}
	if off == grown.Len() {
		for i, w := range ws {
			t.writes = append(t.writes, reflect.ValueOf(w.value()))
			t.enc = append(t.enc, enc[i])
		}
	} else {
		c := reflect.New(cur.Type())
		c.Elem().Set(reflect.MakeSlice(cur.Type(), grown.Len(), grown.Len()))
		reflect.Copy(c.Elem(), grown)
		b, err := p.codec.Marshal(c.Interface())
		if err != nil {
			delete(p.chain.tails, name)
			return
		}
		t.writes = append(t.writes, c.Elem())
		t.enc = append(t.enc, b)
	}
	t.n = cur.Len()
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonAppenderType  = reflect.TypeFor[checkpoint.JSONAppender]()
)

// spliceable reports whether the JSON codec encodes a slice of type t as
// "[" + its elements' JSON joined by commas + "]": it does unless the slice
// type encodes itself, or is a byte slice (a base64 string).
func spliceable(t reflect.Type) bool {
	if t.Kind() != reflect.Slice || t.Elem().Kind() == reflect.Uint8 || t.Elem().Size() == 0 {
		return false
	}
	for _, m := range []reflect.Type{jsonMarshalerType, textMarshalerType, jsonAppenderType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return false
		}
	}
	return true
}

// newTail starts the tail of key k after a full checkpoint that stored its
// value in s as b, or returns nil when k's value cannot be spliced.
func (p *persister[S]) newTail(k AnyKey[S], s *S, b []byte) *fullTail {
	sk, ok := k.self().(slicer[S])
	if !ok || p.codec != checkpoint.JSON || len(b) < tailMin || b[0] != '[' || b[len(b)-1] != ']' {
		return nil
	}
	v := sk.valueOf(s)
	if !v.IsValid() || !spliceable(v.Type()) {
		return nil
	}
	c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	reflect.Copy(c, v)
	return &fullTail{base: b, value: c, n: v.Len()}
}

// spliceFull returns the JSON of key k's value in s built from its tail, or
// false when the value is not the tail's value followed by its writes.
func (p *persister[S]) spliceFull(k AnyKey[S], s *S) ([]byte, bool) {
	t := p.chain.tails[k.Name()]
	sk, ok := k.self().(slicer[S])
	if t == nil || !ok {
		return nil, false
	}
	cur := sk.valueOf(s)
	if !cur.IsValid() || cur.Type() != t.value.Type() {
		return nil, false
	}
	n, off := t.value.Len(), t.value.Len()
	size := len(t.base) + 1
	for i, w := range t.writes {
		n += w.Len()
		size += len(t.enc[i])
	}
	if n != cur.Len() || !sameElems(cur.Slice(0, off), t.value) {
		return nil, false
	}
	for _, w := range t.writes {
		if !sameElems(cur.Slice(off, off+w.Len()), w) {
			return nil, false
		}
		off += w.Len()
	}
	out := make([]byte, 0, size)
	out = append(out, t.base[:len(t.base)-1]...)
	for i, e := range t.enc {
		switch {
		case t.writes[i].Len() == 0:
			continue
		case len(e) < 2 || e[0] != '[' || e[len(e)-1] != ']':
			return nil, false
		}
		if out[len(out)-1] != '[' {
			out = append(out, ',')
		}
		out = append(out, e[1:len(e)-1]...)
	}
	return append(out, ']'), true
}

// sameElems reports whether two slices of one type hold the same bits.
func sameElems(a, b reflect.Value) bool {
	if a.Len() != b.Len() {
		return false
	}
	if a.Len() == 0 {
		return true
	}
	size := a.Len() * int(a.Type().Elem().Size())
	return bytes.Equal(unsafe.Slice((*byte)(a.UnsafePointer()), size), unsafe.Slice((*byte)(b.UnsafePointer()), size))
}

func (p *persister[S]) store(cp *checkpoint.Checkpoint, md checkpoint.Metadata) error {
	parent := p.cfg
	p.cfg.CheckpointID = cp.ID
	p.dirty = false
	return p.do(func(ctx context.Context) error {
		if p.codec != checkpoint.JSON {
			// Another codec's bytes may be buffers it reuses: the saver copies them.
			_, err := p.saver.Put(ctx, parent, cp, md)
			return err
		}
		// cp's bytes were encoded for it by the JSON codec, which returns fresh memory, and nothing
		// writes to them.
		_, err := checkpoint.Adopt(ctx, p.saver, parent, cp, md)
		return err
	})
}

func (p *persister[S]) flushExit() error {
	if !p.dirty {
		return nil
	}
	if err := p.encodeHeld(); err != nil {
		return err
	}
	tasks, err := p.planned(p.pendNext)
	if err != nil {
		return err
	}
	p.head = checkpoint.NewID()
	return p.store(p.build(p.r, p.head, tasks), p.pendMeta)
}

// encodeHeld turns the writes an exit-durability run held into the
// checkpoint's values and deltas. A thread's first checkpoint is full, so
// then nothing needs encoding here.
func (p *persister[S]) encodeHeld() error {
	held := p.held
	p.held = nil
	if p.cfg.CheckpointID == "" {
		return nil
	}
	for k, h := range held {
		name := k.Name()
		if !h.whole {
			var enc [][]byte
			size := 0
			for _, w := range h.ws {
				b, err := k.encodeWrite(w, p.codec)
				if err != nil {
					return fmt.Errorf("graph: encoding a write to key %q: %w", name, err)
				}
				enc = append(enc, b)
				if size += len(b); size > heldBudget {
					enc = nil
					break
				}
			}
			if enc != nil {
				if p.deltas == nil {
					p.deltas = map[string][][]byte{}
				}
				p.deltas[name] = enc
				p.diffSize += size
				p.addTail(k, &p.r.state, h.ws, enc)
				continue
			}
		}
		delete(p.chain.tails, name)
		b, err := k.encodeValue(&p.r.state, p.codec)
		if err != nil {
			return fmt.Errorf("graph: encoding key %q: %w", name, err)
		}
		if p.values == nil {
			p.values = map[string][]byte{}
		}
		p.values[name] = b
		p.diffSize += len(b)
	}
	return nil
}

// saveTasks stores, against the checkpoint that planned the step, what each
// task of an unfinished step left: its writes and routes when it succeeded,
// its error, or its interrupts.
func (p *persister[S]) saveTasks(r *runner[S], tasks []*task[S]) error {
	if p.durability == DurabilityExit {
		if err := p.flushExit(); err != nil {
			return err
		}
	}
	cfg := p.cfg
	cfg.CheckpointID = p.head
	for _, t := range tasks {
		if t.done {
			continue
		}
		var ws []checkpoint.PendingWrite
		switch {
		case t.err != nil:
			ws = []checkpoint.PendingWrite{{TaskID: t.cx.tc.taskID(), Index: errorWriteIndex, Channel: checkpoint.ErrorChannel, Value: []byte(t.err.Error())}}
		case t.interrupted:
			b, err := p.codec.Marshal(t.cx.tc.raised)
			if err != nil {
				return err
			}
			ws = []checkpoint.PendingWrite{{TaskID: t.cx.tc.taskID(), Index: interruptIndex, Channel: checkpoint.InterruptChannel, Value: b}}
		default:
			var err error
			if ws, err = p.taskWrites(t); err != nil {
				return err
			}
		}
		id := t.cx.tc.taskID()
		if err := p.do(func(ctx context.Context) error { return p.saver.PutWrites(ctx, cfg, id, ws) }); err != nil {
			return err
		}
	}
	return nil
}

type sendRecord[S any] struct {
	Node  string `json:"node"`
	State S      `json:"state"`
}

func (p *persister[S]) taskWrites(t *task[S]) ([]checkpoint.PendingWrite, error) {
	ws := make([]checkpoint.PendingWrite, 0, len(t.upd.writes)+1+len(t.sends))
	for i, w := range t.upd.writes {
		b, err := w.key().encodeWrite(w, p.codec)
		if err != nil {
			return nil, err
		}
		ch := w.key().Name()
		if w.isOverwrite() {
			ch = overwritePrefix + ch
		}
		ws = append(ws, checkpoint.PendingWrite{TaskID: t.cx.tc.taskID(), Index: i, Channel: ch, Value: b})
	}
	names := make([]string, len(t.routes))
	for i, ri := range t.routes {
		names[i] = p.g.nodes[ri].name
	}
	b, err := p.codec.Marshal(names)
	if err != nil {
		return nil, err
	}
	ws = append(ws, checkpoint.PendingWrite{TaskID: t.cx.tc.taskID(), Index: len(t.upd.writes), Channel: routeChannel, Value: b})
	for j, s := range t.sends {
		b, err := p.codec.Marshal(sendRecord[S](s))
		if err != nil {
			return nil, err
		}
		ws = append(ws, checkpoint.PendingWrite{TaskID: t.cx.tc.taskID(), Index: len(t.upd.writes) + 1 + j, Channel: sendChannel, Value: b})
	}
	return ws, nil
}

// saveResume stores the resume values a task will read, so that a run that
// fails after resuming still has them.
func (p *persister[S]) saveResume(r *runner[S], t *task[S]) error {
	b, err := p.codec.Marshal(t.cx.tc.resume)
	if err != nil {
		return err
	}
	cfg := p.cfg
	cfg.CheckpointID = p.head
	ws := []checkpoint.PendingWrite{{TaskID: t.cx.tc.taskID(), Index: resumeWriteIndex, Channel: checkpoint.ResumeChannel, Value: b}}
	id := t.cx.tc.taskID()
	return p.do(func(ctx context.Context) error { return p.saver.PutWrites(ctx, cfg, id, ws) })
}

// commandTaskPrefix names the pending writes of a command given on resume:
// the writes, gotos and Sends of a run's input applied to a pending step.
const commandTaskPrefix = "__command__:"

// dropReplayedWrites forgets the pending writes of a checkpoint that a run
// replays: they belong to the branch that went on from it, not to the new
// one (its resume values above all).
// It reports whether the run replays an older checkpoint.
func (p *persister[S]) dropReplayedWrites(ctx context.Context, st *loadedState[S]) (bool, error) {
	if p.r.rc.cfg.CheckpointID == "" {
		return false, nil
	}
	latest, err := p.saver.Get(ctx, checkpoint.Config{ThreadID: p.cfg.ThreadID, Namespace: p.cfg.Namespace})
	if err != nil {
		return false, fmt.Errorf("graph: thread %q: %w", p.cfg.ThreadID, err)
	}
	if latest.Checkpoint.ID == st.tuple.Checkpoint.ID {
		return false, nil
	}
	st.tuple.PendingWrites = nil
	return true, nil
}

// applyCommand applies a run's input to the step it resumes, as LangGraph's
// Command(update=..., goto=...) on resume: the writes reach the state before
// the pending tasks run again, gotos and Sends add tasks to the step. The
// command is saved with the step, so a later resume applies it again.
func (r *runner[S]) applyCommand(tasks []*task[S], input Update[S]) ([]*task[S], error) {
	if len(input.writes) == 0 && len(input.gotos) == 0 && len(input.sends) == 0 {
		return tasks, nil
	}
	cmd := &task[S]{node: &nodeSpec[S]{name: START, idx: -1}, upd: input}
	cmd.cx.tc = taskCtx{run: &r.shared, node: START, step: r.step, id: commandTaskPrefix + r.rc.cfg.RunID}
	if err := r.route(cmd, false); err != nil {
		return nil, err
	}
	ws, err := r.p.taskWrites(cmd)
	if err != nil {
		return nil, err
	}
	cfg := r.p.cfg
	cfg.CheckpointID = r.p.head
	id := cmd.cx.tc.id
	if err := r.p.do(func(ctx context.Context) error { return r.p.saver.PutWrites(ctx, cfg, id, ws) }); err != nil {
		return nil, err
	}
	return r.takeCommand(tasks, cmd)
}

// takeCommand folds a command's writes into the state and adds the tasks its
// routes and Sends ask for to the pending step.
func (r *runner[S]) takeCommand(tasks []*task[S], cmd *task[S]) ([]*task[S], error) {
	if err := r.apply([]*task[S]{cmd}); err != nil {
		return nil, err
	}
	for _, ni := range cmd.routes {
		if slices.ContainsFunc(tasks, func(t *task[S]) bool { return !t.push && t.node.idx == ni }) {
			continue
		}
		t := &task[S]{node: r.g.nodes[ni]}
		t.cx.tc = taskCtx{run: &r.shared, node: t.node.name, id: r.p.head + "/" + strconv.Itoa(len(tasks))}
		tasks = append(tasks, t)
	}
	for _, snd := range cmd.sends {
		t := &task[S]{node: r.g.byName[snd.Node], input: snd.State, push: true}
		t.cx.tc = taskCtx{run: &r.shared, node: t.node.name, id: r.p.head + "/" + strconv.Itoa(len(tasks))}
		tasks = append(tasks, t)
	}
	// The step's writes apply in task order, which is name order for
	// triggered nodes, then Sends, as in a step the engine planned.
	slices.SortStableFunc(tasks, func(a, b *task[S]) int {
		switch {
		case a.push || b.push:
			return boolRank(a.push) - boolRank(b.push)
		}
		return a.node.rank - b.node.rank
	})
	view := r.g.view(&r.state)
	for _, t := range tasks {
		if !t.push {
			t.input = view
		}
	}
	return tasks, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// restoreTasks rebuilds the tasks a checkpoint planned, with what its pending
// writes say about each: done (its writes are reapplied, it does not run
// again), interrupted (with the resume values given so far), or to run. A
// command given on an earlier resume is applied again.
func (r *runner[S]) restoreTasks(st *loadedState[S]) ([]*task[S], error) {
	g, p := r.g, r.p
	cp := st.tuple.Checkpoint
	tasks := make([]*task[S], 0, len(cp.Tasks))
	byID := make(map[string]*task[S], len(cp.Tasks))
	view := g.view(&r.state)
	var cmds []*task[S]
	for _, w := range st.tuple.PendingWrites {
		if strings.HasPrefix(w.TaskID, commandTaskPrefix) && byID[w.TaskID] == nil {
			t := &task[S]{node: &nodeSpec[S]{name: START, idx: -1}}
			t.cx.tc = taskCtx{run: &r.shared, node: START, id: w.TaskID}
			byID[w.TaskID] = t
			cmds = append(cmds, t)
		}
	}
	for _, ct := range cp.Tasks {
		n, ok := g.byName[ct.Node]
		if !ok {
			return nil, fmt.Errorf("graph: thread %q: checkpoint %s plans node %q, which this graph lacks", p.cfg.ThreadID, cp.ID, ct.Node)
		}
		t := &task[S]{node: n, input: view}
		t.cx.tc = taskCtx{run: &r.shared, node: n.name, id: ct.ID}
		if ct.Input != nil {
			t.push = true
			var in S
			if err := p.codec.Unmarshal(ct.Input, &in); err != nil {
				return nil, fmt.Errorf("graph: decoding the Send to %q: %w", ct.Node, err)
			}
			t.input = in
		}
		tasks = append(tasks, t)
		byID[ct.ID] = t
	}
	pw := slices.Clone(st.tuple.PendingWrites)
	slices.SortStableFunc(pw, func(a, b checkpoint.PendingWrite) int { return a.Index - b.Index })
	failed := map[string]bool{}
	for _, w := range pw {
		if w.Channel == checkpoint.ErrorChannel {
			failed[w.TaskID] = true
		}
	}
	for _, w := range pw {
		t := byID[w.TaskID]
		if t == nil || failed[w.TaskID] {
			continue
		}
		switch {
		case w.Channel == checkpoint.InterruptChannel:
			if err := p.codec.Unmarshal(w.Value, &t.cx.tc.raised); err != nil {
				return nil, err
			}
		case w.Channel == checkpoint.ResumeChannel:
			if err := p.codec.Unmarshal(w.Value, &t.cx.tc.resume); err != nil {
				return nil, err
			}
		case w.Channel == routeChannel:
			var names []string
			if err := p.codec.Unmarshal(w.Value, &names); err != nil {
				return nil, err
			}
			for _, name := range names {
				if err := r.addRoute(t, name); err != nil {
					return nil, err
				}
			}
			t.done = true
		case w.Channel == sendChannel:
			var s sendRecord[S]
			if err := p.codec.Unmarshal(w.Value, &s); err != nil {
				return nil, err
			}
			t.sends = append(t.sends, Send[S](s))
		default:
			name, over := strings.CutPrefix(w.Channel, overwritePrefix)
			ki, ok := g.keyByName[name]
			if !ok {
				return nil, fmt.Errorf("graph: pending write to key %q, which this graph does not declare", name)
			}
			wr, err := g.keys[ki].decodeWrite(p.codec, w.Value, over)
			if err != nil {
				return nil, err
			}
			t.upd.writes = append(t.upd.writes, wr)
		}
	}
	for _, t := range tasks {
		if t.done {
			t.cx.tc.raised = nil // answered on an earlier resume
		} else {
			t.upd.writes = nil
		}
	}
	var err error
	for _, c := range cmds {
		if tasks, err = r.takeCommand(tasks, c); err != nil {
			return nil, err
		}
	}
	return tasks, nil
}
