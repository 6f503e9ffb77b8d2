package e2b_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/e2b"
	"github.com/coderun/coderun/session"
)

// call makes one request and returns its status and body.
func call(t *testing.T, ts *httptest.Server, method, path string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type created struct {
	SandboxID          string `json:"sandboxID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken"`
	TrafficAccessToken string `json:"trafficAccessToken"`
}

func createSandbox(t *testing.T, ts *httptest.Server, key string) created {
	t.Helper()
	status, body := call(t, ts, "POST", "/v2/sandboxes", map[string]string{"X-API-Key": key, "Content-Type": "application/json"}, `{"templateID":"code-interpreter-v1","timeout":120}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	var c created
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if c.SandboxID == "" || c.EnvdAccessToken == "" || c.TrafficAccessToken == "" || c.EnvdVersion != e2b.EnvdVersion {
		t.Fatalf("create answered %s", body)
	}
	return c
}

// envelope frames a streaming Connect request.
func envelope(msg string) string {
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(msg)))
	return string(hdr[:]) + msg
}

// TestStatusCodes holds the service to E2B's status codes and to clear
// errors for bad input, tenant by tenant.
func TestStatusCodes(t *testing.T) {
	_, ts := newServer(t, e2b.Options{Keys: testKeys})
	alice := createSandbox(t, ts, "key-alice")
	interp := map[string]string{"E2b-Sandbox-Id": alice.SandboxID, "E2b-Sandbox-Port": e2b.InterpreterPort, "X-Access-Token": alice.EnvdAccessToken, "Content-Type": "application/json"}
	envd := map[string]string{"E2b-Sandbox-Id": alice.SandboxID, "E2b-Sandbox-Port": e2b.EnvdPort, "X-Access-Token": alice.EnvdAccessToken}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}

	cases := []struct {
		name         string
		method, path string
		headers      map[string]string
		body         string
		status       int
		contains     string
	}{
		// Control plane: keys and tenants.
		{"create without a key", "POST", "/v2/sandboxes", map[string]string{}, `{"templateID":"base"}`, 401, "API key"},
		{"create with an unknown key", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "nope"}, `{"templateID":"base"}`, 401, "API key"},
		{"create without a template", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "key-alice"}, `{}`, 400, "templateID"},
		{"create with malformed JSON", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "key-alice"}, `{"templateID":`, 400, "malformed JSON"},
		{"create with a negative timeout", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "key-alice"}, `{"templateID":"base","timeout":-1}`, 400, "negative"},
		{"create with a timeout over a day", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "key-alice"}, `{"templateID":"base","timeout":86401}`, 400, "maximum"},
		{"create with a bad variable name", "POST", "/v2/sandboxes", map[string]string{"X-API-Key": "key-alice"}, `{"templateID":"base","envVars":{"A-B":"x"}}`, 400, "variable name"},
		{"get another tenant's sandbox", "GET", "/sandboxes/" + alice.SandboxID, map[string]string{"X-API-Key": "key-bob"}, "", 404, "not found"},
		{"kill another tenant's sandbox", "DELETE", "/sandboxes/" + alice.SandboxID, map[string]string{"X-API-Key": "key-bob"}, "", 404, "not found"},
		{"timeout of another tenant's sandbox", "POST", "/sandboxes/" + alice.SandboxID + "/timeout", map[string]string{"X-API-Key": "key-bob"}, `{"timeout":60}`, 404, "not found"},
		{"list is the tenant's", "GET", "/v2/sandboxes", map[string]string{"X-API-Key": "key-bob"}, "", 200, "[]"},
		{"get one's own sandbox", "GET", "/sandboxes/" + alice.SandboxID, map[string]string{"X-API-Key": "key-alice"}, "", 200, alice.SandboxID},
		{"timeout without a value", "POST", "/sandboxes/" + alice.SandboxID + "/timeout", map[string]string{"X-API-Key": "key-alice"}, `{}`, 400, "timeout"},
		{"an E2B route coderun does not serve", "POST", "/sandboxes/" + alice.SandboxID + "/pause", map[string]string{"X-API-Key": "key-alice"}, "", 404, "not part of the E2B API"},

		// Reaching a sandbox.
		{"the sandbox with another tenant's key", "GET", "/contexts", with(interp, "X-Access-Token", "", "X-API-Key", "key-bob"), "", 404, "not found"},
		{"the sandbox with its tenant's key", "GET", "/contexts", with(interp, "X-Access-Token", "", "X-API-Key", "key-alice"), "", 200, `"language":"python"`},
		{"the sandbox with its traffic token", "GET", "/contexts", with(interp, "X-Access-Token", "", "E2B-Traffic-Access-Token", alice.TrafficAccessToken), "", 200, `"cwd":"/home/user"`},
		{"the sandbox without credentials", "GET", "/contexts", with(interp, "X-Access-Token", ""), "", 401, "API key"},
		{"the sandbox with a wrong token", "GET", "/contexts", with(interp, "X-Access-Token", "wrong"), "", 502, "not found"},
		{"the debug sandbox without credentials", "GET", "/contexts", with(interp, "X-Access-Token", "", "E2b-Sandbox-Id", e2b.DebugSandboxID), "", 401, "API key"},
		{"a port coderun does not serve", "GET", "/files", with(interp, "E2b-Sandbox-Port", "3000"), "", 502, "serves nothing"},

		// The interpreter.
		{"execute with a context and a language", "POST", "/execute", interp, `{"code":"1","context_id":"x","language":"python"}`, 400, "Only one of context_id or language"},
		{"execute in an unknown context", "POST", "/execute", interp, `{"code":"1","context_id":"nope"}`, 404, "Context nope not found"},
		{"execute without code", "POST", "/execute", interp, `{"language":"python"}`, 400, `"code" is required`},
		{"execute with malformed JSON", "POST", "/execute", interp, `{"code":`, 400, "malformed JSON"},
		{"execute with an empty body", "POST", "/execute", interp, ``, 400, "empty request body"},
		{"execute in a language coderun lacks", "POST", "/execute", interp, `{"code":"1","language":"r"}`, 400, `language "r" is not supported`},
		{"execute with a bad variable name", "POST", "/execute", interp, `{"code":"1","env_vars":{"1X":"y"}}`, 400, "variable name"},
		{"a context in a language coderun lacks", "POST", "/contexts", interp, `{"language":"java"}`, 400, `language "java" is not supported`},
		{"a context outside the workspace", "POST", "/contexts", interp, `{"cwd":"/etc"}`, 400, "outside the sandbox's workspace"},
		{"restart an unknown context", "POST", "/contexts/nope/restart", interp, ``, 404, "Context nope not found"},
		{"delete an unknown context", "DELETE", "/contexts/nope", interp, ``, 404, "Context nope not found"},

		// envd: files.
		{"read a missing file", "GET", "/files?path=/home/user/missing.txt", envd, "", 404, `"code":404`},
		{"read outside the workspace", "GET", "/files?path=/etc/passwd", envd, "", 400, "outside the sandbox's workspace"},
		{"read through ..", "GET", "/files?path=../etc/passwd", envd, "", 400, "leaves the workspace"},
		{"read the workspace itself", "GET", "/files?path=/home/user", envd, "", 400, "is a directory"},
		{"write without a path", "POST", "/files", with(envd, "Content-Type", "application/octet-stream"), "data", 400, "needs the"},
		{"write a multipart body without a file", "POST", "/files?path=a.txt", with(envd, "Content-Type", "multipart/form-data; boundary=XX"), "--XX\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nv\r\n--XX--\r\n", 400, "no file"},
		{"write outside the workspace", "POST", "/files?path=/etc/x", with(envd, "Content-Type", "application/octet-stream"), "data", 400, "outside"},

		// envd: Connect.
		{"a unary call with the protobuf codec", "POST", "/filesystem.Filesystem/Stat", with(envd, "Content-Type", "application/proto"), "", 400, `"code":"invalid_argument"`},
		{"a unary call with malformed JSON", "POST", "/filesystem.Filesystem/Stat", with(envd, "Content-Type", "application/json"), `{"path":`, 400, "malformed request message"},
		{"stat a missing path", "POST", "/filesystem.Filesystem/Stat", with(envd, "Content-Type", "application/json"), `{"path":"/home/user/missing"}`, 404, `"code":"not_found"`},
		{"stat outside the workspace", "POST", "/filesystem.Filesystem/Stat", with(envd, "Content-Type", "application/json"), `{"path":"/etc"}`, 400, `"code":"invalid_argument"`},
		{"make the workspace", "POST", "/filesystem.Filesystem/MakeDir", with(envd, "Content-Type", "application/json"), `{"path":"/home/user"}`, 409, `"code":"already_exists"`},
		{"list a missing directory", "POST", "/filesystem.Filesystem/ListDir", with(envd, "Content-Type", "application/json"), `{"path":"missing"}`, 404, `"code":"not_found"`},
		{"list too deep", "POST", "/filesystem.Filesystem/ListDir", with(envd, "Content-Type", "application/json"), `{"path":"/home/user","depth":1000}`, 400, "depth"},
		{"remove a missing file", "POST", "/filesystem.Filesystem/Remove", with(envd, "Content-Type", "application/json"), `{"path":"missing"}`, 404, `"code":"not_found"`},
		{"watch a missing directory", "POST", "/filesystem.Filesystem/WatchDir", with(envd, "Content-Type", "application/connect+json"), envelope(`{"path":"/home/user/missing"}`), 200, `"code":"not_found"`},
		{"watch outside the workspace", "POST", "/filesystem.Filesystem/WatchDir", with(envd, "Content-Type", "application/connect+json"), envelope(`{"path":"/etc"}`), 200, `"code":"invalid_argument"`},
		{"watch with entries", "POST", "/filesystem.Filesystem/WatchDir", with(envd, "Content-Type", "application/connect+json"), envelope(`{"path":"/home/user","includeEntry":true}`), 200, `"code":"unimplemented"`},
		{"polled watchers", "POST", "/filesystem.Filesystem/CreateWatcher", with(envd, "Content-Type", "application/json"), `{"path":"/home/user"}`, 501, `"code":"unimplemented"`},
		{"signal a process that is not there", "POST", "/process.Process/SendSignal", with(envd, "Content-Type", "application/json"), `{"process":{"pid":4242},"signal":"SIGNAL_SIGKILL"}`, 404, `"code":"not_found"`},
		{"a process selector without pid or tag", "POST", "/process.Process/SendInput", with(envd, "Content-Type", "application/json"), `{"process":{}}`, 400, `"code":"invalid_argument"`},
		{"start with a terminal", "POST", "/process.Process/Start", with(envd, "Content-Type", "application/connect+json"), envelope(`{"process":{"cmd":"/bin/bash"},"pty":{"size":{"cols":80,"rows":24}}}`), 200, `"code":"unimplemented"`},
		{"start without a command", "POST", "/process.Process/Start", with(envd, "Content-Type", "application/connect+json"), envelope(`{"process":{}}`), 200, `"code":"invalid_argument"`},
		{"start with a truncated envelope", "POST", "/process.Process/Start", with(envd, "Content-Type", "application/connect+json"), "\x00\x00\x00", 200, `"code":"invalid_argument"`},
		{"start outside the workspace", "POST", "/process.Process/Start", with(envd, "Content-Type", "application/connect+json"), envelope(`{"process":{"cmd":"/bin/true","cwd":"/etc"}}`), 200, "outside"},
		{"a process call for another tenant's sandbox", "POST", "/process.Process/List", with(envd, "X-Access-Token", "", "X-API-Key", "key-bob", "Content-Type", "application/json"), `{}`, 404, `"code":"not_found"`},
	}
	for _, c := range cases {
		status, body := call(t, ts, c.method, c.path, c.headers, c.body)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %d %q, want %d and %q", c.name, status, body, c.status, c.contains)
		}
	}

	// Killing the sandbox: its envd says it is not running (502, as E2B's
	// proxy), and a second kill finds nothing.
	if status, body := call(t, ts, "DELETE", "/sandboxes/"+alice.SandboxID, map[string]string{"X-API-Key": "key-alice"}, ""); status != 204 {
		t.Fatalf("kill: %d %s", status, body)
	}
	if status, _ := call(t, ts, "GET", "/health", envd, ""); status != 502 {
		t.Errorf("health of a killed sandbox: %d, want 502", status)
	}
	if status, _ := call(t, ts, "DELETE", "/sandboxes/"+alice.SandboxID, map[string]string{"X-API-Key": "key-alice"}, ""); status != 404 {
		t.Errorf("second kill: %d, want 404", status)
	}
}

// TestExecuteStream checks /execute's NDJSON: one JSON object a line, the
// events in order, end_of_execution last.
func TestExecuteStream(t *testing.T) {
	_, ts := newServer(t, e2b.Options{InsecureLocal: true})
	status, body := call(t, ts, "POST", "/execute", map[string]string{"E2b-Sandbox-Port": e2b.InterpreterPort, "Content-Type": "application/json"},
		`{"code":"import sys\nprint('out')\nprint('err', file=sys.stderr)\n'done'"}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		typ, _ := ev["type"].(string)
		types = append(types, typ)
		switch typ {
		case "stdout", "stderr":
			if ts, _ := ev["timestamp"].(string); ts == "" {
				t.Errorf("%s without a timestamp: %s", typ, line)
			}
		case "result":
			if ev["text"] != "'done'" || ev["is_main_result"] != true {
				t.Errorf("result: %s", line)
			}
		case "number_of_executions":
			if ev["execution_count"] != 1.0 {
				t.Errorf("count: %s", line)
			}
		}
	}
	got := strings.Join(types, ",")
	if !strings.HasPrefix(got, "number_of_executions,") || !strings.Contains(got, "stdout") || !strings.Contains(got, "stderr") || !strings.HasSuffix(got, "result,end_of_execution") {
		t.Errorf("events %s", got)
	}
}

// TestNew refuses a service without sessions, or open to anyone.
func TestNew(t *testing.T) {
	if _, err := e2b.New(e2b.Options{InsecureLocal: true}); err == nil {
		t.Error("New without a Manager: no error")
	}
	if _, err := e2b.New(e2b.Options{Manager: session.NewManager(nil, session.ManagerOptions{IdleTimeout: -1})}); err == nil {
		t.Error("New without keys on a server that is not insecure-local: no error")
	}
}

// TestTenantLimits: a tenant's sessions limit holds for E2B sandboxes (429
// with Retry-After beyond it, the place given back by a kill), and
// another tenant is not counted against it.
func TestTenantLimits(t *testing.T) {
	_, ts := newServer(t, e2b.Options{Keys: testKeys, Tenants: server.NewTenants(server.TenantLimits{Sessions: 1})})
	first := createSandbox(t, ts, "key-alice")
	req, _ := http.NewRequestWithContext(testContext(t), "POST", ts.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", "key-alice")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "sessions") {
		t.Errorf("a second sandbox beyond the limit: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	interp := map[string]string{"E2b-Sandbox-Id": first.SandboxID, "E2b-Sandbox-Port": e2b.InterpreterPort, "X-Access-Token": first.EnvdAccessToken}
	if status, body := call(t, ts, "POST", "/contexts", interp, `{}`); status != http.StatusTooManyRequests {
		t.Errorf("a context beyond the limit: %d %s", status, body)
	}
	createSandbox(t, ts, "key-bob")
	if status, body := call(t, ts, "DELETE", "/sandboxes/"+first.SandboxID, map[string]string{"X-API-Key": "key-alice"}, ""); status != 204 {
		t.Fatalf("kill: %d %s", status, body)
	}
	createSandbox(t, ts, "key-alice")
}

// TestExecuteClientGone: a client that goes away mid-execution interrupts
// the cell (as E2B's interpreter interrupts its kernel), and the context
// keeps its state for the next execution.
func TestExecuteClientGone(t *testing.T) {
	_, ts := newServer(t, e2b.Options{InsecureLocal: true})
	h := map[string]string{"E2b-Sandbox-Port": e2b.InterpreterPort, "Content-Type": "application/json"}
	if status, body := call(t, ts, "POST", "/execute", h, `{"code":"kept = 7"}`); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/execute", strings.NewReader(`{"code":"while True:\n    pass"}`))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	resp.Body.Close()
	start := time.Now()
	status, body := call(t, ts, "POST", "/execute", h, `{"code":"kept * 6"}`)
	if status != 200 || !strings.Contains(body, `"text":"42"`) {
		t.Errorf("after the client went away: %d %s", status, body)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("the next execution waited %v: the abandoned cell was not interrupted", waited)
	}
}

// TestSandboxTimeout: a sandbox ends at its timeout, and setTimeout moves
// the end.
func TestSandboxTimeout(t *testing.T) {
	_, ts := newServer(t, e2b.Options{Keys: testKeys})
	key := map[string]string{"X-API-Key": "key-alice"}
	status, body := call(t, ts, "POST", "/v2/sandboxes", key, `{"templateID":"base","timeout":1}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var short created
	_ = json.Unmarshal([]byte(body), &short)
	long := createSandbox(t, ts, "key-alice") // 120 s
	if status, body := call(t, ts, "POST", "/sandboxes/"+long.SandboxID+"/timeout", key, `{"timeout":2}`); status != 204 {
		t.Fatalf("setTimeout: %d %s", status, body)
	}
	time.Sleep(3 * time.Second)
	for _, id := range []string{short.SandboxID, long.SandboxID} {
		if status, body := call(t, ts, "GET", "/sandboxes/"+id, key, ""); status != 404 {
			t.Errorf("sandbox %s past its timeout: %d %s", id, status, body)
		}
	}
}

// TestRawUpload: files.write's raw form (application/octet-stream, the
// SDK's form for streams and gzip), gzip-encoded, lands whole.
func TestRawUpload(t *testing.T) {
	_, ts := newServer(t, e2b.Options{InsecureLocal: true})
	envd := map[string]string{"E2b-Sandbox-Port": e2b.EnvdPort}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	content := strings.Repeat("coderun ", 1000)
	_, _ = zw.Write([]byte(content))
	_ = zw.Close()
	status, body := call(t, ts, "POST", "/files?path=/home/user/dir/raw.txt",
		map[string]string{"E2b-Sandbox-Port": e2b.EnvdPort, "Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}, zipped.String())
	if status != 200 || !strings.Contains(body, `"path":"/home/user/dir/raw.txt"`) {
		t.Fatalf("raw gzip upload: %d %s", status, body)
	}
	if status, got := call(t, ts, "GET", "/files?path=dir/raw.txt", envd, ""); status != 200 || got != content {
		t.Errorf("read back: %d, %d bytes, want %d", status, len(got), len(content))
	}
	status, body = call(t, ts, "POST", "/files?path=bad.txt",
		map[string]string{"E2b-Sandbox-Port": e2b.EnvdPort, "Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}, "not gzip")
	if status != 400 || !strings.Contains(body, "gzip") {
		t.Errorf("a body that is not gzip: %d %s", status, body)
	}
}

// TestExecuteErrorAfterCell checks that a cell that fails without raising
// — its interpreter exits, or a bash cell's last command fails — still
// ends in an error event, so that the SDK's execution.error is set: the
// session adds these errors once the cell is over, not as outputs
// streamed while it runs. An error that was streamed is written once.
func TestExecuteErrorAfterCell(t *testing.T) {
	_, ts := newServer(t, e2b.Options{InsecureLocal: true})
	h := map[string]string{"E2b-Sandbox-Port": e2b.InterpreterPort, "Content-Type": "application/json"}
	for _, c := range []struct{ name, body, want string }{
		{"python exits", `{"code":"import os\nos._exit(3)"}`, "InterpreterExited"},
		{"bash command fails", `{"code":"echo hi; false","language":"bash"}`, "ExitStatus"},
		{"python raises (streamed, written once)", `{"code":"1/0"}`, "ZeroDivisionError"},
	} {
		status, body := call(t, ts, "POST", "/execute", h, c.body)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.name, status, body)
		}
		var errs []string
		var last string
		for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: line %q: %v", c.name, line, err)
			}
			last, _ = ev["type"].(string)
			if last == "error" {
				name, _ := ev["name"].(string)
				errs = append(errs, name)
			}
		}
		if len(errs) != 1 || errs[0] != c.want || last != "end_of_execution" {
			t.Errorf("%s: error events %q (want one %s), last %q:\n%s", c.name, errs, c.want, last, body)
		}
	}
}
