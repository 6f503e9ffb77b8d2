package e2b_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/server/e2b"
	"github.com/coderun/coderun/session"
)

// TestRunningCommandIsNotIdle: a sandbox whose command runs is in use,
// though no code runs in it: the session manager's idle eviction (here
// after 300 ms) leaves it be, and the command runs to its end.
func TestRunningCommandIsNotIdle(t *testing.T) {
	_, ts := newServerWith(t, e2b.Options{InsecureLocal: true}, session.ManagerOptions{MaxSessions: 20, IdleTimeout: 300 * time.Millisecond})
	// The debug sandbox, made on first use.
	if status, body := call(t, ts, "GET", "/contexts", map[string]string{"E2b-Sandbox-Port": e2b.InterpreterPort}, ""); status != 200 {
		t.Fatalf("contexts: %d %s", status, body)
	}
	next := startCommand(t, ts, "while [ ! -f go.txt ]; do sleep 0.05; done; echo finished")
	if start := next(); !strings.Contains(start, `"start"`) {
		t.Fatalf("first frame %s", start)
	}
	// Well past the idle timeout: the manager's janitor has looked more
	// than once.
	time.Sleep(1500 * time.Millisecond)
	// A request looks the sandbox up (one whose default context was
	// evicted is ended then); its file lets the command finish.
	status, body := call(t, ts, "POST", "/files?path=go.txt", map[string]string{"E2b-Sandbox-Port": e2b.EnvdPort, "Content-Type": "application/octet-stream"}, "go")
	if status != 200 {
		t.Fatalf("the sandbox, its command running, after the idle timeout: %d %s", status, body)
	}
	var out strings.Builder
	for {
		f := next()
		var ev struct {
			Event struct {
				Data *struct{ Stdout []byte } `json:"data"`
				End  map[string]any           `json:"end"`
			} `json:"event"`
		}
		if err := json.Unmarshal([]byte(f), &ev); err != nil || (ev.Event.Data == nil && ev.Event.End == nil) {
			t.Fatalf("frame %s before the command's end", f)
		}
		if ev.Event.Data != nil {
			out.Write(ev.Event.Data.Stdout)
			continue
		}
		if ev.Event.End["exitCode"] != float64(0) || out.String() != "finished\n" {
			t.Errorf("the command ended %v with output %q, want exit 0 and finished", ev.Event.End, out.String())
		}
		return
	}
}

// startCommand starts a command in the debug sandbox and returns what
// reads its stream's frames, one a call.
func startCommand(t *testing.T, ts *httptest.Server, script string) func() string {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-c", script}}})
	req, err := http.NewRequestWithContext(testContext(t), "POST", ts.URL+"/process.Process/Start", strings.NewReader(envelope(string(msg))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("E2b-Sandbox-Port", e2b.EnvdPort)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	frames := bufio.NewReader(resp.Body)
	return func() string {
		t.Helper()
		var hdr [5]byte
		if _, err := io.ReadFull(frames, hdr[:]); err != nil {
			t.Fatalf("read a frame: %v", err)
		}
		msg := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(frames, msg); err != nil {
			t.Fatalf("read a frame: %v", err)
		}
		return string(msg)
	}
}

// TestCommandsPerSandboxBounded: beyond Options.MaxCommands running at
// once in a sandbox, a command is refused (resource_exhausted), and once
// one has ended the next starts.
func TestCommandsPerSandboxBounded(t *testing.T) {
	_, ts := newServer(t, e2b.Options{InsecureLocal: true, MaxCommands: 2})
	wait := "while [ ! -f go.txt ]; do sleep 0.05; done"
	first, second := startCommand(t, ts, wait), startCommand(t, ts, wait)
	for _, next := range []func() string{first, second} {
		if f := next(); !strings.Contains(f, `"start"`) {
			t.Fatalf("a command within the bound: %s", f)
		}
	}
	if f := startCommand(t, ts, "true")(); !strings.Contains(f, `"code":"resource_exhausted"`) || !strings.Contains(f, "2 commands already run") {
		t.Errorf("a third command: %s, want resource_exhausted", f)
	}
	if status, body := call(t, ts, "POST", "/files?path=go.txt", map[string]string{"E2b-Sandbox-Port": e2b.EnvdPort, "Content-Type": "application/octet-stream"}, "go"); status != 200 {
		t.Fatalf("write go.txt: %d %s", status, body)
	}
	for _, next := range []func() string{first, second} {
		for f := next(); !strings.Contains(f, `"end"`); f = next() {
		}
	}
	// The count is given back as each ends (just after its end event):
	// the next command starts, at the latest a moment later.
	var f string
	for i := 0; i < 100; i++ {
		if f = startCommand(t, ts, "true")(); strings.Contains(f, `"start"`) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("a command after the others ended: %s", f)
}
