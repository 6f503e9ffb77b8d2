package runs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/openapitest"
	"github.com/coderun/coderun/server/runs"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// The runs API is tested over HTTP against real sandboxes and a scripted
// model speaking the real wire protocol (llmtest), mounted on the server
// with its authentication; every answer is held to /openapi.json.

var shared = linuxtest.Shared{Options: linux.Options{}}

// runtime is the linux runtime, shared by the tests. Without root or
// isolation it skips the test, except in CI, where it fails it.
func runtime(t *testing.T) sandbox.Runtime {
	t.Helper()
	return shared.Runtime(t)
}

// env is a runs service over a fresh store, its HTTP server, and the
// scripted model.
type env struct {
	t     *testing.T
	model *llmtest.Server
	cfg   *app.Config
	db    *sqlite.DB
	svc   *runs.Service
	http  *httptest.Server
	doc   *openapitest.Checker
	opts  runs.Options
}

// The tenants' keys.
var keys = map[string]string{"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef0"}

func testKeys(t *testing.T) server.Keys {
	t.Helper()
	var entries []string
	for tenant, key := range keys {
		entries = append(entries, tenant+":"+key)
	}
	ks, err := server.ParseKeys(entries)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func newEnv(t *testing.T, turns ...llmtest.Turn) *env {
	t.Helper()
	return newEnvWith(t, runs.Options{}, turns...)
}

// newEnvWith is newEnv with the service's options (its store and agents
// are the env's).
func newEnvWith(t *testing.T, opts runs.Options, turns ...llmtest.Turn) *env {
	t.Helper()
	e := &env{t: t, model: llmtest.NewServer(turns...), opts: opts}
	t.Cleanup(e.model.Close)
	e.cfg = app.Defaults(func(string) string { return "" })
	e.cfg.Store.DataDir = t.TempDir()
	e.cfg.Limits.WallTime = 20 * time.Second
	e.cfg.Limits.CPUTime = 20 * time.Second
	db, err := e.cfg.OpenRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.db = db
	t.Cleanup(func() { db.Close() })
	e.start()
	return e
}

// start (re)starts the service and its HTTP server over the same store,
// as a restarted server would.
func (e *env) start() {
	e.t.Helper()
	getenv := func(k string) string {
		switch k {
		case "OPENAI_API_KEY":
			return "sk-test"
		case "OPENAI_BASE_URL":
			return e.model.BaseURL(llmtest.OpenAI)
		}
		return ""
	}
	opts := e.opts
	opts.Store, opts.Agents = e.db, app.RunAgents{Config: e.cfg, Runtime: runtime(e.t), Getenv: getenv}
	svc, err := runs.New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
	// The service is mounted on the server as coderun serve mounts it:
	// its authentication (a key per tenant), body cap and document.
	hs, err := server.New(server.Options{Keys: testKeys(e.t), Surfaces: []server.Surface{svc.Surface()}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.http = httptest.NewServer(hs.Handler())
	if e.doc, err = openapitest.New(e.http.URL + "/openapi.json"); err != nil {
		e.t.Fatal(err)
	}
	srv := e.http
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
		srv.Close()
	})
}

// stop shuts the service down as the server does on shutdown.
func (e *env) stop() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.svc.Close(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.http.Close()
}

// do sends a request as tenant and decodes a JSON answer into out (when
// not nil); it returns the status and the body.
func (e *env) do(tenant, method, path string, body any, out any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+keys[tenant])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.doc.Check(method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), b); err != nil {
		e.t.Error(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

// startRun starts a run as tenant "alice" and returns its id.
func (e *env) startRun(req runs.StartRequest) string {
	e.t.Helper()
	if req.Model == "" {
		req.Model = "openai:test-model"
	}
	var v runs.RunView
	if code, body := e.do("alice", "POST", "/v1/runs", req, &v); code != http.StatusAccepted {
		e.t.Fatalf("start: %d %s", code, body)
	}
	if v.ID == "" {
		e.t.Fatal("start: no run id")
	}
	return v.ID
}

// event is one Server-Sent Event.
type event struct {
	Name, ID string
	Data     json.RawMessage
}

// stream follows a run's events as tenant alice, sending each on the
// channel until the stream ends (closing it then).
func (e *env) stream(ctx context.Context, id string) <-chan event {
	return e.streamQuery(ctx, id, "")
}

// streamQuery is stream with a query string ("?after=3").
func (e *env) streamQuery(ctx context.Context, id, query string) <-chan event {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.http.URL+"/v1/runs/"+id+"/events"+query, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keys["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		e.t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan event, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Name != "" {
					schema := "Run"
					if ev.Name == "step" {
						schema = "RunStep"
					}
					if err := e.doc.Event(schema, ev.Data); err != nil {
						e.t.Error(err)
					}
					ch <- ev
				}
				ev = event{}
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return ch
}

// until reads events until one matches, failing the test if the stream
// ends or a minute passes first; it returns the events read, the match
// last.
func until(t *testing.T, ch <-chan event, match func(event) bool) []event {
	t.Helper()
	var seen []event
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended; events: %s", names(seen))
			}
			seen = append(seen, ev)
			if match(ev) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no matching event within a minute; events: %s", names(seen))
		}
	}
}

func names(evs []event) string {
	var s []string
	for _, ev := range evs {
		if ev.Name == "step" {
			var st store.Step
			_ = json.Unmarshal(ev.Data, &st)
			s = append(s, string(st.Kind))
		} else {
			var v runs.RunView
			_ = json.Unmarshal(ev.Data, &v)
			s = append(s, ev.Name+"("+string(v.Status)+")")
		}
	}
	return strings.Join(s, " ")
}

// isStatus matches an event of that name whose run has the status.
func isStatus(name string, status store.Status) func(event) bool {
	return func(ev event) bool {
		if ev.Name != name {
			return false
		}
		var v runs.RunView
		return json.Unmarshal(ev.Data, &v) == nil && v.Status == status
	}
}

// run reads a run as alice.
func (e *env) run(id string) runs.RunView {
	e.t.Helper()
	var v runs.RunView
	if code, body := e.do("alice", "GET", "/v1/runs/"+id, nil, &v); code != http.StatusOK {
		e.t.Fatalf("get %s: %d %s", id, code, body)
	}
	return v
}

// await polls a run until its status is want.
func (e *env) await(id string, want store.Status) runs.RunView {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v := e.run(id)
		if v.Status == want {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s is %s, not %s, after a minute", id, v.Status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
