package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// Interruption is a pause of a run: raised by a node with Interrupt, or by a
// static breakpoint (When is "before" or "after" then, and Value is nil).
type Interruption struct {
	ID     string `json:"id"`
	Value  any    `json:"value,omitempty"`
	Node   string `json:"node"`
	TaskID string `json:"task_id,omitempty"`
	When   string `json:"when,omitempty"`
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
// resume value. It needs a graph compiled with a saver.
func Interrupt(ctx context.Context, value any) (any, error) {
	t, ok := ctx.Value(taskKey{}).(*taskCtx)
	if !ok {
		return nil, ErrNotInRun
	}
	if !t.run.saver {
		return nil, fmt.Errorf("graph: Interrupt in node %q: %w", t.node, ErrNoSaver)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.calls
	t.calls++
	if k < len(t.resume) {
		return t.resume[k], nil
	}
	id := t.lockedID()
	in := Interruption{ID: interruptID(id, k), Value: value, Node: t.node, TaskID: id}
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

func (r *runner[S]) assignResume(tasks []*task[S]) error {
	var pending []*task[S]
	for _, t := range tasks {
		if len(t.cx.tc.raised) > 0 {
			pending = append(pending, t)
		}
	}
	if len(pending) == 0 {
		return errors.New("graph: Resume: the thread has no pending interrupt")
	}
	rs := r.rc.resume
	if rs.byID == nil {
		if len(pending) > 1 || len(pending[0].cx.tc.raised) > 1 {
			return fmt.Errorf("graph: Resume: %d interrupts are pending: answer each by id with graph.ResumeByID", countRaised(pending))
		}
		t := pending[0]
		v, err := r.roundTrip(rs.value)
		if err != nil {
			return err
		}
		t.cx.tc.resume = append(t.cx.tc.resume, v)
		t.cx.tc.raised = nil
		return r.p.saveResume(r, t)
	}
	used := 0
	for _, t := range pending {
		for _, in := range t.cx.tc.raised {
			if v, ok := rs.byID[in.ID]; ok {
				v, err := r.roundTrip(v)
				if err != nil {
					return err
				}
				t.cx.tc.resume = append(t.cx.tc.resume, v)
				used++
			}
		}
		t.cx.tc.raised = nil
		if err := r.p.saveResume(r, t); err != nil {
			return err
		}
	}
	if used != len(rs.byID) {
		return fmt.Errorf("graph: ResumeByID: %d of %d ids match no pending interrupt", len(rs.byID)-used, len(rs.byID))
	}
	return nil
}

func countRaised[S any](ts []*task[S]) int {
	n := 0
	for _, t := range ts {
		n += len(t.cx.tc.raised)
	}
	return n
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
