// Package web is coderun's web view, served at / by `coderun serve`: the
// runs (a list filtered by status and searched, each run as a notebook
// followed live, its pending code approved or rejected with a click),
// a form to start a task with files, the sessions (their cells, a cell
// run from the page), the review queue and the stats.
//
// It is plain HTML, CSS and JavaScript modules embedded in the binary: no
// build step, nothing fetched from elsewhere. The page holds no data of
// its own: it calls coderun's API (/v1/runs, /v1/sessions, /v1/review,
// /v1/stats) with the API key the user enters once, kept in the browser
// session's storage and sent as a bearer token; a server opened with
// --insecure-local needs none and shows the default tenant's records, the
// ones the CLI writes.
package web

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/coderun/coderun/server"
)

//go:embed static
var static embed.FS

// Patterns are the routes of the web view: the page at / and its assets
// under /web/.
var Patterns = []string{"GET /{$}", "GET /web/"}

// csp lets the page load only its own scripts and styles, talk only to
// its own server, and show images inline from data: and blob: URLs (plots
// in outputs); nothing else, and no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page and its assets.
func Handler() http.Handler {
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/web/", http.FileServerFS(assets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, assets, "index.html")
			return
		}
		files.ServeHTTP(w, r)
	})
}

// Surface is the web view mounted on the server. The page and its assets
// are the same for everyone and hold no records: they are served without
// authentication, and the page authenticates each API call it makes.
func Surface() server.Surface {
	return server.Surface{Name: "web", Patterns: Patterns, Handler: Handler(), OwnAuth: true}
}
