package sandboxd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// sandboxProcs are the detached commands of one sandbox, by the process id the API gave them.
type sandboxProcs struct {
	next  int64
	procs map[int64]*proc
}

// proc is a detached command: the API's process id stands for the backend's command id.
type proc struct {
	keyID     string
	backendID string
	command   string
	cwd       string
	started   time.Time
	finished  time.Time // zero until seen exited
}

type commandRequest struct {
	Command        string      `json:"command"`
	Cwd            string      `json:"cwd"`
	TimeoutSeconds json.Number `json:"timeoutSeconds"`
	Detached       bool        `json:"detached"`
	Stream         bool        `json:"stream"`
}

type finishedBody struct {
	OK              bool      `json:"ok"`
	Type            string    `json:"type"`
	Success         bool      `json:"success"`
	ExitCode        *int      `json:"exitCode"`
	Signal          *string   `json:"signal"`
	OOMKilled       bool      `json:"oomKilled"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutTruncated bool      `json:"stdoutTruncated"`
	StderrTruncated bool      `json:"stderrTruncated"`
	TimedOut        bool      `json:"timedOut"`
	Cwd             string    `json:"cwd"`
	StartedAt       time.Time `json:"startedAt"`
	FinishedAt      time.Time `json:"finishedAt"`
}

type startedBody struct {
	OK        bool      `json:"ok"`
	Type      string    `json:"type"`
	Success   bool      `json:"success"`
	ProcessID int64     `json:"processId"`
	PID       int       `json:"pid"` // 0: the backend does not say
	Command   string    `json:"command"`
	Cwd       string    `json:"cwd"`
	StartedAt time.Time `json:"startedAt"`
}

type statusBody struct {
	OK              bool       `json:"ok"`
	Type            string     `json:"type"`
	Success         bool       `json:"success"`
	ProcessID       int64      `json:"processId"`
	PID             int        `json:"pid"`
	Status          string     `json:"status"`
	Known           bool       `json:"known"`
	Running         bool       `json:"running"`
	ExitCode        *int       `json:"exitCode"`
	Signal          *string    `json:"signal"`
	OOMKilled       bool       `json:"oomKilled"`
	Command         string     `json:"command"`
	Cwd             string     `json:"cwd"`
	StartedAt       time.Time  `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt"`
	Stdout          string     `json:"stdout"`
	Stderr          string     `json:"stderr"`
	StdoutTruncated bool       `json:"stdoutTruncated"`
	StderrTruncated bool       `json:"stderrTruncated"`
}

type killedBody struct {
	OK        bool   `json:"ok"`
	Type      string `json:"type"`
	Success   bool   `json:"success"`
	ProcessID int64  `json:"processId"`
}

// frame is one line of a streamed command.
type frame struct {
	Type     string `json:"type"`
	Data     string `json:"data,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Success  *bool  `json:"success,omitempty"`
	TimedOut *bool  `json:"timedOut,omitempty"`
	Error    string `json:"error,omitempty"`
	Message  string `json:"message,omitempty"`
}

// command serves POST /sandboxes/{id}/commands: run and wait, run detached, or run and stream.
func (s *Server) command(rq *request, id string) {
	var req commandRequest
	if _, ok := s.decode(rq, s.maxBody, &req, false); !ok {
		return
	}
	if strings.TrimSpace(req.Command) == "" {
		s.fail(rq, http.StatusBadRequest, "invalid_command", "command must be a non-empty shell command", nil)
		return
	}
	var timeout time.Duration
	if req.TimeoutSeconds != "" {
		n, err := strconv.ParseInt(req.TimeoutSeconds.String(), 10, 64)
		if err != nil || n < 1 || n > 600 {
			s.fail(rq, http.StatusBadRequest, "invalid_timeout", "timeoutSeconds must be a whole number from 1 to 600", nil)
			return
		}
		timeout = time.Duration(n) * time.Second
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	if !s.acquireCommand(rq) {
		return
	}
	opts := sandbox.ExecOptions{Timeout: timeout, Cwd: req.Cwd}
	switch {
	case req.Detached:
		s.startDetached(rq, sb, req.Command, opts) // the command keeps its slot until it exits
	case req.Stream:
		defer s.releaseCommand(rq.key.ID)
		s.stream(rq, sb, req.Command, opts)
	default:
		defer s.releaseCommand(rq.key.ID)
		started := s.now()
		r, err := sb.Exec(rq.r.Context(), req.Command, opts)
		if err != nil {
			s.backendError(rq, err, "sandbox "+id)
			return
		}
		body := finishedBody{OK: true, Type: "command.finished", Success: r.ExitCode == 0 && !r.TimedOut,
			Stdout: r.Stdout, Stderr: r.Stderr, StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
			TimedOut: r.TimedOut, Cwd: cwdOf(req.Cwd), StartedAt: started.UTC(), FinishedAt: started.Add(r.Duration).UTC()}
		if !r.TimedOut {
			body.ExitCode = &r.ExitCode
		}
		s.reply(rq, http.StatusOK, body)
	}
}

// cwdOf is the absolute working directory a command runs in.
func cwdOf(cwd string) string {
	if cwd == "" {
		return sandbox.Home
	}
	if abs, err := sandbox.ResolvePath(cwd); err == nil {
		return abs
	}
	return cwd
}

// acquireCommand takes one of the key's command slots, or answers 429.
func (s *Server) acquireCommand(rq *request) bool {
	s.refreshDetached(rq.r.Context(), rq.key.ID)
	limit := s.limits(rq.key).Commands
	s.mu.Lock()
	n := s.inflight[rq.key.ID]
	for _, sp := range s.commands {
		for _, p := range sp.procs {
			if p.keyID == rq.key.ID && p.finished.IsZero() {
				n++
			}
		}
	}
	ok := n < limit
	if ok {
		s.inflight[rq.key.ID]++
	}
	s.mu.Unlock()
	if !ok {
		s.limitReached(rq, "commands", limit, n)
	}
	return ok
}

func (s *Server) releaseCommand(keyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[keyID]--; s.inflight[keyID] <= 0 {
		delete(s.inflight, keyID)
	}
}

// refreshDetached marks the key's detached commands that have exited since it last looked.
func (s *Server) refreshDetached(ctx context.Context, keyID string) {
	type pending struct {
		sandboxID string
		p         *proc
	}
	var ps []pending
	s.mu.Lock()
	for sid, sp := range s.commands {
		for _, p := range sp.procs {
			if p.keyID == keyID && p.finished.IsZero() {
				ps = append(ps, pending{sid, p})
			}
		}
	}
	s.mu.Unlock()
	for _, x := range ps {
		st, err := s.detachedStatus(ctx, x.sandboxID, x.p)
		if err == nil && st.State == sandbox.CommandRunning {
			continue
		}
		s.mu.Lock()
		if x.p.finished.IsZero() {
			x.p.finished = s.now()
		}
		s.mu.Unlock()
	}
}

func (s *Server) detachedStatus(ctx context.Context, sandboxID string, p *proc) (sandbox.CommandStatus, error) {
	sb, err := s.backend.Get(ctx, sandboxID)
	if err != nil {
		return sandbox.CommandStatus{}, err
	}
	st, ok := sb.(sandbox.Starter)
	if !ok {
		return sandbox.CommandStatus{}, errors.ErrUnsupported
	}
	return st.Status(ctx, p.backendID)
}

func (s *Server) startDetached(rq *request, sb sandbox.Sandbox, command string, opts sandbox.ExecOptions) {
	st, ok := sb.(sandbox.Starter)
	if !ok {
		s.releaseCommand(rq.key.ID)
		s.backendError(rq, errors.ErrUnsupported, "")
		return
	}
	started := s.now()
	backendID, err := st.Start(context.WithoutCancel(rq.r.Context()), command, opts)
	if err != nil {
		s.releaseCommand(rq.key.ID)
		s.backendError(rq, err, "sandbox "+sb.ID())
		return
	}
	s.mu.Lock()
	sp := s.commands[sb.ID()]
	if sp == nil {
		sp = &sandboxProcs{procs: map[int64]*proc{}}
		s.commands[sb.ID()] = sp
	}
	sp.next++
	pid := sp.next
	sp.procs[pid] = &proc{keyID: rq.key.ID, backendID: backendID, command: command, cwd: cwdOf(opts.Cwd), started: started}
	s.inflight[rq.key.ID]-- // from now on the detached command itself holds the slot
	if s.inflight[rq.key.ID] <= 0 {
		delete(s.inflight, rq.key.ID)
	}
	s.mu.Unlock()
	s.reply(rq, http.StatusOK, startedBody{OK: true, Type: "command.started", Success: true, ProcessID: pid,
		Command: command, Cwd: cwdOf(opts.Cwd), StartedAt: started.UTC()})
}

// lookupProc finds a detached command of the sandbox by its process id, or answers 404.
func (s *Server) lookupProc(rq *request, sandboxID, processID string) (int64, *proc, bool) {
	n, err := strconv.ParseInt(processID, 10, 64)
	s.mu.Lock()
	var p *proc
	if sp := s.commands[sandboxID]; sp != nil && err == nil {
		p = sp.procs[n]
	}
	s.mu.Unlock()
	if p == nil {
		s.fail(rq, http.StatusNotFound, "not_found", "no command "+processID+" in sandbox "+sandboxID, nil)
		return 0, nil, false
	}
	return n, p, true
}

// commandStatus serves GET /sandboxes/{id}/commands/{processId}?tailBytes=N.
func (s *Server) commandStatus(rq *request, id, processID string) {
	tail := -1
	if v := rq.r.URL.Query().Get("tailBytes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(rq, http.StatusBadRequest, "invalid_tail_bytes", "tailBytes must be a whole number of bytes", nil)
			return
		}
		tail = n
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	n, p, ok := s.lookupProc(rq, id, processID)
	if !ok {
		return
	}
	body := statusBody{OK: true, Type: "command.status", Success: true, ProcessID: n, Command: p.command, Cwd: p.cwd,
		StartedAt: p.started.UTC()}
	st, err := sb.(sandbox.Starter).Status(rq.r.Context(), p.backendID)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		// The backend forgot it (the sandbox was stopped, or the backend restarted).
		body.Status = "lost"
	case err != nil:
		s.backendError(rq, err, "command "+processID)
		return
	default:
		body.Known = true
		body.Stdout, body.StdoutTruncated = cut(st.Stdout, tail)
		body.Stderr, body.StderrTruncated = cut(st.Stderr, tail)
		switch st.State {
		case sandbox.CommandRunning:
			body.Status, body.Running = "running", true
		case sandbox.CommandExited:
			body.Status = "exited"
			code := st.ExitCode
			body.ExitCode = &code
		default:
			body.Status = string(st.State)
		}
	}
	if !body.Running {
		s.mu.Lock()
		if p.finished.IsZero() {
			p.finished = s.now()
		}
		f := p.finished.UTC()
		body.FinishedAt = &f
		s.mu.Unlock()
	}
	s.reply(rq, http.StatusOK, body)
}

func cut(s string, tail int) (string, bool) {
	if tail >= 0 && len(s) > tail {
		return s[len(s)-tail:], true
	}
	return s, false
}

// killCommand serves POST /sandboxes/{id}/commands/{processId}/kill, which waits until the command is gone.
func (s *Server) killCommand(rq *request, id, processID string) {
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	n, p, ok := s.lookupProc(rq, id, processID)
	if !ok {
		return
	}
	if err := sb.(sandbox.Starter).Kill(rq.r.Context(), p.backendID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		s.backendError(rq, err, "command "+processID)
		return
	}
	s.mu.Lock()
	if p.finished.IsZero() {
		p.finished = s.now()
	}
	s.mu.Unlock()
	s.reply(rq, http.StatusOK, killedBody{OK: true, Type: "command.killed", Success: true, ProcessID: n})
}

// streamPoll is how often a streamed command's output is looked at.
const streamPoll = 50 * time.Millisecond

// stream answers with NDJSON frames: started, output as it comes, then exit. With a backend that can run
// detached commands the output is read while the command runs; otherwise it all comes at the end.
func (s *Server) stream(rq *request, sb sandbox.Sandbox, command string, opts sandbox.ExecOptions) {
	if opts.Timeout == 0 {
		opts.Timeout = sandbox.DefaultExecTimeout
	}
	ctx := rq.r.Context()
	st, live := sb.(sandbox.Starter)
	var backendID string
	if live {
		var err error
		if backendID, err = st.Start(context.WithoutCancel(ctx), command, opts); err != nil {
			s.backendError(rq, err, "sandbox "+sb.ID())
			return
		}
	}
	rq.status = http.StatusOK
	rq.w.Header().Set("Content-Type", "application/x-ndjson")
	rq.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(rq.w)
	enc := json.NewEncoder(rq.w)
	send := func(f frame) bool {
		if enc.Encode(f) != nil {
			return false
		}
		return rc.Flush() == nil
	}
	exit := func(code int, timedOut bool) {
		success := code == 0 && !timedOut
		f := frame{Type: "exit", Success: &success, TimedOut: &timedOut}
		if !timedOut {
			f.ExitCode = &code
		}
		send(f)
	}
	send(frame{Type: "started"})
	if !live {
		r, err := sb.Exec(ctx, command, opts)
		if err != nil {
			send(frame{Type: "error", Error: "exec_failed", Message: err.Error()})
			return
		}
		for _, f := range []frame{{Type: "stdout", Data: r.Stdout}, {Type: "stderr", Data: r.Stderr}} {
			if f.Data != "" && !send(f) {
				return
			}
		}
		exit(r.ExitCode, r.TimedOut)
		return
	}
	var sentOut, sentErr string
	t := time.NewTicker(streamPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			st.Kill(context.WithoutCancel(ctx), backendID)
			return
		case <-t.C:
		}
		status, err := st.Status(ctx, backendID)
		if err != nil {
			if ctx.Err() == nil {
				send(frame{Type: "error", Error: "command_lost", Message: fmt.Sprintf("the command's state is gone: %v", err)})
			}
			st.Kill(context.WithoutCancel(ctx), backendID)
			return
		}
		for _, o := range []struct {
			typ  string
			sent *string
			cur  string
		}{{"stdout", &sentOut, status.Stdout}, {"stderr", &sentErr, status.Stderr}} {
			if d := delta(*o.sent, o.cur); d != "" {
				if !send(frame{Type: o.typ, Data: d}) {
					st.Kill(context.WithoutCancel(ctx), backendID)
					return
				}
			}
			*o.sent = o.cur
		}
		if status.State != sandbox.CommandRunning {
			// The backend reports a killed command (a timeout) as exit code -1.
			exit(status.ExitCode, status.ExitCode == -1)
			return
		}
	}
}

// delta is what cur, the backend's tail of the output, adds to prev, the tail sent so far. When the tail
// window has moved on, the overlap is found by the last bytes sent; output that scrolled out of the
// window between two looks is lost, as it is for the backend itself.
func delta(prev, cur string) string {
	if strings.HasPrefix(cur, prev) {
		return cur[len(prev):]
	}
	k := min(len(prev), 256)
	if k > 0 {
		if i := strings.LastIndex(cur, prev[len(prev)-k:]); i >= 0 {
			return cur[i+k:]
		}
	}
	return cur
}
