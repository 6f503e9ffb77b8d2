package e2b_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
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
	req, err := http.NewRequestWithContext(testContext(t), "POST", ts.URL+"/process.Process/Start",
		strings.NewReader(envelope(`{"process":{"cmd":"/bin/bash","args":["-c","while [ ! -f go.txt ]; do sleep 0.05; done; echo finished"]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("E2b-Sandbox-Port", e2b.EnvdPort)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := bufio.NewReader(resp.Body)
	next := func() string {
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
