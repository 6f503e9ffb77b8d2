package app

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

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
		req := httptest.NewRequest("GET", "http://localhost/v1/runs", nil)
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
	srv.Server.Handler().ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/", nil))
	if w.Code != 200 || w.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("the web view: %d", w.Code)
	}
}

// TestServeShutdownEndsStreams: the server's shutdown ends the streams
// that would not end by themselves (Services.OnShutdown): a run's (not
// final, driven by no one) with event shutdown, a running job's with
// event end, the job interrupted (resumable); Serve returns well within the grace
// period (it waited for all of it).
func TestServeShutdownEndsStreams(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: the runtime needs root")
	}
	c := Defaults(env(nil))
	c.Set("server.insecure_local", "true", Flag("--insecure-local"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("server.grace", "20s", Flag("--grace"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Serve(ctx, ln) }()
	resp, err := http.Post(url+"/v1/jobs", "application/json",
		strings.NewReader(`{"problems": "{\"id\": \"slow\", \"code\": \"x = 1\", \"test\": \"import time; time.sleep(60)\"}\n", "limits": {"wall_time": "90s", "cpu_time": "90s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var job struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	// lastEvent reads a stream to its end and sends its last event's name
	// and data.
	lastEvent := func(path string, out chan<- string) {
		resp, err := http.Get(url + path)
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		last := ""
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "event: ") || strings.HasPrefix(line, "data: ") {
				if strings.HasPrefix(line, "event: ") {
					last = ""
				}
				last += line + "\n"
			}
		}
		out <- last
	}
	runEnd, jobEnd := make(chan string, 1), make(chan string, 1)
	go lastEvent("/v1/runs/"+run.ID+"/events", runEnd)
	go lastEvent("/v1/jobs/"+job.ID+"/events", jobEnd)
	time.Sleep(time.Second) // both streams are open
	start := time.Now()
	cancel()
	for name, ch := range map[string]chan string{"run": runEnd, "job": jobEnd} {
		select {
		case last := <-ch:
			want := map[string]string{"run": "event: shutdown", "job": "event: end"}[name]
			if !strings.HasPrefix(last, want) || (name == "job" && !strings.Contains(last, `"status":"interrupted"`)) {
				t.Errorf("the %s's stream ended with %q, want %s", name, last, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s's stream is still open 10 s into the shutdown", name)
		}
	}
	select {
	case err := <-stopped:
		if err != nil || time.Since(start) > 10*time.Second {
			t.Errorf("Serve: %v after %s", err, time.Since(start))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
}
