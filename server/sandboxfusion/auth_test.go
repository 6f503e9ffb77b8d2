package sandboxfusion_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// With keys, a request is some tenant's: by a bearer key, an X-API-Key,
// or the key as the password of Basic authentication (a URL with
// user:KEY@, what Python's requests makes of it); with no key, the
// operator's keyless tenant's, or refused.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	admit := func(ctx context.Context, tenant string) (func(), error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tenant)
		return func() {}, nil
	}
	withKeyless := newServer(t, sandboxfusion.Options{Keys: keys{"k-alice": "alice"}, KeylessTenant: "rl", Admit: admit})
	keyed := newServer(t, sandboxfusion.Options{Keys: keys{"k-alice": "alice"}})
	const body = `{"code": "print(1)"}`
	userinfo := func(base, key string) string {
		u, _ := url.Parse(base)
		u.User = url.UserPassword("sf", key)
		return u.String()
	}
	for _, c := range []struct {
		name   string
		url    string
		header []string
		code   int
		tenant string
	}{
		{"bearer", withKeyless.URL, []string{"Authorization", "Bearer k-alice"}, 200, "alice"},
		{"X-API-Key", withKeyless.URL, []string{"X-API-Key", "k-alice"}, 200, "alice"},
		{"key in the URL", userinfo(withKeyless.URL, "k-alice"), nil, 200, "alice"},
		{"no key: the keyless tenant", withKeyless.URL, nil, 200, "rl"},
		{"an unknown key is refused, keyless tenant or not", withKeyless.URL, []string{"Authorization", "Bearer nope"}, 401, ""},
		{"an unknown key in the URL", userinfo(withKeyless.URL, "nope"), nil, 401, ""},
		{"no key and no keyless tenant", keyed.URL, nil, 401, ""},
		{"another scheme", keyed.URL, []string{"Authorization", "Digest x"}, 401, ""},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		code, resp := post(t, c.url+"/run_code", body, c.header...)
		mu.Lock()
		got := seen
		mu.Unlock()
		if code != c.code {
			t.Errorf("%s: HTTP %d, want %d: %v", c.name, code, c.code, resp)
			continue
		}
		if c.code == 401 {
			if d, _ := resp["detail"].(string); d == "" {
				t.Errorf("%s: no detail: %v", c.name, resp)
			}
			continue
		}
		if resp["status"] != "Success" {
			t.Errorf("%s: %v", c.name, resp)
		}
		if c.url != keyed.URL && (len(got) != 1 || got[0] != c.tenant) {
			t.Errorf("%s: ran as %v, want %s", c.name, got, c.tenant)
		}
	}
	// Ping needs no key (a health check).
	resp, err := http.Get(keyed.URL + "/v1/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("ping without a key: HTTP %d", resp.StatusCode)
	}
}

// The surface is mounted by the server as authenticating on its own, and
// puts the tenant in the request's context as the server does.
func TestSurface(t *testing.T) {
	t.Parallel()
	h, err := sandboxfusion.New(sandboxfusion.Options{Runtime: runtime(t), KeylessTenant: "rl",
		Admit: func(ctx context.Context, tenant string) (func(), error) {
			if got, ok := server.TenantFrom(ctx); !ok || got != tenant || tenant != "rl" {
				t.Errorf("the run's context has tenant %q, %v; admitted as %q", got, ok, tenant)
			}
			return func() {}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sf := h.Surface()
	if !sf.OwnAuth || sf.Name != "sandboxfusion" || strings.Join(sf.Patterns, ",") != "POST /run_code,POST /run_jupyter,GET /v1/ping" {
		t.Errorf("surface %+v", sf)
	}
	mux := http.NewServeMux()
	for _, p := range sf.Patterns {
		mux.Handle(p, sf.Handler)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/run_code", strings.NewReader(`{"code": "print(2)"}`)))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"Success"`) {
		t.Errorf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
}
