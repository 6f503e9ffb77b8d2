package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
)

// The two tenants' keys: alice attacks, bob is attacked.
const (
	aliceKey = "alice-0123456789abcdef-secret"
	bobKey   = "bob-fedcba9876543210-secret"
)

// target is a running `coderun serve`: its main listener, its E2B debug
// listeners, and what it logged.
type target struct {
	url, interp, envd string // http://127.0.0.1:PORT of each listener
	dataDir           string
	log               *syncBuffer
	client            *http.Client
}

// mode says how a target is configured.
type mode struct {
	insecureLocal bool              // keyless loopback mode instead of the two tenants' keys
	set           map[string]string // further settings
}

// serve starts `coderun serve` as the composition root builds it, with
// small limits (a run's wall time 20 s, 128 MiB of memory, 64 processes,
// 64 KiB of output per stream, a 32 MiB workspace; a 1 MiB request body),
// and stops it when the test ends.
func serve(t *testing.T, m mode) *target {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox runtime needs root")
	}
	c := app.Defaults(func(string) string { return "" })
	dataDir := t.TempDir()
	ports := freePorts(t, 3)
	settings := map[string]string{
		"server.addr":                  ports[0],
		"server.e2b_debug_interpreter": ports[1],
		"server.e2b_debug_envd":        ports[2],
		"server.max_body":              "1MiB",
		"server.grace":                 "5s",
		"store.data_dir":               dataDir,
		"runtime.linux.pool":           "0",
		"limits.timeout":               "20s",
		"limits.memory":                "128MiB",
		"limits.processes":             "64",
		"limits.output_limit":          "64KiB",
		"limits.workspace_size":        "32MiB",
		"session.timeout":              "20s",
		"session.memory":               "256MiB",
		"session.workspace_size":       "32MiB",
		"session.preload":              "",
	}
	if m.insecureLocal {
		settings["server.insecure_local"] = "true"
	} else {
		settings["server.api_keys"] = "alice:" + aliceKey + ",bob:" + bobKey
	}
	for k, v := range m.set {
		settings[k] = v
	}
	for k, v := range settings {
		if err := c.Set(k, v, app.Flag("--"+k)); err != nil {
			t.Fatalf("set %s=%s: %v", k, v, err)
		}
	}
	log := &syncBuffer{}
	srv, err := c.NewServer(app.ServeOptions{Version: "attacks", Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	tg := &target{url: "http://" + ports[0], interp: "http://" + ports[1], envd: "http://" + ports[2], dataDir: dataDir,
		log: log, client: &http.Client{Timeout: 90 * time.Second}}
	for _, base := range []string{tg.url, tg.interp, tg.envd} {
		waitUp(t, base, done)
	}
	return tg
}

// freePorts are n loopback addresses nothing listens on (yet).
func freePorts(t *testing.T, n int) []string {
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// waitUp waits until base answers at all.
func waitUp(t *testing.T, base string, done <-chan error) {
	t.Helper()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			t.Fatalf("the server stopped before it served: %v", err)
		default:
		}
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if i > 300 {
			t.Fatalf("%s never answered: %v", base, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is the server's log, written from its goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// answer is an HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string {
	b := a.body
	if len(b) > 600 {
		b = append(b[:600:600], "..."...)
	}
	return fmt.Sprintf("%d %s", a.status, b)
}

// json decodes the answer's body into v.
func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %s: %v", a, err)
	}
}

// req is one request: its method, URL, body (a string or []byte is sent as
// it is, anything else as JSON) and headers ("Authorization" etc.).
type req struct {
	method, url string
	body        any
	header      map[string]string
	key         string // sent as a bearer token
}

// do sends r and reads its whole answer.
func (tg *target) do(t *testing.T, r req) answer {
	t.Helper()
	a, err := tg.try(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.url, err)
	}
	return a
}

// try sends r and reads its whole answer, or says why it could not.
func (tg *target) try(r req) (answer, error) {
	var body io.Reader
	ct := ""
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return answer{}, err
		}
		body, ct = bytes.NewReader(data), "application/json"
	}
	hr, err := http.NewRequest(r.method, r.url, body)
	if err != nil {
		return answer{}, err
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range r.header {
		if strings.EqualFold(k, "Host") {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := tg.client.Do(hr)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// session creates a session of the tenant of key (python unless lang
// says otherwise) and returns its id.
func (tg *target) session(t *testing.T, key string, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	a := tg.do(t, req{method: "POST", url: tg.url + "/v1/sessions", key: key, body: body})
	if a.status != http.StatusCreated && a.status != http.StatusOK {
		t.Fatalf("create a session: %s", a)
	}
	var s struct {
		ID string `json:"id"`
	}
	a.json(t, &s)
	if s.ID == "" {
		t.Fatalf("create a session: no id in %s", a)
	}
	return s.ID
}

// cell runs code in session id and returns the cell as the API answers it.
func (tg *target) cell(t *testing.T, key, id, code string) map[string]any {
	t.Helper()
	a := tg.do(t, req{method: "POST", url: tg.url + "/v1/sessions/" + id + "/execute", key: key, body: map[string]any{"code": code}})
	if a.status != http.StatusOK {
		t.Fatalf("cell %q: %s", code, a)
	}
	var c map[string]any
	a.json(t, &c)
	return c
}

// exec runs a one-shot execution and returns its answer.
func (tg *target) exec(t *testing.T, key string, body map[string]any) answer {
	t.Helper()
	return tg.do(t, req{method: "POST", url: tg.url + "/v1/exec", key: key, body: body})
}
