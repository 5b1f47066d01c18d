package sandboxd

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"unicode/utf8"

	"github.com/agentgraph/agentgraph/sandbox"
)

type fileReadBody struct {
	OK       bool   `json:"ok"`
	Type     string `json:"type"`
	Success  bool   `json:"success"`
	Path     string `json:"path"`
	Encoding string `json:"encoding"`
	Size     int    `json:"size"`
	Content  string `json:"content"`
}

type fileWrittenBody struct {
	OK       bool   `json:"ok"`
	Type     string `json:"type"`
	Success  bool   `json:"success"`
	Path     string `json:"path"`
	Encoding string `json:"encoding"`
	Size     int    `json:"size"`
}

type fileListBody struct {
	OK      bool               `json:"ok"`
	Type    string             `json:"type"`
	Success bool               `json:"success"`
	Path    string             `json:"path"`
	Files   []sandbox.FileInfo `json:"files"`
}

type fileDeletedBody struct {
	OK      bool   `json:"ok"`
	Type    string `json:"type"`
	Success bool   `json:"success"`
	Path    string `json:"path"`
}

// displayPath is the absolute sandbox path a request's path stands for (the backend has checked it).
func displayPath(p string) string {
	if abs, err := sandbox.ResolvePath(p); err == nil {
		return abs
	}
	return p
}

func (s *Server) encoding(rq *request, e string) (string, bool) {
	switch e {
	case "":
		return "utf8", true
	case "utf8", "base64":
		return e, true
	}
	s.fail(rq, http.StatusBadRequest, "invalid_encoding", "encoding must be utf8 or base64", nil)
	return "", false
}

// readFile serves GET /sandboxes/{id}/files?path=&encoding=utf8|base64, for files of up to 5 MiB.
func (s *Server) readFile(rq *request, id string) {
	q := rq.r.URL.Query()
	enc, ok := s.encoding(rq, q.Get("encoding"))
	if !ok {
		return
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	p := q.Get("path")
	data, err := sb.ReadFile(rq.r.Context(), p)
	if err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	body := fileReadBody{OK: true, Type: "file.read", Success: true, Path: displayPath(p), Encoding: enc, Size: len(data)}
	if enc == "base64" {
		body.Content = base64.StdEncoding.EncodeToString(data)
	} else {
		if !utf8.Valid(data) {
			s.fail(rq, http.StatusBadRequest, "invalid_encoding", body.Path+" is not UTF-8 text: read it with encoding=base64", nil)
			return
		}
		body.Content = string(data)
	}
	s.reply(rq, http.StatusOK, body)
}

// writeFile serves PUT /sandboxes/{id}/files {path, content, encoding}.
func (s *Server) writeFile(rq *request, id string) {
	var req struct {
		Path     *string `json:"path"`
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	// base64 takes 4 bytes for 3, and the JSON around it is small.
	if _, ok := s.decode(rq, s.maxFile/3*4+s.maxBody, &req, false); !ok {
		return
	}
	if req.Path == nil || req.Content == nil {
		s.fail(rq, http.StatusBadRequest, "invalid_request", "path and content are required", nil)
		return
	}
	enc, ok := s.encoding(rq, req.Encoding)
	if !ok {
		return
	}
	data := []byte(*req.Content)
	if enc == "base64" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(*req.Content); err != nil {
			s.fail(rq, http.StatusBadRequest, "invalid_encoding", "content is not valid base64", nil)
			return
		}
	}
	if int64(len(data)) > s.maxFile {
		s.fail(rq, http.StatusRequestEntityTooLarge, "file_too_large",
			fmt.Sprintf("the file is %d bytes; this server takes at most %d", len(data), s.maxFile), map[string]any{"limit": s.maxFile})
		return
	}
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	if err := sb.WriteFile(rq.r.Context(), *req.Path, data); err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.reply(rq, http.StatusOK, fileWrittenBody{OK: true, Type: "file.written", Success: true, Path: displayPath(*req.Path), Encoding: enc, Size: len(data)})
}

// listFiles serves GET /sandboxes/{id}/files/list?path=DIR (default: home).
func (s *Server) listFiles(rq *request, id string) {
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	l, ok := sb.(sandbox.FileLister)
	if !ok {
		s.backendError(rq, errors.ErrUnsupported, "")
		return
	}
	dir := rq.r.URL.Query().Get("path")
	if dir == "" {
		dir = sandbox.Home
	}
	files, err := l.ListFiles(rq.r.Context(), dir)
	if err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	if files == nil {
		files = []sandbox.FileInfo{}
	}
	s.reply(rq, http.StatusOK, fileListBody{OK: true, Type: "file.list", Success: true, Path: displayPath(dir), Files: files})
}

// removeFile serves DELETE /sandboxes/{id}/files?path=.
func (s *Server) removeFile(rq *request, id string) {
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	rm, ok := sb.(sandbox.FileRemover)
	if !ok {
		s.backendError(rq, errors.ErrUnsupported, "")
		return
	}
	p := rq.r.URL.Query().Get("path")
	if err := rm.RemoveFile(rq.r.Context(), p); err != nil {
		s.backendError(rq, err, "sandbox "+id)
		return
	}
	s.reply(rq, http.StatusOK, fileDeletedBody{OK: true, Type: "file.deleted", Success: true, Path: displayPath(p)})
}

// artifact serves GET /sandboxes/{id}/artifacts?path=: the file's bytes, up to 50 MiB.
func (s *Server) artifact(rq *request, id string) {
	sb, ok := s.owned(rq, id)
	if !ok {
		return
	}
	p := rq.r.URL.Query().Get("path")
	lw := &lazyWriter{rq: rq, name: path.Base(displayPath(p))}
	var err error
	if d, ok := sb.(sandbox.Downloader); ok {
		_, err = d.Download(rq.r.Context(), p, lw)
	} else {
		var data []byte
		if data, err = sb.ReadFile(rq.r.Context(), p); err == nil {
			_, err = lw.Write(data)
		}
	}
	switch {
	case err != nil && !lw.started:
		s.backendError(rq, err, "sandbox "+id)
	case err != nil:
		// Part of the file went out already: break the connection so that the client sees it incomplete.
		s.logger.Warn("sandboxd: download broke off", "err", err, "requestId", rq.id)
		panic(http.ErrAbortHandler)
	case !lw.started:
		lw.Write(nil) // an empty file
	}
}

// lazyWriter sends the success headers at the first write, so that an error before any byte can still be
// answered with an envelope.
type lazyWriter struct {
	rq      *request
	name    string
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		h := l.rq.w.Header()
		h.Set("Content-Type", "application/octet-stream")
		if l.name != "" && l.name != "/" && l.name != "." && !bytes.ContainsAny([]byte(l.name), "\"\r\n") {
			h.Set("Content-Disposition", `attachment; filename="`+l.name+`"`)
		}
		l.rq.status = http.StatusOK
		l.rq.w.WriteHeader(http.StatusOK)
	}
	return l.rq.w.Write(p)
}
