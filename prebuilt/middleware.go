package prebuilt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

// CallFunc is the call of a tool: Tool.Call as a function.
type CallFunc func(ctx context.Context, args json.RawMessage) (any, error)

// Middleware wraps the calls of a tool, as an http.Handler wraps another: it
// is given the tool's spec and the call it wraps, once when Wrap builds the
// tool, and returns the call that runs in its place. The returned function
// may look at or change the arguments, decide not to call next, change what
// next returns, or time it.
type Middleware func(spec model.ToolSpec, next CallFunc) CallFunc

// Wrap returns t with middleware around its calls: the first middleware is
// the outermost, so Wrap(t, a, b) runs a, which calls b, which calls t. The
// wrapped tool has t's spec, and a ToolNode treats it as it treats t.
func Wrap(t Tool, mw ...Middleware) Tool {
	if t == nil {
		panic("prebuilt: Wrap of a nil tool")
	}
	if len(mw) == 0 {
		return t
	}
	w := &wrapped{inner: t, spec: t.Spec()}
	call := CallFunc(t.Call)
	for i := len(mw) - 1; i >= 0; i-- {
		call = mw[i](w.spec, call)
	}
	w.call = call
	return w
}

type wrapped struct {
	inner Tool
	spec  model.ToolSpec
	call  CallFunc
}

func (w *wrapped) Spec() model.ToolSpec { return w.inner.Spec() }

func (w *wrapped) Call(ctx context.Context, args json.RawMessage) (any, error) {
	return w.call(ctx, args)
}

func (w *wrapped) resultType() reflect.Type {
	if r, ok := w.inner.(resultTyped); ok {
		return r.resultType()
	}
	return nil
}

// Logging logs every call of the tool to l: at Debug level when the call
// starts, and when it ends at Info level, or at Warn level when it failed,
// with the tool's name, the call's id, the run's thread, run id, node and
// step, and how long the call took. A pause (graph.Interrupt) is logged as
// such, not as a failure. Arguments and results are not logged: they may hold
// what a log must not.
func Logging(l *slog.Logger) Middleware {
	return func(spec model.ToolSpec, next CallFunc) CallFunc {
		name := spec.Name
		return func(ctx context.Context, args json.RawMessage) (any, error) {
			attrs := callAttrs(ctx, name)
			l.LogAttrs(ctx, slog.LevelDebug, "tool call started", attrs...)
			start := time.Now()
			v, err := next(ctx, args)
			attrs = append(attrs, slog.Duration("duration", time.Since(start)))
			switch {
			case err == nil:
				l.LogAttrs(ctx, slog.LevelInfo, "tool call done", attrs...)
			case graph.IsInterrupt(err):
				l.LogAttrs(ctx, slog.LevelInfo, "tool call paused", attrs...)
			default:
				l.LogAttrs(ctx, slog.LevelWarn, "tool call failed", append(attrs, slog.String("error", err.Error()))...)
			}
			return v, err
		}
	}
}

// callAttrs names a tool call and where in a run it happens.
func callAttrs(ctx context.Context, name string) []slog.Attr {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("tool", name))
	if id := ToolCallID(ctx); id != "" {
		attrs = append(attrs, slog.String("call_id", id))
	}
	if cfg, ok := graph.ConfigFrom(ctx); ok {
		if cfg.ThreadID != "" {
			attrs = append(attrs, slog.String("thread_id", cfg.ThreadID))
		}
		if cfg.RunID != "" {
			attrs = append(attrs, slog.String("run_id", cfg.RunID))
		}
		if cfg.Node != "" {
			attrs = append(attrs, slog.String("node", cfg.Node), slog.Int("step", cfg.Step))
		}
	}
	return attrs
}

// ErrToolTimeout reports a tool call stopped by Timeout.
var ErrToolTimeout = errors.New("prebuilt: tool call timed out")

// Timeout bounds each call of the tool to d: the call's context ends after
// d, and a call that ends with an error because of it fails with an error
// matching ErrToolTimeout and context.DeadlineExceeded. A tool that ignores
// its context still runs to its end.
func Timeout(d time.Duration) Middleware {
	return func(spec model.ToolSpec, next CallFunc) CallFunc {
		name := spec.Name
		return func(ctx context.Context, args json.RawMessage) (any, error) {
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			v, err := next(tctx, args)
			if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: tool %q took longer than %v: %w", ErrToolTimeout, name, d, err)
			}
			return v, err
		}
	}
}

// ApprovalRequest is the value a tool wrapped with RequireApproval pauses
// the run with (Interruption.Value): the call waiting for a decision.
type ApprovalRequest struct {
	Tool      string          `json:"tool"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
}

// Approval is a decision on an ApprovalRequest, given as the resume value
// (graph.WithResume or graph.WithResumeByID). A decision that arrived as
// JSON (from a server's client) is read into an Approval, and the bool true
// or false stands for Approval{Approve: true} or Approval{}.
type Approval struct {
	// Approve lets the call run.
	Approve bool `json:"approve"`
	// Arguments, when set on an approved call, replace the model's.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Message, on a refused call, is what the model reads instead of a
	// result; empty means DeclinedContent.
	Message string `json:"message,omitempty"`
}

// DeclinedContent is the result of a call a person refused without a
// message of their own.
const DeclinedContent = "The user declined this tool call. Do not try it again unless the user asks for it."

// ErrBadApproval reports a resume value that is not an approval decision.
var ErrBadApproval = errors.New("prebuilt: the resume value is not an approval: resume with prebuilt.Approval{...} or a bool")

// RequireApproval pauses the run before each call of the tool, with an
// ApprovalRequest as the interrupt's value, and goes on when the run is
// resumed with an Approval: an approved call runs (with the arguments the
// decision gives, if any); a refused one does not, and the model reads the
// decision's message as the call's result. The graph needs a saver to be
// resumed. In the ReAct agent each call is a task of its own, so only the
// calls still waiting run again; see graph.WithResumeByID to answer several.
func RequireApproval() Middleware {
	return func(spec model.ToolSpec, next CallFunc) CallFunc {
		name := spec.Name
		return func(ctx context.Context, args json.RawMessage) (any, error) {
			v, err := graph.Interrupt(ctx, ApprovalRequest{Tool: name, CallID: ToolCallID(ctx), Arguments: normalize(args)})
			if err != nil {
				return nil, err
			}
			a, err := readApproval(v)
			if err != nil {
				return nil, err
			}
			if !a.Approve {
				if a.Message != "" {
					return a.Message, nil
				}
				return DeclinedContent, nil
			}
			if len(a.Arguments) > 0 {
				args = a.Arguments
			}
			return next(ctx, args)
		}
	}
}

func readApproval(v any) (Approval, error) {
	switch v := v.(type) {
	case Approval:
		return v, nil
	case *Approval:
		if v != nil {
			return *v, nil
		}
	case bool:
		return Approval{Approve: v}, nil
	case map[string]any, json.RawMessage, []byte, string:
		var raw []byte
		switch v := v.(type) {
		case json.RawMessage:
			raw = v
		case []byte:
			raw = v
		case string:
			raw = []byte(v)
		default:
			raw, _ = json.Marshal(v)
		}
		var a Approval
		if err := json.Unmarshal(raw, &a); err == nil {
			return a, nil
		}
	}
	return Approval{}, fmt.Errorf("%w (got %T)", ErrBadApproval, v)
}
