package studio_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/studio"
)

func TestMountRoutes(t *testing.T) {
	// The API behind the page answers with its own marker.
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"api":"`+r.Method+` `+r.URL.Path+`"}`)
	})
	ts := httptest.NewServer(studio.Mount(api))
	defer ts.Close()
	for _, c := range []struct {
		method, path string
		code         int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", "<title>agentgraph studio</title>"},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/studio/app.js", 200, "text/javascript; charset=utf-8", `import { API, APIError, enc } from "./api.js";`},
		{"GET", "/studio/studio.css", 200, "text/css; charset=utf-8", ":root"},
		{"GET", "/studio/", 404, "", ""},
		{"GET", "/studio/nothing.js", 404, "", ""},
		// A path that climbs out is cleaned, then it is the API's.
		{"GET", "/studio/../go.mod", 200, "application/json", `{"api":"GET /go.mod"}`},
		{"POST", "/", 200, "application/json", `{"api":"POST /"}`},
		{"GET", "/threads/t1/state", 200, "application/json", `{"api":"GET /threads/t1/state"}`},
		{"POST", "/threads/search", 200, "application/json", `{"api":"POST /threads/search"}`},
		{"GET", "/studiox", 200, "application/json", `{"api":"GET /studiox"}`},
		{"GET", "/ok", 200, "application/json", `{"api":"GET /ok"}`},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d; want %d", c.method, c.path, resp.StatusCode, c.code)
			continue
		}
		if c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s: Content-Type %q; want %q", c.method, c.path, resp.Header.Get("Content-Type"), c.ctype)
		}
		if !strings.Contains(string(b), c.body) {
			t.Errorf("%s %s: body %.120q lacks %q", c.method, c.path, b, c.body)
		}
	}
}

func TestPageHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	studio.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	h := rec.Result().Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", h.Get("X-Content-Type-Options"))
	}
}

// The page loads only its own files: every script and stylesheet it names
// is served, and none comes from another host.
func TestAssetsAreLocal(t *testing.T) {
	h := studio.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	_, index := get("/")
	var refs []string
	for _, attr := range []string{`src="`, `href="`} {
		for rest := index; ; {
			i := strings.Index(rest, attr)
			if i < 0 {
				break
			}
			rest = rest[i+len(attr):]
			refs = append(refs, rest[:strings.IndexByte(rest, '"')])
		}
	}
	seen := map[string]bool{}
	for len(refs) > 0 {
		ref := refs[0]
		refs = refs[1:]
		if ref == "data:," || strings.HasPrefix(ref, "#") || seen[ref] {
			continue
		}
		seen[ref] = true
		if !strings.HasPrefix(ref, studio.Prefix) {
			t.Errorf("the page loads %q, not one of its own files", ref)
			continue
		}
		code, body := get(ref)
		if code != 200 {
			t.Errorf("GET %s: %d", ref, code)
		}
		// Follow the modules' own imports.
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "import ") {
				if i := strings.Index(line, `from "./`); i >= 0 {
					name := line[i+len(`from "./`):]
					refs = append(refs, studio.Prefix+name[:strings.IndexByte(name, '"')])
				}
			}
		}
	}
	for _, name := range []string{"app.js", "api.js", "dom.js", "files.js", "graph.js", "messages.js", "tree.js", "studio.css"} {
		if !seen[studio.Prefix+name] {
			t.Errorf("%s is never loaded by the page", name)
		}
	}
}
