package server

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ThreadFiles reads the files a thread's runs leave behind, usually in the
// thread's sandbox: *sandboxtool.Registry implements it. Names are
// slash-separated and relative to the root of the thread's files, as
// fs.ValidPath has them ("." is the root); the server never passes another.
//
// Errors wrapping fs.ErrNotExist (the thread has no files, or no such file)
// are answered with 404, fs.ErrInvalid with 400, fs.ErrPermission with 403,
// errors.ErrUnsupported with 501. Neither method may create or start what
// holds the files: reading them is not running the thread.
type ThreadFiles interface {
	// ReadDir lists the directory dir, in any order.
	ReadDir(ctx context.Context, threadID, dir string) ([]fs.FileInfo, error)
	// CopyFile writes the regular file name to w and returns how many bytes
	// it wrote.
	CopyFile(ctx context.Context, threadID, name string, w io.Writer) (int64, error)
}

// WithThreadFiles serves the files of each thread that f knows at
// GET /threads/{thread_id}/files (the list) and
// GET /threads/{thread_id}/files/content?path=NAME (one file's bytes), and
// says so in GET /info's flags (thread_files), so a client knows to ask.
func WithThreadFiles(f ThreadFiles) Option {
	return func(c *config) error { c.files = f; return nil }
}

// Listing limits: a thread's home may hold a virtualenv or a data set, and
// the list is for a person to look through.
const (
	maxListedFiles = 1000
	maxListDepth   = 8
)

// fileEntry is one entry of GET /threads/{thread_id}/files.
type fileEntry struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	IsDir    bool      `json:"is_dir"`
}

func (s *Server) fileRoutes() {
	if s.cfg.files == nil {
		return
	}
	s.handle("GET /threads/{thread_id}/files", s.listFiles)
	s.handle("GET /threads/{thread_id}/files/content", s.fileContent)
}

// listFiles answers with every file and directory under the thread's root
// (none for a thread ThreadFiles does not know),
// directories before their contents, sorted by path. Hidden directories
// (.cache, .local) are listed but not entered. A list cut at
// maxListedFiles entries says so in x-truncated.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	tid := r.PathValue("thread_id")
	out := []fileEntry{}
	truncated := false
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		infos, err := s.cfg.files.ReadDir(r.Context(), tid, dir)
		if err != nil {
			return err
		}
		slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
		for _, fi := range infos {
			if len(out) == maxListedFiles {
				truncated = true
				return nil
			}
			p := path.Join(dir, fi.Name())
			if !fs.ValidPath(p) || p == "." {
				continue // a name the backend should not have given
			}
			out = append(out, fileEntry{Path: p, Size: fi.Size(), Modified: fi.ModTime().UTC(), IsDir: fi.IsDir()})
			if fi.IsDir() && !strings.HasPrefix(fi.Name(), ".") && depth < maxListDepth {
				if err := walk(p, depth+1); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err // a directory removed meanwhile is skipped
				}
			}
		}
		return nil
	}
	// A thread with nothing to read (its runs have not made a sandbox
	// yet) has no files; content requests for it still get 404.
	if err := walk(".", 1); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return filesError(tid, ".", err)
	}
	if truncated {
		w.Header().Set("x-truncated", strconv.Itoa(maxListedFiles))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// fileContent answers with one file's bytes, typed by its extension. The
// answer is an attachment with a sandboxing Content-Security-Policy, so an
// HTML or SVG file a program wrote cannot run script in the API's origin;
// an <img> still shows an image.
func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) error {
	tid := r.PathValue("thread_id")
	name, err := cleanFilePath(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	hw := &headerWriter{w: w, header: func(h http.Header) {
		h.Set("Content-Type", ctype)
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
	}}
	if _, err := s.cfg.files.CopyFile(r.Context(), tid, name, hw); err != nil {
		if hw.wrote {
			// The status is sent; cutting the connection tells the client
			// the body is incomplete.
			panic(http.ErrAbortHandler)
		}
		return filesError(tid, name, err)
	}
	if !hw.wrote {
		hw.start() // an empty file
	}
	return nil
}

// cleanFilePath checks a ?path= value: relative to the thread's root, a
// leading "/" allowed, and no "..", "." or empty element anywhere, so it
// cannot name anything outside the root however it is joined.
func cleanFilePath(p string) (string, error) {
	name := strings.TrimPrefix(p, "/")
	if name == "" {
		return "", errorf(http.StatusBadRequest, "no path: give ?path= a file's path as the file list has it")
	}
	if !fs.ValidPath(name) || name == "." || strings.ContainsAny(name, "\\\x00") {
		return "", errorf(http.StatusBadRequest, "path %q: give a path relative to the thread's files, without '..', '.' or empty elements", p)
	}
	return name, nil
}

// filesError turns a ThreadFiles error into an answer.
func filesError(tid, name string, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return notFound("thread %s has no file %s", tid, name)
	case errors.Is(err, fs.ErrInvalid):
		return errorf(http.StatusBadRequest, "%s: %v", name, err)
	case errors.Is(err, fs.ErrPermission):
		return errorf(http.StatusForbidden, "%s: %v", name, err)
	case errors.Is(err, errors.ErrUnsupported):
		return errorf(http.StatusNotImplemented, "thread %s: %v", tid, err)
	}
	return err
}

// headerWriter sets the headers and status of a successful answer at the
// first write, so that an error before it is still answered as an error.
type headerWriter struct {
	w      http.ResponseWriter
	header func(http.Header)
	wrote  bool
}

func (hw *headerWriter) start() {
	hw.wrote = true
	hw.header(hw.w.Header())
	hw.w.WriteHeader(http.StatusOK)
}

func (hw *headerWriter) Write(p []byte) (int, error) {
	if !hw.wrote {
		hw.start()
	}
	return hw.w.Write(p)
}
