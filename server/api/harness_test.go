package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/server/api"
	"github.com/coderun/coderun/server/openapitest"
)

// Keys of the test tenants.
const (
	aliceKey = "alice-key-0123456789abcdef" // the README's
	bobKey   = "bob-0123456789abcdef00"
)

// harness is `coderun serve` built from the configuration (as the
// command builds it), on a loopback listener, with a client that checks
// every answer of coderun's API against /openapi.json.
type harness struct {
	t      *testing.T
	served *app.Served
	url    string
	doc    *openapitest.Checker
	mu     sync.Mutex
	seen   map[string]bool // "post /v1/exec 200"
}

// newHarness starts a server with alice's and bob's keys and the settings
// given ("server.tenant_executions": "1").
func newHarness(t *testing.T, settings map[string]string) *harness {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	c := app.Defaults(os.Getenv)
	set := map[string]string{
		"server.api_keys":      "alice:" + aliceKey + ",bob:" + bobKey,
		"runtime.linux.pool":   "1",
		"store.data_dir":       t.TempDir(),
		"session.max_sessions": "20",
	}
	for k, v := range settings {
		set[k] = v
	}
	for k, v := range set {
		if err := c.Set(k, v, app.Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	served, err := c.NewServer(app.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(served.Server.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := served.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	h := &harness{t: t, served: served, url: ts.URL, seen: map[string]bool{}}
	doc, err := openapitest.New(ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc.AssertFormat()
	h.doc = doc
	return h
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d: %v: %s", r.status, err, r.body)
	}
}

// errCode is an error answer's code.
func (r response) errCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	r.json(t, &e)
	return e.Error.Code
}

// call sends a request to the operation of the document's path template
// (args fill its {params} in order) and checks the request body against
// the documented one and the answer against the documented response of
// its status: the status must be documented, and a JSON body must match
// its schema.
func (h *harness) call(key, method, template string, args []string, header map[string]string, body any) response {
	h.t.Helper()
	path := template
	for _, a := range args {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		if i < 0 {
			break
		}
		path = path[:i] + a + path[j+1:]
	}
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/octet-stream"
	case string: // raw text, sent as JSON unchecked (bad input)
		rd, ctype = strings.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		var v any
		_ = json.Unmarshal(data, &v)
		if err := h.doc.CheckRequest(method, template, v); err != nil {
			h.t.Fatalf("the test's request: %v", err)
		}
		rd, ctype = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	r := response{resp.StatusCode, resp.Header, data}
	h.check(method, template, r)
	return r
}

// check holds an answer to the document.
func (h *harness) check(method, template string, r response) {
	h.t.Helper()
	h.mu.Lock()
	h.seen[strings.ToLower(method)+" "+template+" "+strconv.Itoa(r.status)] = true
	h.mu.Unlock()
	if err := h.doc.CheckOperation(method, template, r.status, r.header.Get("Content-Type"), r.body); err != nil {
		h.t.Fatal(err)
	}
}

// event is one Server-Sent Event, with when it arrived.
type event struct {
	name string
	data json.RawMessage
	at   time.Time
}

// stream executes code in session id with Accept: text/event-stream and
// returns the events as they arrived, each checked against the document
// (an output an Output, the end a Cell).
func (h *harness) stream(ctx context.Context, key, id, code string) []event {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"code": code})
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url+"/v1/sessions/"+id+"/execute", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("stream: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	h.mu.Lock()
	h.seen["post /v1/sessions/{id}/execute 200"] = true
	h.mu.Unlock()
	var out []event
	var cur event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		case line == "" && cur.name == "":
		case line == "":
			cur.at = time.Now()
			schema := map[string]string{"output": "Output", "done": "Cell", "error": "Error"}[cur.name]
			if schema == "" {
				h.t.Fatalf("unknown event %q", cur.name)
			}
			if err := h.doc.Event(schema, cur.data); err != nil {
				h.t.Fatalf("event %s: %v", cur.name, err)
			}
			out = append(out, cur)
			cur = event{}
		}
	}
	if err := sc.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// documented lists the API's operations with their success status.
func documented() []string {
	var out []string
	for path, item := range api.Doc().Paths {
		for m, op := range item.(map[string]any) {
			for status := range op.(map[string]any)["responses"].(map[string]any) {
				if status[0] == '2' {
					out = append(out, m+" "+path+" "+status)
				}
			}
		}
	}
	return out
}

// loopback serves a built server on a loopback port, for benchmarks.
type loopback struct {
	url   string
	close func()
}

func newLoopback(tb testing.TB, served *app.Served) *loopback {
	tb.Helper()
	ts := httptest.NewServer(served.Server.Handler())
	return &loopback{url: ts.URL, close: ts.Close}
}
