package sandboxer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Frame is one event of a streamed command, as the API's NDJSON frames are.
type Frame struct {
	// Type is "started" first, then "stdout" and "stderr" as output comes, and "exit" last.
	Type string
	// Data is the chunk of output of a stdout or stderr frame.
	Data string
	// ExitCode, Success and TimedOut are set on the exit frame; ExitCode is -1 after a timeout.
	ExitCode int
	Success  bool
	TimedOut bool
}

type wireFrame struct {
	Type     string  `json:"type"`
	Data     string  `json:"data"`
	ExitCode *int    `json:"exitCode"`
	Success  bool    `json:"success"`
	TimedOut bool    `json:"timedOut"`
	Error    string  `json:"error"`
	Message  string  `json:"message"`
	Signal   *string `json:"signal"`
}

// ExecStream runs command and yields its output as it is printed (POST /sandboxes/{id}/commands with
// stream: application/x-ndjson). The sequence ends after the exit frame, or with an error: an error frame of
// the server becomes an *APIError. Stopping the loop early abandons the request, which ends the command on
// agentgraph-sandboxd.
func (s *Sandbox) ExecStream(ctx context.Context, command string, opts sandbox.ExecOptions) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		timeout, err := sandbox.ValidateExecOptions(opts)
		if err != nil {
			yield(Frame{}, err)
			return
		}
		req, err := newCommandRequest(command, opts)
		if err != nil {
			yield(Frame{}, err)
			return
		}
		req.TimeoutSeconds, req.Stream = seconds(timeout), true
		resp, err := s.b.send(ctx, call{method: http.MethodPost, path: s.path("/commands"), body: req, timeout: timeout,
			header: http.Header{"Accept": {"application/x-ndjson"}}})
		if err != nil {
			yield(Frame{}, err)
			return
		}
		defer resp.Body.Close()
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/x-ndjson" {
			// A server that does not stream answers with the finished command: replay it as frames.
			replayFinished(ctx, resp.Body, yield)
			return
		}
		dec := json.NewDecoder(resp.Body)
		for {
			var w wireFrame
			if err := dec.Decode(&w); err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				} else if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				yield(Frame{}, fmt.Errorf("sandboxer: stream of a command in %s ended before its exit frame: %w", s.id, err))
				return
			}
			switch w.Type {
			case "error":
				yield(Frame{}, &APIError{Code: w.Error, Message: w.Message})
				return
			case "exit":
				yield(Frame{Type: "exit", ExitCode: exitCode(w.ExitCode, w.Signal), Success: w.Success, TimedOut: w.TimedOut}, nil)
				return
			}
			if !yield(Frame{Type: w.Type, Data: w.Data}, nil) {
				return
			}
		}
	}
}

func replayFinished(ctx context.Context, body io.Reader, yield func(Frame, error) bool) {
	var out commandFinished
	if err := json.NewDecoder(body).Decode(&out); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		yield(Frame{}, fmt.Errorf("sandboxer: decode the command's answer: %w", err))
		return
	}
	frames := []Frame{{Type: "started"}}
	if out.Stdout != "" {
		frames = append(frames, Frame{Type: "stdout", Data: out.Stdout})
	}
	if out.Stderr != "" {
		frames = append(frames, Frame{Type: "stderr", Data: out.Stderr})
	}
	frames = append(frames, Frame{Type: "exit", ExitCode: exitCode(out.ExitCode, out.Signal), Success: out.Success, TimedOut: out.TimedOut})
	for _, f := range frames {
		if !yield(f, nil) {
			return
		}
	}
}
