package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Interruption is a pause of a run: raised by a node with Interrupt, or by a
// static breakpoint (When is "before" or "after" then, and Value is nil).
//
// Namespace is "" for an interrupt of the graph itself, and the path of the
// subgraph run for one raised inside a subgraph: "node:taskID" per level,
// levels joined by "|", as LangGraph's checkpoint_ns.
type Interruption struct {
	ID        string `json:"id"`
	Value     any    `json:"value,omitempty"`
	Node      string `json:"node"`
	TaskID    string `json:"task_id,omitempty"`
	Namespace string `json:"ns,omitempty"`
	When      string `json:"when,omitempty"`
}

// interruptSignal is the error Interrupt returns to pause the run; the node
// returns it (wrapped or not) and the runtime recognises it.
type interruptSignal struct{ in Interruption }

func (e *interruptSignal) Error() string {
	return fmt.Sprintf("graph: interrupt %s in node %q: return this error from the node to pause the run", e.in.ID, e.in.Node)
}

// ErrNotInRun is returned by Interrupt called outside a node of a run.
var ErrNotInRun = errors.New("graph: Interrupt called outside a running node")

// Interrupt pauses the run to ask for input. The first time it returns an
// error that the node must return (pausing the run, with value shown to the
// caller in Result.Interrupts and the stream). When the caller resumes with
// graph.WithResume(v), the node runs again from its start and this call returns
// v. A node may call Interrupt several times: the k-th call returns the k-th
// resume value. Without a saver the run ends with the interrupts in its
// Result, and cannot be resumed.
func Interrupt(ctx context.Context, value any) (any, error) {
	t, ok := ctx.Value(taskKey{}).(*taskCtx)
	if !ok {
		return nil, ErrNotInRun
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.calls
	t.calls++
	if k < len(t.resume) {
		return t.resume[k], nil
	}
	id := t.lockedID()
	in := Interruption{ID: interruptID(t.run.cfg.Namespace+"|"+id, k), Value: value, Node: t.node, TaskID: id, Namespace: t.run.cfg.Namespace}
	t.raised = append(t.raised, in)
	return nil, &interruptSignal{in: in}
}

// IsInterrupt reports whether err is (or wraps) the error Interrupt returns
// to pause a run, so code between a node and Interrupt (a tool runner, a
// retry loop) can pass it on instead of treating it as a failure.
func IsInterrupt(err error) bool {
	var s *interruptSignal
	return errors.As(err, &s)
}

// interruptID is stable for a task and the index of its Interrupt call, so a
// resumed run finds the same ids.
func interruptID(taskID string, k int) string {
	sum := sha256.Sum256([]byte(taskID + "#" + strconv.Itoa(k)))
	return hex.EncodeToString(sum[:16])
}

// interrupts collects the interrupts raised in the step and saves what a
// resume needs: the writes of the tasks that finished and the interrupts.
func (r *runner[S]) interrupts(tasks []*task[S]) []Interruption {
	var out []Interruption
	for _, t := range tasks {
		if t.interrupted {
			out = append(out, t.cx.tc.raised...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if r.p != nil {
		if err := r.routeEach(tasks); err == nil {
			if err := r.p.saveTasks(r, tasks); err != nil {
				r.p.fail(err)
			}
		} else {
			r.p.fail(err)
		}
	}
	return out
}

// assignResume gives the interrupted tasks of a resumed step their resume
// values. The root run turns WithResume and WithResumeByID into values by
// interrupt id, checked against every pending interrupt, its subgraphs'
// included; a subgraph run takes the values meant for its own tasks from
// the same map.
func (r *runner[S]) assignResume(tasks []*task[S]) error {
	if r.parent == nil {
		m, err := r.resumeMap(tasks)
		if err != nil {
			return err
		}
		r.shared.resume = m
	}
	if len(r.shared.resume) == 0 {
		return nil
	}
	for _, t := range tasks {
		own := false
		for _, in := range t.cx.tc.raised {
			if in.Namespace != r.rc.cfg.Namespace {
				continue
			}
			v, ok := r.shared.resume[in.ID]
			if !ok {
				continue
			}
			v, err := r.roundTrip(v)
			if err != nil {
				return err
			}
			t.cx.tc.resume = append(t.cx.tc.resume, v)
			own = true
		}
		if own {
			if err := r.p.saveResume(r, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// resumeMap turns the run's resume option into values by interrupt id.
func (r *runner[S]) resumeMap(tasks []*task[S]) (map[string]any, error) {
	rs := r.rc.resume
	if rs == nil || rs.none {
		return nil, nil
	}
	var pending []Interruption
	for _, t := range tasks {
		pending = append(pending, t.cx.tc.raised...)
	}
	if rs.byID == nil {
		switch len(pending) {
		case 0:
			// A static breakpoint: nothing asks for the value.
			return nil, nil
		case 1:
			return map[string]any{pending[0].ID: rs.value}, nil
		}
		return nil, fmt.Errorf("graph: WithResume: %d interrupts are pending: answer each by id with graph.WithResumeByID", len(pending))
	}
	unknown := 0
	for id := range rs.byID {
		if !slices.ContainsFunc(pending, func(in Interruption) bool { return in.ID == id }) {
			unknown++
		}
	}
	if unknown > 0 {
		return nil, fmt.Errorf("graph: WithResumeByID: %d of %d ids match no pending interrupt (read them from the thread's state or the run's Result.Interrupts)", unknown, len(rs.byID))
	}
	return rs.byID, nil
}

// roundTrip passes a resume value through the codec, so that a node sees the
// same value whether its run resumed in this process or after a restart.
func (r *runner[S]) roundTrip(v any) (any, error) {
	b, err := r.p.codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("graph: encoding the resume value: %w", err)
	}
	var out any
	if err := r.p.codec.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("graph: decoding the resume value: %w", err)
	}
	return out, nil
}
