package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/server"
)

const aliceKey, bobKey = "alice-key-0123456789", "bob-key-0123456789ab"

// whoami is a surface that answers the tenant it was called as.
func whoami() server.Surface {
	return server.Surface{Name: "whoami", Patterns: []string{"GET /v1/whoami"},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, ok := server.TenantFrom(r.Context())
			if !ok {
				t = "(none)"
			}
			server.WriteJSON(w, http.StatusOK, map[string]string{"tenant": t})
		})}
}

func newServer(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	if opts.Keys == nil && !opts.InsecureLocal {
		ks, err := server.ParseKeys([]string{"alice:" + aliceKey, "bob:" + server.HashKey("x:" + bobKey)[2:]})
		if err != nil {
			t.Fatal(err)
		}
		opts.Keys = ks
	}
	opts.Surfaces = append(opts.Surfaces, whoami())
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, path string, header map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = "localhost" // as local tools send it (insecure local mode refuses other names)
	for k, v := range header {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// errorCode reads the error body's code, failing if it is not one.
func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct{ Error server.Error }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code == "" {
		t.Fatalf("status %d: body is not a JSON error: %q (%v)", w.Code, w.Body, err)
	}
	return body.Error.Code
}

func TestAuth(t *testing.T) {
	h := newServer(t, server.Options{}).Handler()
	for _, c := range []struct {
		name   string
		header map[string]string
		status int
		tenant string
	}{
		{"no key", nil, 401, ""},
		{"unknown key", map[string]string{"Authorization": "Bearer not-a-key-at-all-xx"}, 401, ""},
		{"wrong scheme", map[string]string{"Authorization": "Basic " + aliceKey}, 401, ""},
		{"bearer", map[string]string{"Authorization": "Bearer " + aliceKey}, 200, "alice"},
		{"lower-case bearer", map[string]string{"Authorization": "bearer " + aliceKey}, 200, "alice"},
		{"X-API-Key", map[string]string{"X-API-Key": aliceKey}, 200, "alice"},
		{"key given by its hash", map[string]string{"Authorization": "Bearer " + bobKey}, 200, "bob"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := do(t, h, "GET", "/v1/whoami", c.header, "")
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			if c.status == 401 {
				if code := errorCode(t, w); code != server.CodeAuth {
					t.Errorf("code %q", code)
				}
				if w.Header().Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate")
				}
				return
			}
			var got map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got["tenant"] != c.tenant {
				t.Errorf("tenant %v (%v), want %s", got, err, c.tenant)
			}
		})
	}
	// The server's own routes need no key.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
		if w := do(t, h, "GET", p, nil, ""); w.Code != 200 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
}

func TestInsecureLocal(t *testing.T) {
	ks, _ := server.ParseKeys([]string{"alice:" + aliceKey})
	h := newServer(t, server.Options{InsecureLocal: true, Keys: ks}).Handler()
	check := func(header map[string]string, status int, tenant string) {
		t.Helper()
		w := do(t, h, "GET", "/v1/whoami", header, "")
		if w.Code != status || (status == 200 && !strings.Contains(w.Body.String(), `"`+tenant+`"`)) {
			t.Fatalf("status %d %s, want %d %s", w.Code, w.Body, status, tenant)
		}
	}
	check(nil, 200, server.DefaultTenant)
	check(map[string]string{"Authorization": "Bearer " + aliceKey}, 200, "alice")
	check(map[string]string{"Authorization": "Bearer wrong-key-0123456789"}, 401, "")
	// Credentials the server cannot read are not none.
	check(map[string]string{"Authorization": "Basic " + aliceKey}, 401, "")
	check(map[string]string{"Authorization": "Bearer"}, 401, "")
	check(map[string]string{"X-API-Key": ""}, 200, server.DefaultTenant)
	// This machine's browsers do not drive a keyless server: not through
	// DNS rebinding (a foreign Host), not by a cross-site request.
	check(map[string]string{"Host": "rebound.example:8080"}, 403, "")
	if w := do(t, h, "POST", "/v1/whoami", map[string]string{"Sec-Fetch-Site": "cross-site"}, ""); w.Code != 403 || errorCode(t, w) != server.CodeForbidden {
		t.Errorf("a cross-site POST: %d %s", w.Code, w.Body)
	}
}

// TestInsecureLocalWithoutKeys: a keyless local server has no key to
// check a claim against, so whatever credentials a client sends (E2B's
// SDK insists on an E2B_API_KEY) it is the default tenant's.
func TestInsecureLocalWithoutKeys(t *testing.T) {
	for _, keys := range []server.Keys{nil, &server.KeySet{}} {
		h := newServer(t, server.Options{InsecureLocal: true, Keys: keys}).Handler()
		for _, header := range []map[string]string{nil, {"X-API-Key": "anything"}, {"Authorization": "Bearer anything"}, {"Authorization": "Basic x"}} {
			w := do(t, h, "GET", "/v1/whoami", header, "")
			if w.Code != 200 || !strings.Contains(w.Body.String(), `"`+server.DefaultTenant+`"`) {
				t.Errorf("keys %v, %v: status %d %s, want 200 %s", keys, header, w.Code, w.Body, server.DefaultTenant)
			}
		}
	}
}

func TestRefusesWithoutKeys(t *testing.T) {
	if _, err := server.New(server.Options{}); !errors.Is(err, server.ErrNoKeys) {
		t.Errorf("no keys: %v, want ErrNoKeys", err)
	}
	empty, _ := server.ParseKeys(nil)
	if _, err := server.New(server.Options{Keys: empty}); !errors.Is(err, server.ErrNoKeys) {
		t.Errorf("an empty key set: %v, want ErrNoKeys", err)
	}
	s, err := server.New(server.Options{InsecureLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		if err := s.ListenAndServe(context.Background(), addr); !errors.Is(err, server.ErrNoKeys) {
			t.Errorf("insecure local mode on %s: %v, want refused", addr, err)
		}
	}
}

func TestParseKeys(t *testing.T) {
	for _, bad := range [][]string{
		{"alice"}, {"alice:"}, {":" + aliceKey}, {"al ice:" + aliceKey}, {"alice:short"},
		{"alice:sha256:abcd"}, {"alice:" + aliceKey, "bob:" + aliceKey},
	} {
		if _, err := server.ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		} else if strings.Contains(err.Error(), aliceKey) {
			t.Errorf("ParseKeys(%q): the error shows the key: %v", bad, err)
		}
	}
	ks, err := server.ParseKeys([]string{"alice:" + aliceKey})
	if err != nil {
		t.Fatal(err)
	}
	if tn, ok := ks.Tenant(aliceKey); !ok || tn != "alice" {
		t.Errorf("Tenant = %q %v", tn, ok)
	}
	if _, ok := ks.Tenant(aliceKey + "x"); ok {
		t.Error("a longer key matched")
	}
	if h := server.HashKey("alice:" + aliceKey); strings.Contains(h, aliceKey) || !strings.HasPrefix(h, "alice:sha256:") {
		t.Errorf("HashKey = %q", h)
	}
}

func TestUnmatchedRoutesAnswerJSON(t *testing.T) {
	h := newServer(t, server.Options{}).Handler()
	if w := do(t, h, "GET", "/nowhere", nil, ""); w.Code != 404 || errorCode(t, w) != server.CodeNotFound {
		t.Errorf("unknown path: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "POST", "/v1/whoami", nil, "")
	if w.Code != 405 || errorCode(t, w) != "method_not_allowed" || !strings.Contains(w.Header().Get("Allow"), "GET") {
		t.Errorf("wrong method: %d %s %v", w.Code, w.Body, w.Header())
	}
}

func TestRateLimit(t *testing.T) {
	h := newServer(t, server.Options{Tenants: server.NewTenants(server.TenantLimits{Rate: 1, Burst: 2})}).Handler()
	alice := map[string]string{"Authorization": "Bearer " + aliceKey}
	bob := map[string]string{"Authorization": "Bearer " + bobKey}
	for i := range 2 {
		if w := do(t, h, "GET", "/v1/whoami", alice, ""); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := do(t, h, "GET", "/v1/whoami", alice, "")
	if w.Code != 429 || errorCode(t, w) != server.CodeRateLimited || w.Header().Get("Retry-After") == "" {
		t.Fatalf("past the burst: %d %s %v", w.Code, w.Body, w.Header())
	}
	// Another tenant has its own budget.
	if w := do(t, h, "GET", "/v1/whoami", bob, ""); w.Code != 200 {
		t.Errorf("bob: %d", w.Code)
	}
}

func TestTenantLimits(t *testing.T) {
	tn := server.NewTenants(server.TenantLimits{Executions: 1, Sessions: 2})
	release, err := tn.StartExecution("alice")
	if err != nil {
		t.Fatal(err)
	}
	var le *server.LimitError
	if _, err := tn.StartExecution("alice"); !errors.As(err, &le) || le.RetryAfter <= 0 {
		t.Fatalf("second execution: %v", err)
	}
	if r, err := tn.StartExecution("bob"); err != nil {
		t.Fatalf("bob: %v", err)
	} else {
		r()
	}
	release()
	release() // twice is once
	r1, err1 := tn.StartExecution("alice")
	r2, err2 := tn.StartExecution("alice")
	if err1 != nil || err2 == nil {
		t.Fatalf("after release: %v, %v (a double release must not give two places)", err1, err2)
	}
	r1()
	_ = r2
}

func TestRequestIDAndBodyCap(t *testing.T) {
	echo := server.Surface{Name: "echo", Patterns: []string{"POST /v1/echo"}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if server.DecodeJSON(w, r, &v) {
			server.WriteJSON(w, 200, v)
		}
	})}
	h := newServer(t, server.Options{InsecureLocal: true, MaxBody: 64, Surfaces: []server.Surface{echo}}).Handler()
	w := do(t, h, "POST", "/v1/echo", map[string]string{"X-Request-Id": "abc-123"}, `{"a":1}`)
	if w.Code != 200 || w.Header().Get("X-Request-Id") != "abc-123" {
		t.Errorf("%d %v", w.Code, w.Header())
	}
	if w := do(t, h, "POST", "/v1/echo", nil, `{"a":"`+strings.Repeat("x", 100)+`"}`); w.Code != 413 || errorCode(t, w) != server.CodeTooLarge {
		t.Errorf("oversized: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "POST", "/v1/echo", nil, `{"a":`); w.Code != 400 || errorCode(t, w) != server.CodeBadRequest {
		t.Errorf("malformed: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "POST", "/v1/echo", nil, `{} {}`); w.Code != 400 {
		t.Errorf("two values: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "POST", "/v1/echo", map[string]string{"Content-Type": "text/plain"}, `{}`); w.Code != 415 {
		t.Errorf("text/plain: %d %s", w.Code, w.Body)
	}
	if id := do(t, h, "GET", "/healthz", nil, "").Header().Get("X-Request-Id"); len(id) != 16 {
		t.Errorf("generated id %q", id)
	}
}

func TestSurfaceConflicts(t *testing.T) {
	if _, err := server.New(server.Options{InsecureLocal: true, Surfaces: []server.Surface{whoami(), whoami()}}); err == nil || !strings.Contains(err.Error(), "whoami") {
		t.Errorf("two surfaces on one pattern: %v", err)
	}
	doc := &server.APIDoc{Paths: map[string]any{"/healthz": map[string]any{}}}
	sf := whoami()
	sf.OpenAPI = doc
	if _, err := server.New(server.Options{InsecureLocal: true, Surfaces: []server.Surface{sf}}); err == nil {
		t.Error("a surface documenting the server's own path was accepted")
	}
}

// TestGracefulShutdown: a request running when the shutdown begins
// finishes within the grace period; /readyz says 503 meanwhile; a request
// still running past the grace period is cut off.
func TestGracefulShutdown(t *testing.T) {
	started := make(chan struct{}, 2)
	slow := server.Surface{Name: "slow", Patterns: []string{"GET /v1/slow"}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		d, _ := time.ParseDuration(r.URL.Query().Get("d"))
		select {
		case <-time.After(d):
			server.WriteJSON(w, 200, map[string]string{"done": "yes"})
		case <-r.Context().Done():
		}
	})}
	hooked := make(chan struct{}, 2)
	run := func(grace, d time.Duration) (status int, err error, ready int) {
		s := newServer(t, server.Options{InsecureLocal: true, Grace: grace, Surfaces: []server.Surface{slow},
			OnShutdown: []func(){func() { hooked <- struct{}{} }}})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.Serve(ctx, ln) }()
		url := "http://" + ln.Addr().String()
		type answer struct {
			status int
			err    error
		}
		got := make(chan answer, 1)
		go func() {
			resp, err := http.Get(url + "/v1/slow?d=" + d.String())
			if err != nil {
				got <- answer{0, err}
				return
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			got <- answer{resp.StatusCode, err}
		}()
		<-started
		cancel()
		select {
		case <-hooked: // called as the shutdown begins, the request still running
		case <-got:
			t.Fatal("the request ended before the shutdown hook was called")
		case <-time.After(5 * time.Second):
			t.Fatal("the shutdown hook was not called")
		}
		time.Sleep(50 * time.Millisecond)
		w := do(t, s.Handler(), "GET", "/readyz", nil, "")
		a := <-got
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		return a.status, a.err, w.Code
	}
	if status, err, ready := run(5*time.Second, 300*time.Millisecond); status != 200 || err != nil || ready != 503 {
		t.Errorf("within the grace period: status %d, %v; readyz %d", status, err, ready)
	}
	if status, err, _ := run(200*time.Millisecond, 10*time.Second); status == 200 && err == nil {
		t.Errorf("past the grace period: the request was not cut off")
	}
}
