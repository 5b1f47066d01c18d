package sandboxer

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Sandbox is one sandbox of the API. Besides sandbox.Sandbox it implements Downloader, FileLister,
// FileRemover and Starter, and streams a command's output with ExecStream.
type Sandbox struct {
	b  *Backend
	id string
}

func (s *Sandbox) ID() string { return s.id }

// String names the sandbox; the key is never shown.
func (s *Sandbox) String() string { return "sandboxer.Sandbox(" + s.id + ")" }

// GoString is String, so that %#v shows no key either.
func (s *Sandbox) GoString() string { return s.String() }

func (s *Sandbox) path(sub string) string { return "/sandboxes/" + url.PathEscape(s.id) + sub }

// Info returns the sandbox's description (GET /sandboxes/{id}).
func (s *Sandbox) Info(ctx context.Context) (sandbox.Info, error) {
	w, err := s.get(ctx)
	if err != nil {
		return sandbox.Info{}, err
	}
	return w.info(), nil
}

func (s *Sandbox) get(ctx context.Context) (*wireSandbox, error) {
	var out sandboxResponse
	if err := s.b.do(ctx, call{method: http.MethodGet, path: s.path(""), retry: true}, &out); err != nil {
		return nil, err
	}
	if out.Sandbox.State == "cancelled" {
		return nil, fmt.Errorf("%w: %s was cancelled before it started", sandbox.ErrNotFound, s.id)
	}
	return &out.Sandbox, nil
}

// waitReady polls until the sandbox has left the states of starting up (and, after a resume, is running).
func (s *Sandbox) waitReady(ctx context.Context, resuming bool) error {
	for {
		w, err := s.get(ctx)
		if err != nil {
			return err
		}
		if w.State == "error" {
			why := "no reason given"
			if w.Error != nil {
				why = *w.Error
			}
			return fmt.Errorf("sandboxer: sandbox %s failed to start: %s", s.id, why)
		}
		if !settling(w.State) && (!resuming || mapState(w.State) == sandbox.StateRunning) {
			return nil
		}
		t := time.NewTimer(s.b.cfg.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sandboxer: sandbox %s is still %s: %w", s.id, w.State, ctx.Err())
		case <-t.C:
		}
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// commandRequest builds the wire request. The API has no per-command environment, so the variables become
// exports in front of the command, which works with any server.
func newCommandRequest(command string, opts sandbox.ExecOptions) (commandRequest, error) {
	if len(opts.Env) > 0 {
		keys := make([]string, 0, len(opts.Env))
		for k := range opts.Env {
			if !envName.MatchString(k) {
				return commandRequest{}, fmt.Errorf("%w: environment variable name %q", sandbox.ErrInvalidArgument, k)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var sb strings.Builder
		sb.WriteString("export")
		for _, k := range keys {
			sb.WriteString(" " + k + "=" + shellQuote(opts.Env[k]))
		}
		command = sb.String() + "\n" + command
	}
	return commandRequest{Command: command, Cwd: opts.Cwd}, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Exec runs command and waits for it (POST /sandboxes/{id}/commands). The timeout goes to the server in whole
// seconds, rounded up. If ctx ends first, the request is abandoned, which ends the command on
// agentgraph-sandboxd; no partial output comes back (ExecStream gives it as it comes).
func (s *Sandbox) Exec(ctx context.Context, command string, opts sandbox.ExecOptions) (sandbox.ExecResult, error) {
	timeout, err := sandbox.ValidateExecOptions(opts)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	req, err := newCommandRequest(command, opts)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	req.TimeoutSeconds = seconds(timeout)
	start := time.Now()
	var out commandFinished
	if err := s.b.do(ctx, call{method: http.MethodPost, path: s.path("/commands"), body: req, timeout: timeout}, &out); err != nil {
		return sandbox.ExecResult{}, err
	}
	r := sandbox.ExecResult{Stdout: out.Stdout, Stderr: out.Stderr, TimedOut: out.TimedOut,
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated, ExitCode: exitCode(out.ExitCode, out.Signal)}
	if out.StartedAt != nil && out.FinishedAt != nil && out.FinishedAt.After(*out.StartedAt) {
		r.Duration = out.FinishedAt.Sub(*out.StartedAt)
	} else {
		r.Duration = time.Since(start)
	}
	return r, nil
}

// exitCode maps the wire's nullable exit code: null (timed out, or killed without a code) is -1, unless a
// signal name says which signal, which is 128+n as in a shell.
func exitCode(code *int, signal *string) int {
	if code != nil {
		return *code
	}
	if signal != nil {
		if n, ok := signals[strings.TrimPrefix(strings.ToUpper(*signal), "SIG")]; ok {
			return 128 + n
		}
	}
	return -1
}

var signals = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9,
	"SEGV": 11, "PIPE": 13, "ALRM": 14, "TERM": 15, "XCPU": 24, "XFSZ": 25}

// Start runs command detached (POST /sandboxes/{id}/commands with detached) and returns its process id as
// the command id. A zero opts.Timeout sends no timeout, leaving it to the server.
func (s *Sandbox) Start(ctx context.Context, command string, opts sandbox.ExecOptions) (string, error) {
	req, err := newCommandRequest(command, opts)
	if err != nil {
		return "", err
	}
	if opts.Timeout != 0 {
		t, err := sandbox.ValidateExecOptions(opts)
		if err != nil {
			return "", err
		}
		req.TimeoutSeconds = seconds(t)
	}
	req.Detached = true
	var out commandStarted
	if err := s.b.do(ctx, call{method: http.MethodPost, path: s.path("/commands"), body: req}, &out); err != nil {
		return "", err
	}
	return strconv.FormatInt(out.ProcessID, 10), nil
}

func (s *Sandbox) commandPath(commandID string) (string, error) {
	n, err := strconv.ParseInt(commandID, 10, 64)
	if err != nil || n < 1 {
		return "", fmt.Errorf("%w: command %q in %s (command ids of this backend are process ids, 1, 2, ...)",
			sandbox.ErrNotFound, commandID, s.id)
	}
	return s.path("/commands/" + strconv.FormatInt(n, 10)), nil
}

// Status reports on a detached command (GET /sandboxes/{id}/commands/{processId}).
func (s *Sandbox) Status(ctx context.Context, commandID string) (sandbox.CommandStatus, error) {
	p, err := s.commandPath(commandID)
	if err != nil {
		return sandbox.CommandStatus{}, err
	}
	var out commandStatus
	if err := s.b.do(ctx, call{method: http.MethodGet, path: p, retry: true}, &out); err != nil {
		return sandbox.CommandStatus{}, err
	}
	st := sandbox.CommandStatus{ID: commandID, Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: -1}
	if out.Command != nil {
		st.Command = *out.Command
	}
	if out.ExitCode != nil {
		st.ExitCode = *out.ExitCode
	}
	switch {
	case out.Status == "running" || (out.Status == "" && out.Running):
		st.State = sandbox.CommandRunning
	case out.Status == "exited" || out.Status == "":
		st.State = sandbox.CommandExited
	default:
		st.State = sandbox.CommandState(out.Status)
	}
	return st, nil
}

// Kill ends a detached command and everything it started (POST /sandboxes/{id}/commands/{processId}/kill,
// which agentgraph-sandboxd serves; the hosted API may not).
func (s *Sandbox) Kill(ctx context.Context, commandID string) error {
	p, err := s.commandPath(commandID)
	if err != nil {
		return err
	}
	return s.b.do(ctx, call{method: http.MethodPost, path: p + "/kill"}, nil)
}

// WriteFile creates or replaces a file (PUT /sandboxes/{id}/files, base64).
func (s *Sandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	body := fileWrite{Path: path, Content: base64.StdEncoding.EncodeToString(data), Encoding: "base64"}
	return s.b.do(ctx, call{method: http.MethodPut, path: s.path("/files"), body: body}, nil)
}

// ReadFile returns a file of at most sandbox.MaxReadFileSize bytes (GET /sandboxes/{id}/files, base64).
func (s *Sandbox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var out fileRead
	q := url.Values{"path": {path}, "encoding": {"base64"}}
	if err := s.b.do(ctx, call{method: http.MethodGet, path: s.path("/files"), query: q, retry: true}, &out); err != nil {
		return nil, err
	}
	data := []byte(out.Content)
	if out.Encoding != "utf8" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(out.Content); err != nil {
			return nil, fmt.Errorf("sandboxer: read %s: bad base64 in the answer: %w", path, err)
		}
	}
	if len(data) > sandbox.MaxReadFileSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d: use Download", sandbox.ErrTooLarge, path, len(data), sandbox.MaxReadFileSize)
	}
	return data, nil
}

// Download copies a file of at most sandbox.MaxDownloadSize bytes to w (GET /sandboxes/{id}/artifacts).
func (s *Sandbox) Download(ctx context.Context, path string, w io.Writer) (int64, error) {
	resp, err := s.b.send(ctx, call{method: http.MethodGet, path: s.path("/artifacts"),
		query: url.Values{"path": {path}}, retry: true, ok: []int{http.StatusOK}})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > sandbox.MaxDownloadSize {
		return 0, fmt.Errorf("%w: %s is %d bytes, more than %d", sandbox.ErrTooLarge, path, resp.ContentLength, sandbox.MaxDownloadSize)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, sandbox.MaxDownloadSize+1))
	if n > sandbox.MaxDownloadSize {
		return sandbox.MaxDownloadSize, fmt.Errorf("%w: %s is more than %d bytes", sandbox.ErrTooLarge, path, sandbox.MaxDownloadSize)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return n, fmt.Errorf("sandboxer: download %s: %w", path, err)
	}
	return n, nil
}

// ListFiles lists a directory (GET /sandboxes/{id}/files/list, which agentgraph-sandboxd serves).
func (s *Sandbox) ListFiles(ctx context.Context, dir string) ([]sandbox.FileInfo, error) {
	var out fileList
	q := url.Values{"path": {dir}}
	if err := s.b.do(ctx, call{method: http.MethodGet, path: s.path("/files/list"), query: q, retry: true}, &out); err != nil {
		return nil, err
	}
	return out.Files, nil
}

// RemoveFile removes a file or a directory tree (DELETE /sandboxes/{id}/files, which agentgraph-sandboxd
// serves).
func (s *Sandbox) RemoveFile(ctx context.Context, path string) error {
	return s.b.do(ctx, call{method: http.MethodDelete, path: s.path("/files"), query: url.Values{"path": {path}}}, nil)
}

// Stop stops the sandbox and keeps its files (POST /sandboxes/{id}/stop).
func (s *Sandbox) Stop(ctx context.Context) error {
	return s.b.do(ctx, call{method: http.MethodPost, path: s.path("/stop"), body: struct{}{}}, nil)
}

// Resume starts a stopped sandbox again (POST /sandboxes/{id}/resume) and waits until it accepts commands.
func (s *Sandbox) Resume(ctx context.Context) error {
	var out struct {
		Status  string       `json:"status"`
		Sandbox *wireSandbox `json:"sandbox"`
	}
	if err := s.b.do(ctx, call{method: http.MethodPost, path: s.path("/resume"), body: struct{}{}}, &out); err != nil {
		return err
	}
	if out.Sandbox != nil && !settling(out.Sandbox.State) && mapState(out.Sandbox.State) == sandbox.StateRunning {
		return nil
	}
	return s.waitReady(ctx, true)
}

// Delete removes the sandbox and its files (DELETE /sandboxes/{id}, confirmed with ConfirmDeleteHeader).
func (s *Sandbox) Delete(ctx context.Context) error {
	return s.b.do(ctx, call{method: http.MethodDelete, path: s.path(""), header: http.Header{ConfirmDeleteHeader: {s.id}}}, nil)
}
