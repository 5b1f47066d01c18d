package studio

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is the path under which Handler serves the page's scripts and
// styles; the page itself is at "/".
const Prefix = "/studio/"

// Handler serves the page: index.html at "/" and its assets under Prefix.
// Every other path is 404. Mount it at the root of a mux, or use Mount to
// put it in front of an API handler.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		index, err := fs.ReadFile(sub, "index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(index)
	})
	mux.Handle("GET "+Prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix {
			// No directory listings.
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
	return mux
}

// csp keeps the page to its own scripts and styles and to the API of the
// origin that served it; images may be data: URLs, as programs print them.
const csp = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

// Mount returns a handler that serves the page (GET "/" and GET under
// Prefix) and passes every other request to api, so the page and the Agent
// Server share one origin:
//
//	http.ListenAndServe(addr, studio.Mount(srv))
func Mount(api http.Handler) http.Handler {
	page := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, Prefix)) {
			page.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
