package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type sessionJSON struct {
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	Language    string `json:"language"`
	Cells       int    `json:"cells"`
	IdleTimeout string `json:"idle_timeout"`
}

type cellJSON struct {
	Status  string `json:"status"`
	Outputs []struct {
		Type string         `json:"output_type"`
		Name string         `json:"name"`
		Text string         `json:"text"`
		Data map[string]any `json:"data"`
	} `json:"outputs"`
}

func (c cellJSON) stdout() string {
	var b strings.Builder
	for _, o := range c.Outputs {
		if o.Type == "stream" && o.Name == "stdout" {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

func (h *harness) createSession(key string, body map[string]any) sessionJSON {
	h.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	r := h.call(key, "POST", "/v1/sessions", nil, nil, body)
	if r.status != http.StatusCreated {
		h.t.Fatalf("create session: %d %s", r.status, r.body)
	}
	var s sessionJSON
	r.json(h.t, &s)
	return s
}

// TestAPI goes through every operation of coderun's API, each answer held
// to /openapi.json, and checks that every documented operation was
// answered with its documented success.
func TestAPI(t *testing.T) {
	h := newHarness(t, nil)

	// One-shot execution: output, files in and out, stdin, the result.
	r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{
		"language": "python", "stdin": "from stdin",
		"code":   "import sys\nprint(open('in.txt').read(), sys.stdin.read())\nopen('out.txt','w').write('made')",
		"files":  []map[string]any{{"path": "in.txt", "content": "from a file"}},
		"limits": map[string]any{"wall_time": "10s", "memory": "256MiB"}, "file_contents": 1024,
	})
	var res struct {
		Stdout, Reason string
		ExitCode       int `json:"exit_code"`
		Files          []struct {
			Path    string
			Content []byte
		}
	}
	r.json(t, &res)
	if r.status != 200 || res.Reason != "exited" || res.ExitCode != 0 || res.Stdout != "from a file from stdin\n" {
		t.Fatalf("exec: %d %s", r.status, r.body)
	}
	if !slices.ContainsFunc(res.Files, func(f struct {
		Path    string
		Content []byte
	}) bool {
		return f.Path == "out.txt" && string(f.Content) == "made"
	}) {
		t.Errorf("exec: files out %+v", res.Files)
	}
	// A run past its limit is a result with that reason.
	r = h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "while True: pass", "limits": map[string]any{"wall_time": 0.5}})
	r.json(t, &res)
	if r.status != 200 || (res.Reason != "timeout" && res.Reason != "cpu_limit") {
		t.Errorf("exec past its time: %d %s", r.status, r.body)
	}

	// A session: create with a file, list, get.
	s := h.createSession(aliceKey, map[string]any{"language": "python", "idle_timeout": "5m",
		"files": []map[string]any{{"path": "data/in.csv", "content": "a,b\n1,2\n"}}, "limits": map[string]any{"wall_time": "20s"}})
	if s.Tenant != "alice" || s.Language != "python" || s.IdleTimeout != "5m0s" {
		t.Errorf("session %+v", s)
	}
	var list struct{ Sessions []sessionJSON }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != s.ID {
		t.Errorf("list %+v", list)
	}
	if r := h.call(aliceKey, "GET", "/v1/sessions/{id}", []string{s.ID}, nil, nil); r.status != 200 {
		t.Errorf("get: %d", r.status)
	}

	// Cells keep state; the answer is the cell.
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "x = open('data/in.csv').read().count(',')"}).json(t, &cell)
	if cell.Status != "ok" {
		t.Fatalf("cell: %+v", cell)
	}
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "print(x * 21)\nx", "timeout": "10s"}).json(t, &cell)
	if cell.Status != "ok" || cell.stdout() != "42\n" {
		t.Fatalf("second cell: %+v", cell)
	}
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "1/0"}).json(t, &cell)
	if cell.Status != "error" {
		t.Errorf("failing cell: %+v", cell)
	}

	// Files: upload, list, download.
	if r := h.call(aliceKey, "PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "sub/up.bin"}, nil, []byte{0, 1, 2, 255}); r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var files struct {
		Files []struct{ Path, Kind string }
	}
	h.call(aliceKey, "GET", "/v1/sessions/{id}/files", []string{s.ID}, nil, nil).json(t, &files)
	var paths []string
	for _, f := range files.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Contains(paths, "sub/up.bin") || !slices.Contains(paths, "data/in.csv") {
		t.Errorf("files %v", paths)
	}
	if r := h.call(aliceKey, "GET", "/v1/sessions/{id}/files/{path}", []string{s.ID, "sub/up.bin"}, nil, nil); r.status != 200 || string(r.body) != "\x00\x01\x02\xff" {
		t.Errorf("download: %d %q", r.status, r.body)
	}
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "print(len(open('sub/up.bin','rb').read()))"}).json(t, &cell)
	if cell.stdout() != "4\n" {
		t.Errorf("the cell does not see the upload: %+v", cell)
	}

	// Streaming, interrupt, restart, cells, notebook, delete.
	events := h.stream(context.Background(), aliceKey, s.ID, "print('streamed')")
	if len(events) < 2 || events[0].name != "output" || events[len(events)-1].name != "done" {
		t.Errorf("events %+v", events)
	}
	if r := h.call(aliceKey, "POST", "/v1/sessions/{id}/interrupt", []string{s.ID}, nil, nil); r.status != 204 {
		t.Errorf("interrupt: %d", r.status)
	}
	if r := h.call(aliceKey, "POST", "/v1/sessions/{id}/restart", []string{s.ID}, nil, nil); r.status != 200 {
		t.Errorf("restart: %d %s", r.status, r.body)
	}
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "x"}).json(t, &cell)
	if cell.Status != "error" {
		t.Errorf("state survived the restart: %+v", cell)
	}
	var cells struct{ Cells []cellJSON }
	h.call(aliceKey, "GET", "/v1/sessions/{id}/cells", []string{s.ID}, nil, nil).json(t, &cells)
	if len(cells.Cells) != 6 {
		t.Errorf("%d cells, want 6", len(cells.Cells))
	}
	r = h.call(aliceKey, "GET", "/v1/sessions/{id}/notebook", []string{s.ID}, nil, nil)
	var nb struct {
		NBFormat int `json:"nbformat"`
		Cells    []any
	}
	r.json(t, &nb)
	if r.status != 200 || nb.NBFormat != 4 || len(nb.Cells) != 6 {
		t.Errorf("notebook: %d, nbformat %d, %d cells", r.status, nb.NBFormat, len(nb.Cells))
	}
	if r := h.call(aliceKey, "DELETE", "/v1/sessions/{id}", []string{s.ID}, nil, nil); r.status != 204 {
		t.Errorf("delete: %d", r.status)
	}
	if r := h.call(aliceKey, "GET", "/v1/sessions/{id}", []string{s.ID}, nil, nil); r.status != 404 {
		t.Errorf("get after delete: %d", r.status)
	}

	// A bash session.
	b := h.createSession(aliceKey, map[string]any{"language": "bash"})
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{b.ID}, nil, map[string]any{"code": "X=7; echo $((X*6))"}).json(t, &cell)
	if cell.stdout() != "42\n" {
		t.Errorf("bash cell: %+v", cell)
	}

	for _, op := range documented() {
		if !h.seen[op] {
			t.Errorf("documented but not exercised: %s", op)
		}
	}
}

// TestTenantIsolation: another tenant's session and files answer 404, as
// an unknown id does, and its list leaves them out.
func TestTenantIsolation(t *testing.T) {
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	if r := h.call(aliceKey, "PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "secret.txt"}, nil, []byte("alice's")); r.status != 201 {
		t.Fatalf("upload: %d", r.status)
	}
	for _, c := range []struct {
		method, template string
		args             []string
		body             any
	}{
		{"GET", "/v1/sessions/{id}", []string{s.ID}, nil},
		{"DELETE", "/v1/sessions/{id}", []string{s.ID}, nil},
		{"POST", "/v1/sessions/{id}/execute", []string{s.ID}, map[string]any{"code": "print(1)"}},
		{"POST", "/v1/sessions/{id}/interrupt", []string{s.ID}, nil},
		{"POST", "/v1/sessions/{id}/restart", []string{s.ID}, nil},
		{"GET", "/v1/sessions/{id}/cells", []string{s.ID}, nil},
		{"GET", "/v1/sessions/{id}/files", []string{s.ID}, nil},
		{"GET", "/v1/sessions/{id}/files/{path}", []string{s.ID, "secret.txt"}, nil},
		{"PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "planted.txt"}, []byte("bob's")},
		{"GET", "/v1/sessions/{id}/notebook", []string{s.ID}, nil},
	} {
		r := h.call(bobKey, c.method, c.template, c.args, nil, c.body)
		if r.status != 404 || r.errCode(t) != "not_found" {
			t.Errorf("bob %s %s: %d %s", c.method, c.template, r.status, r.body)
		}
		if strings.Contains(string(r.body), "alice") {
			t.Errorf("bob %s %s: the answer names the owner: %s", c.method, c.template, r.body)
		}
		// The same as for an id that never existed.
		args := append([]string{"0123456789abcdef"}, c.args[1:]...)
		if u := h.call(bobKey, c.method, c.template, args, nil, c.body); u.status != 404 {
			t.Errorf("unknown id %s %s: %d", c.method, c.template, u.status)
		}
	}
	var list struct{ Sessions []sessionJSON }
	h.call(bobKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("bob lists %+v", list.Sessions)
	}
	// Alice's session is untouched: bob's delete and upload did nothing.
	var files struct{ Files []struct{ Path string } }
	h.call(aliceKey, "GET", "/v1/sessions/{id}/files", []string{s.ID}, nil, nil).json(t, &files)
	if len(files.Files) != 1 || files.Files[0].Path != "secret.txt" {
		t.Errorf("alice's files %+v", files.Files)
	}
}

// TestAuthRequired: every route of the API answers 401 without a key or
// with an unknown one.
func TestAuthRequired(t *testing.T) {
	h := newHarness(t, nil)
	for _, key := range []string{"", "not-a-key-0123456789"} {
		for _, c := range []struct{ method, template string }{
			{"POST", "/v1/exec"}, {"POST", "/v1/sessions"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/{id}"},
			{"DELETE", "/v1/sessions/{id}"}, {"POST", "/v1/sessions/{id}/execute"}, {"GET", "/v1/sessions/{id}/files/{path}"},
		} {
			r := h.call(key, c.method, c.template, []string{"x", "y"}, nil, `{}`)
			if r.status != 401 || r.errCode(t) != "unauthorized" {
				t.Errorf("key %q: %s %s: %d %s", key, c.method, c.template, r.status, r.body)
			}
		}
	}
}

// TestBadInput: each bad request gets its 4xx and a JSON error, nothing
// is created, and the server keeps serving.
func TestBadInput(t *testing.T) {
	h := newHarness(t, map[string]string{"server.max_body": "64KiB", "session.workspace_size": "1MiB"})
	s := h.createSession(aliceKey, nil)
	big := `{"code": "` + strings.Repeat("x", 70<<10) + `"}`
	for _, c := range []struct {
		name, method, template string
		args                   []string
		header                 map[string]string
		body                   any
		status                 int
		code                   string
	}{
		{"malformed JSON", "POST", "/v1/exec", nil, nil, `{"code": "print(1)"`, 400, "bad_request"},
		{"not an object", "POST", "/v1/exec", nil, nil, `["print(1)"]`, 400, "bad_request"},
		{"empty body", "POST", "/v1/exec", nil, nil, ``, 400, "bad_request"},
		{"two values", "POST", "/v1/exec", nil, nil, `{"code":"1"} {}`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/exec", nil, nil, `{"code": "print(1)", "timeout": 5}`, 400, "bad_request"},
		{"unknown field in limits", "POST", "/v1/exec", nil, nil, `{"code": "print(1)", "limits": {"memroy": 1}}`, 400, "bad_request"},
		{"wrong type", "POST", "/v1/exec", nil, nil, `{"code": 1}`, 400, "bad_request"},
		{"oversized body", "POST", "/v1/exec", nil, nil, big, 413, "too_large"},
		{"wrong content type", "POST", "/v1/exec", nil, map[string]string{"Content-Type": "text/plain"}, `{"code":"1"}`, 415, "unsupported_media_type"},
		{"empty code", "POST", "/v1/exec", nil, nil, `{"code": "  "}`, 400, "bad_request"},
		{"unsupported language", "POST", "/v1/exec", nil, nil, `{"language": "cobol", "code": "x"}`, 400, "bad_request"},
		{"negative limit", "POST", "/v1/exec", nil, nil, `{"code": "1", "limits": {"memory": -1}}`, 400, "bad_request"},
		{"limit out of range", "POST", "/v1/exec", nil, nil, `{"code": "1", "limits": {"memory": "1TiB"}}`, 400, "bad_request"},
		{"bad duration", "POST", "/v1/exec", nil, nil, `{"code": "1", "limits": {"wall_time": "soon"}}`, 400, "bad_request"},
		{"path with ..", "POST", "/v1/exec", nil, nil, `{"code": "1", "files": [{"path": "../etc/x", "content": ""}]}`, 400, "bad_request"},
		{"absolute path", "POST", "/v1/exec", nil, nil, `{"code": "1", "files": [{"path": "/etc/x", "content": ""}]}`, 400, "bad_request"},
		{"two contents", "POST", "/v1/exec", nil, nil, `{"code": "1", "files": [{"path": "a", "content": "", "content_base64": ""}]}`, 400, "bad_request"},
		{"bad base64", "POST", "/v1/exec", nil, nil, `{"code": "1", "files": [{"path": "a", "content_base64": "***"}]}`, 400, "bad_request"},
		{"a file below a file", "POST", "/v1/exec", nil, nil, `{"code": "1", "files": [{"path": "d", "content": ""}, {"path": "d/x", "content": ""}]}`, 400, "bad_request"},
		{"session file below a file", "POST", "/v1/sessions", nil, nil, `{"files": [{"path": "d/x/y", "content": ""}, {"path": "d", "content": ""}]}`, 400, "bad_request"},
		{"session language", "POST", "/v1/sessions", nil, nil, `{"language": "c"}`, 400, "bad_request"},
		{"session unknown language", "POST", "/v1/sessions", nil, nil, `{"language": "cobol"}`, 400, "bad_request"},
		{"session limits", "POST", "/v1/sessions", nil, nil, `{"limits": {"processes": 100000}}`, 400, "bad_request"},
		{"session path with ..", "POST", "/v1/sessions", nil, nil, `{"files": [{"path": "a/../../b", "content": "x"}]}`, 400, "bad_request"},
		{"session idle timeout", "POST", "/v1/sessions", nil, nil, `{"idle_timeout": "1000h"}`, 400, "bad_request"},
		{"session unknown field", "POST", "/v1/sessions", nil, nil, `{"lang": "python"}`, 400, "bad_request"},
		{"unknown session", "GET", "/v1/sessions/{id}", []string{"nope"}, nil, nil, 404, "not_found"},
		{"cell in unknown session", "POST", "/v1/sessions/{id}/execute", []string{"nope"}, nil, `{"code": "1"}`, 404, "not_found"},
		{"empty cell", "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, `{"code": ""}`, 400, "bad_request"},
		{"negative cell timeout", "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, `{"code": "1", "timeout": -1}`, 400, "bad_request"},
		{"unknown file", "GET", "/v1/sessions/{id}/files/{path}", []string{s.ID, "nope.txt"}, nil, nil, 404, "not_found"},
		{"download with ..", "GET", "/v1/sessions/{id}/files/{path}", []string{s.ID, "a/%2e%2e/%2e%2e/etc/passwd"}, nil, nil, 400, "bad_request"},
		{"upload with ..", "PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "%2e%2e/x"}, nil, []byte("x"), 400, "bad_request"},
		// A file is bounded by the workspace (1 MiB), not the body cap.
		{"oversized upload", "PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "big.bin"}, nil, make([]byte, 2<<20), 413, "too_large"},
		{"upload mode", "PUT", "/v1/sessions/{id}/files/{path}?mode=999", []string{s.ID, "x"}, nil, []byte("x"), 400, "bad_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			template := strings.TrimSuffix(c.template, "?mode=999")
			if template != c.template {
				// The query goes with the path, not the template.
				c.args[len(c.args)-1] += "?mode=999"
			}
			r := h.call(aliceKey, c.method, template, c.args, c.header, c.body)
			if r.status != c.status || r.errCode(t) != c.code {
				t.Errorf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
		})
	}
	// Nothing was created: alice has the one session she made, and it
	// still works.
	var list struct{ Sessions []sessionJSON }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("%d sessions after bad requests, want 1", len(list.Sessions))
	}
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "print('still here')"}).json(t, &cell)
	if cell.stdout() != "still here\n" {
		t.Errorf("after bad requests: %+v", cell)
	}
	var files struct{ Files []struct{ Path string } }
	h.call(aliceKey, "GET", "/v1/sessions/{id}/files", []string{s.ID}, nil, nil).json(t, &files)
	if len(files.Files) != 0 {
		t.Errorf("bad uploads left files: %+v", files.Files)
	}
}

// TestStreamingOutputsArriveBeforeTheCellEnds: an output written before a
// TestFileOnDirectory: reading a directory, writing over one, or writing
// below a regular file is the client's mistake: a 409 conflict with a JSON
// error, not a 500 (the tester saw "d is a dir, not a regular file" as an
// internal error).
func TestFileOnDirectory(t *testing.T) {
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	if r := h.call(aliceKey, "PUT", "/v1/sessions/{id}/files/{path}", []string{s.ID, "d/x.txt"}, nil, []byte("x")); r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	for _, c := range []struct {
		name, method, path string
		body               any
	}{
		{"download a directory", "GET", "d", nil},
		{"upload over a directory", "PUT", "d", []byte("y")},
		{"upload below a file", "PUT", "d/x.txt/y", []byte("y")},
		{"upload below a file's child", "PUT", "d/x.txt/y/z", []byte("y")},
	} {
		r := h.call(aliceKey, c.method, "/v1/sessions/{id}/files/{path}", []string{s.ID, c.path}, nil, c.body)
		if r.status != 409 || r.errCode(t) != "conflict" {
			t.Errorf("%s: %d %s, want 409 conflict", c.name, r.status, r.body)
		}
	}
	if r := h.call(aliceKey, "GET", "/v1/sessions/{id}/files/{path}", []string{s.ID, "d/x.txt"}, nil, nil); r.status != 200 || string(r.body) != "x" {
		t.Errorf("d/x.txt after the refused uploads: %d %q", r.status, r.body)
	}
}

// pause reaches the client before the cell ends.
func TestStreamingOutputsArriveBeforeTheCellEnds(t *testing.T) {
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	start := time.Now()
	events := h.stream(context.Background(), aliceKey, s.ID, "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')")
	if len(events) < 3 {
		t.Fatalf("events %+v", events)
	}
	first, done := events[0], events[len(events)-1]
	if first.name != "output" || !strings.Contains(string(first.data), "first") || done.name != "done" {
		t.Fatalf("events %+v", events)
	}
	if gap := done.at.Sub(first.at); gap < time.Second {
		t.Errorf("the first output arrived %s before the end (after %s): not streamed", gap, first.at.Sub(start))
	}
	var cell cellJSON
	if err := json.Unmarshal(done.data, &cell); err != nil || cell.stdout() != "first\nsecond\n" {
		t.Errorf("done: %v %s", err, done.data)
	}
}

// TestWrongMethod: a method a route does not take is a 405 with its own
// code and the Allow header (the code was bad_request).
func TestWrongMethod(t *testing.T) {
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	req, _ := http.NewRequest("PATCH", h.url+"/v1/sessions/"+s.ID, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := response{resp.StatusCode, resp.Header, body}
	if allow := r.header.Get("Allow"); r.status != 405 || r.errCode(t) != "method_not_allowed" || !strings.Contains(allow, "GET") || !strings.Contains(allow, "DELETE") {
		t.Errorf("PATCH a session: %d %v %s", r.status, r.header, r.body)
	}
}

// TestStreamSendsEveryOutput: with Accept: text/event-stream every output
// of the cell is an output event before done, once, including those the
// session adds as the cell ends (the interpreter exited, a bash cell's
// last command failed, the time limit's note), which were only in done.
func TestStreamSendsEveryOutput(t *testing.T) {
	h := newHarness(t, nil)
	py := h.createSession(aliceKey, nil)
	sh := h.createSession(aliceKey, map[string]any{"language": "bash"})
	short := h.createSession(aliceKey, map[string]any{"limits": map[string]any{"wall_time": "1s"}})
	type out struct {
		Type  string `json:"output_type"`
		Name  string `json:"name"`
		Text  string `json:"text"`
		Ename string `json:"ename"`
	}
	for _, c := range []struct{ name, id, code, want string }{
		{"exit", py.ID, "print(1, flush=True)\nimport os; os._exit(3)", "InterpreterExited"},
		{"raise", py.ID, "print(1, flush=True)\nraise ValueError('v')", "ValueError"},
		{"bash status", sh.ID, "echo hi; false", "ExitStatus"},
		{"time limit", short.ID, "print(1, flush=True)\nimport time; time.sleep(10)", ""}, // its note, a stream
	} {
		t.Run(c.name, func(t *testing.T) {
			events := h.stream(context.Background(), aliceKey, c.id, c.code)
			if len(events) == 0 || events[len(events)-1].name != "done" {
				t.Fatalf("events %+v", events)
			}
			var streamed []out
			for _, e := range events[:len(events)-1] {
				var o out
				if err := json.Unmarshal(e.data, &o); err != nil || e.name != "output" {
					t.Fatalf("event %s %s: %v", e.name, e.data, err)
				}
				streamed = append(streamed, o)
			}
			var cell struct{ Outputs []out }
			if err := json.Unmarshal(events[len(events)-1].data, &cell); err != nil {
				t.Fatal(err)
			}
			if c.want == "" && !strings.Contains(string(events[len(events)-1].data), "time limit") {
				t.Errorf("done has no time limit note: %s", events[len(events)-1].data)
			}
			text := map[string]string{}
			var errs []string
			for _, o := range streamed {
				text[o.Name] += o.Text
				if o.Type == "error" {
					errs = append(errs, o.Ename)
				}
			}
			var want []string
			for _, o := range cell.Outputs {
				switch o.Type {
				case "error":
					want = append(want, o.Ename)
				case "stream":
					if !strings.Contains(text[o.Name], o.Text) {
						t.Errorf("%s %q of done was not streamed (streamed %+v)", o.Name, o.Text, streamed)
					}
				}
			}
			if strings.Join(errs, ",") != strings.Join(want, ",") || (c.want != "" && !slices.Contains(errs, c.want)) {
				t.Errorf("streamed errors %v, done's %v, want %s once", errs, want, c.want)
			}
		})
	}
}

// TestStreamClientGoneInterruptsTheCell: a client that stops reading a
// stream interrupts its cell; the session stays usable.
func TestStreamClientGoneInterruptsTheCell(t *testing.T) {
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", h.url+"/v1/sessions/"+s.ID+"/execute", strings.NewReader(`{"code":"import time\ntime.sleep(60)"}`))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Accept", "text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-done
	start := time.Now()
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "print('next')"}).json(t, &cell)
	if cell.stdout() != "next\n" || time.Since(start) > 20*time.Second {
		t.Errorf("after the client went away: %+v in %s", cell, time.Since(start))
	}
	var cells struct{ Cells []struct{ Status string } }
	h.call(aliceKey, "GET", "/v1/sessions/{id}/cells", []string{s.ID}, nil, nil).json(t, &cells)
	if len(cells.Cells) != 2 || cells.Cells[0].Status != "interrupted" {
		t.Errorf("cells %+v", cells.Cells)
	}
}

// TestTenantLimits: beyond a tenant's executions or sessions the answer is
// 429 with Retry-After; another tenant is not held back; a place freed is
// usable again.
func TestTenantLimits(t *testing.T) {
	h := newHarness(t, map[string]string{"server.tenant_executions": "1", "server.tenant_sessions": "1"})
	s := h.createSession(aliceKey, nil)
	r := h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{})
	if r.status != 429 || r.errCode(t) != "rate_limited" || r.header.Get("Retry-After") == "" {
		t.Fatalf("second session: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "import time\ntime.sleep(2)"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var info struct{ Busy bool }
		h.call(aliceKey, "GET", "/v1/sessions/{id}", []string{s.ID}, nil, nil).json(t, &info)
		if info.Busy || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r = h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)"})
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Errorf("an execution beyond the limit: %d %s", r.status, r.body)
	}
	if r := h.call(bobKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)"}); r.status != 200 {
		t.Errorf("bob: %d %s", r.status, r.body)
	}
	wg.Wait()
	if r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)"}); r.status != 200 {
		t.Errorf("after the cell: %d %s", r.status, r.body)
	}
	h.call(aliceKey, "DELETE", "/v1/sessions/{id}", []string{s.ID}, nil, nil)
	h.createSession(aliceKey, nil)
}

// TestRequestRate: past the tenant's rate, 429 with Retry-After.
func TestRequestRate(t *testing.T) {
	h := newHarness(t, map[string]string{"server.tenant_rate": "2", "server.tenant_burst": "3"})
	limited := 0
	for range 6 {
		r := h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil)
		if r.status == 429 {
			limited++
			if r.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}
	}
	if limited < 2 {
		t.Errorf("%d of 6 requests limited at 2/s with bursts of 3", limited)
	}
}

// TestMetrics: requests, executions, sandbox starts and sessions are
// counted at /metrics.
func TestMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)"})
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, `{"bad json`)
	s := h.createSession(aliceKey, nil)
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "1"})
	resp, err := http.Get(h.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	text := b.String()
	for _, want := range []string{
		`coderun_http_requests_total{code="200",method="POST",route="POST /v1/exec",surface="api"} 1`,
		`coderun_http_requests_total{code="400",method="POST",route="POST /v1/exec",surface="api"} 1`,
		`coderun_executions_total{kind="run",outcome="exited"} 1`,
		`coderun_executions_total{kind="cell",outcome="ok"} 1`,
		`coderun_sandbox_starts_total{kind="session",pooled="false"} 1`,
		`coderun_errors_total{class="bad_request"} 1`,
		`coderun_sessions_open 1`,
		`coderun_pool_ready{language="python"}`,
		`coderun_http_request_duration_seconds_bucket{route="POST /v1/exec",surface="api",le="+Inf"} 2`,
		`coderun_execution_duration_seconds_count{kind="run"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(text, "coderun_"))
		}
	}
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSessionPool: with server.session_pool, a session created with the
// server's defaults comes started from the pool (its files uploaded into
// it); one with limits of its own is started for it.
func TestSessionPool(t *testing.T) {
	h := newHarness(t, map[string]string{"server.session_pool": "1"})
	ready := func() bool {
		resp, err := http.Get(h.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return strings.Contains(b.String(), "\ncoderun_session_pool_ready 1\n")
	}
	for deadline := time.Now().Add(60 * time.Second); !ready(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
	}
	var got struct {
		ID     string
		Pooled bool
	}
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"files": []map[string]any{{"path": "in.txt", "content": "pooled"}}}).json(t, &got)
	if !got.Pooled {
		t.Errorf("a session with the defaults was not pooled")
	}
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{got.ID}, nil, map[string]any{"code": "print(open('in.txt').read())"}).json(t, &cell)
	if cell.stdout() != "pooled\n" {
		t.Errorf("the pooled session lacks its file: %+v", cell)
	}
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"limits": map[string]any{"memory": "300MiB"}}).json(t, &got)
	if got.Pooled {
		t.Errorf("a session with limits of its own came from the pool")
	}
}
