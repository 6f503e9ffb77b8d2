package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coderun/coderun/web"
)

func TestServesThePageAndItsAssets(t *testing.T) {
	mux := http.NewServeMux()
	for _, p := range web.Patterns {
		mux.Handle(p, web.Handler())
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/")
	if resp.StatusCode != 200 || !strings.Contains(body, `<main id="main"`) || !strings.Contains(body, `src="/web/app.js"`) {
		t.Fatalf("/: %d %s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP: %s", csp)
	}
	for path, ct := range map[string]string{"/web/app.js": "javascript", "/web/style.css": "text/css", "/web/runs.js": "javascript"} {
		resp, body := get(path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), ct) || body == "" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	// Every module the page imports is served.
	_, app := get("/web/app.js")
	for _, mod := range []string{"api.js", "runs.js", "sessions.js", "review.js"} {
		if !strings.Contains(app, `"./`+mod+`"`) {
			continue
		}
		if resp, _ := get("/web/" + mod); resp.StatusCode != 200 {
			t.Errorf("%s: %d", mod, resp.StatusCode)
		}
	}
	if resp, _ := get("/web/nope.js"); resp.StatusCode != 404 {
		t.Errorf("an unknown asset: %d", resp.StatusCode)
	}
	if resp, _ := get("/elsewhere"); resp.StatusCode != 404 {
		t.Errorf("a path outside the view: %d", resp.StatusCode)
	}
	if s := web.Surface(); !s.OwnAuth || s.Name != "web" {
		t.Errorf("surface: %+v", s)
	}
}
