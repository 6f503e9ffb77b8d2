package app

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/coderun/coderun/server/runs"
	"github.com/coderun/coderun/store"
)

// With --insecure-local, the runs API (and so the web view) shows the
// default tenant's records: the ones the CLI writes into the same data
// directory. A key's tenant sees its own only.
func TestServeShowsTheCLIsRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the runtime needs root, which CI has")
		}
		t.Skip("skipped: the runtime needs root")
	}
	c := Defaults(env(nil))
	c.Set("server.insecure_local", "true", Flag("--insecure-local"))
	c.Set("server.api_keys", testKey, Flag("--api-keys"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
	// What `coderun ask` records: a run of the default tenant.
	cli, err := c.OpenStore(context.Background(), store.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	run, err := cli.CreateRun(context.Background(), store.NewRun{Task: "What is the mean?", Model: "openai:m", Mode: "single", Owner: store.NewOwner()})
	cli.Close()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	list := func(key string) []runs.RunView {
		t.Helper()
		req := httptest.NewRequest("GET", "/v1/runs", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		w := httptest.NewRecorder()
		srv.Server.Handler().ServeHTTP(w, req)
		var out runs.RunList
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &out) != nil {
			t.Fatalf("GET /v1/runs: %d %s", w.Code, w.Body)
		}
		return out.Runs
	}
	if got := list(""); len(got) != 1 || got[0].ID != run.ID || got[0].Task != "What is the mean?" {
		t.Errorf("without a key: %+v", got)
	}
	if got := list("0123456789abcdef0123"); len(got) != 0 {
		t.Errorf("alice sees the default tenant's runs: %+v", got)
	}
	w := httptest.NewRecorder()
	srv.Server.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || w.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("the web view: %d", w.Code)
	}
}
