package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/gvisor"
)

// TestRuntimeChoiceAsAnAdversary: a tenant naming another runtime gets no
// more than server.max_limits (a one-shot run in Python and in C, whose
// compile step the server's cap also bounds, and a session); cannot reach
// another tenant's session on it (get, execute, delete); and runtime names
// of another case, with spaces, a NUL, full-width or other Unicode
// letters, a list, a path or 64 KiB long are each refused with a 400,
// nothing run, the server answering on.
func TestRuntimeChoiceAsAnAdversary(t *testing.T) {
	if _, err := gvisor.FindRunsc(""); err != nil {
		t.Skipf("gvisor is absent: %v", err)
	}
	h := newHarness(t, map[string]string{"server.runtimes": "linux,gvisor",
		"server.max_limits.memory": "512MiB", "server.max_limits.timeout": "5s", "server.max_limits.cpu_time": "5s", "limits.timeout": "5s", "limits.cpu_time": "5s", "session.timeout": "5s", "server.max_limits.processes": "64"})
	for _, c := range []struct {
		what string
		path string
		body map[string]any
	}{
		{"python memory", "/v1/exec", map[string]any{"code": "print(1)", "runtime": "gvisor", "limits": map[string]any{"memory": "1GiB"}}},
		{"python timeout", "/v1/exec", map[string]any{"code": "print(1)", "runtime": "gvisor", "limits": map[string]any{"wall_time": "1h"}}},
		{"C processes", "/v1/exec", map[string]any{"language": "c", "code": "int main(void){return 0;}", "runtime": "gvisor", "limits": map[string]any{"processes": 1000}}},
		{"session memory", "/v1/sessions", map[string]any{"runtime": "gvisor", "limits": map[string]any{"memory": "1GiB"}}},
		{"session processes", "/v1/sessions", map[string]any{"runtime": "gvisor", "limits": map[string]any{"processes": 1000}}},
	} {
		if r := h.call(aliceKey, "POST", c.path, nil, nil, c.body); r.status != 400 || !strings.Contains(errMessage(t, r), "more than this server allows") {
			t.Errorf("%s past server.max_limits on gvisor: %d %s; want 400", c.what, r.status, r.body)
		}
	}
	// The compile step on gvisor is held to the cap too: 5 s of CPU, not
	// the compile step's default minute.
	var res struct {
		Reason  string
		Compile struct{ Reason, Error string }
	}
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"language": "c", "runtime": "gvisor", "code": "int main(void){return 0;}",
		"compile_args": []string{"-wrapper", "/bin/sh,-c,while :; do :; done"}}).json(t, &res)
	if res.Reason != "compile_error" || res.Compile.Reason != "cpu_limit" && res.Compile.Reason != "timeout" || !strings.Contains(res.Compile.Error, "5s") {
		t.Errorf("a compile step spinning on gvisor: %+v; want stopped at 5s", res)
	}

	var s runtimeSession
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"runtime": "gvisor"}).json(t, &s)
	if s.Runtime != "gvisor" || s.ID == "" {
		t.Fatalf("alice's gvisor session: %+v", s)
	}
	for _, op := range []struct {
		method, path string
		body         map[string]any
	}{
		{"GET", "/v1/sessions/{id}", nil},
		{"POST", "/v1/sessions/{id}/execute", map[string]any{"code": "print(1)"}},
		{"DELETE", "/v1/sessions/{id}", nil},
	} {
		var body any
		if op.body != nil {
			body = op.body
		}
		if r := h.call(bobKey, op.method, op.path, []string{s.ID}, nil, body); r.status != 404 {
			t.Errorf("bob's %s %s of alice's gvisor session: %d %s; want 404", op.method, op.path, r.status, r.body)
		}
	}
	if r := h.call(aliceKey, "GET", "/v1/sessions/{id}", []string{s.ID}, nil, nil); r.status != 200 {
		t.Errorf("alice's session after bob's tries: %d %s", r.status, r.body)
	}

	for _, name := range []string{"GVISOR", "Linux", " gvisor", "gvisor ", "gvisor\x00", "gvis\u200bor", "ｇｖｉｓｏｒ", "gvisor,linux", "../gvisor", "linux/../gvisor", strings.Repeat("g", 64<<10)} {
		for _, path := range []string{"/v1/exec", "/v1/sessions"} {
			body := map[string]any{"runtime": name}
			if path == "/v1/exec" {
				body["code"] = "print(1)"
			}
			raw, _ := json.Marshal(body)
			r := h.call(aliceKey, "POST", path, nil, nil, string(raw))
			if r.status != 400 {
				t.Errorf("POST %s with runtime %.40q: %d %.200s; want 400", path, name, r.status, r.body)
			}
			if len(r.body) > 1<<10 {
				t.Errorf("POST %s with runtime %.40q: a %d-byte answer echoes the name whole", path, name, len(r.body))
			}
		}
	}
	var list struct{ Sessions []runtimeSession }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("sessions after the refused requests: %+v, want alice's one", list.Sessions)
	}
	var ok struct{ Stdout string }
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)", "runtime": "gvisor"}).json(t, &ok)
	if ok.Stdout != "1\n" {
		t.Errorf("the server after the odd names: %+v", ok)
	}
}
