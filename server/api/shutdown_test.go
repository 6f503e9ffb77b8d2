package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/server/api"
)

// TestShutdownLetsCellsFinish: a cell running when the server is told to
// stop finishes and is answered within the grace period; new connections
// are refused meanwhile; the sessions are closed after.
func TestShutdownLetsCellsFinish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	c := app.Defaults(os.Getenv)
	for k, v := range map[string]string{"server.insecure_local": "true", "server.grace": "20s",
		"runtime.linux.pool": "0", "store.data_dir": t.TempDir()} {
		if err := c.Set(k, v, app.Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	served, err := c.NewServer(app.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- served.Serve(ctx, ln) }()

	resp, err := http.Post(url+"/v1/sessions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()

	type answer struct {
		status int
		cell   struct {
			Status  string
			Outputs []struct{ Text string }
		}
		err error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		resp, err := http.Post(url+"/v1/sessions/"+s.ID+"/execute", "application/json",
			strings.NewReader(`{"code": "import time\ntime.sleep(1.5)\nprint('finished')"}`))
		if err != nil {
			a.err = err
		} else {
			a.status = resp.StatusCode
			a.err = json.NewDecoder(resp.Body).Decode(&a.cell)
			resp.Body.Close()
		}
		got <- a
	}()
	// Stop once the cell runs.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var info struct{ Busy bool }
		r, err := http.Get(url + "/v1/sessions/" + s.ID)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(r.Body).Decode(&info)
		r.Body.Close()
		if info.Busy {
			break
		}
	}
	cancel()
	a := <-got
	if a.err != nil || a.status != 200 || a.cell.Status != "ok" || len(a.cell.Outputs) == 0 || a.cell.Outputs[0].Text != "finished\n" {
		t.Fatalf("the running cell: %d %+v %v", a.status, a.cell, a.err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the server still accepts connections")
	}
	sessions, _ := served.Services.Sessions.Tenant("default")
	if _, err := sessions.Get(s.ID); err == nil {
		t.Error("the session is still open after the shutdown")
	}
}

// TestShutdownAnswersWhatOutlivesTheGrace: requests still running when a
// shutdown's grace period ends are answered before their connections
// close: a streamed cell with event error (after its outputs), a plain
// cell and a one-shot run with 503; they lost their connections with no
// answer.
func TestShutdownAnswersWhatOutlivesTheGrace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	c := app.Defaults(os.Getenv)
	for k, v := range map[string]string{"server.insecure_local": "true", "server.grace": "3s",
		"runtime.linux.pool": "0", "store.data_dir": t.TempDir()} {
		if err := c.Set(k, v, app.Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	served, err := c.NewServer(app.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- served.Serve(ctx, ln) }()
	session := func() string {
		resp, err := http.Post(url+"/v1/sessions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&s)
		return s.ID
	}
	streamed, plain := session(), session()
	slow := `{"code": "import time\nprint('started', flush=True)\ntime.sleep(120)"}`
	type answer struct {
		name, body string
		status     int
		err        error
	}
	answers := make(chan answer, 3)
	post := func(name, path, accept string) {
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(slow))
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		a := answer{name: name}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			a.status, a.body = resp.StatusCode, string(b)
		}
		a.err = err
		answers <- a
	}
	go post("streamed cell", "/v1/sessions/"+streamed+"/execute", "text/event-stream")
	go post("plain cell", "/v1/sessions/"+plain+"/execute", "")
	go post("run", "/v1/exec", "")
	time.Sleep(1500 * time.Millisecond) // all three run
	cancel()
	for range 3 {
		select {
		case a := <-answers:
			switch {
			case a.err != nil:
				t.Errorf("%s: no answer: %v", a.name, a.err)
			case a.name == "streamed cell":
				if a.status != 200 || !strings.Contains(a.body, "started") ||
					!strings.HasSuffix(strings.TrimSpace(a.body), `"code":"unavailable","message":"the server is shutting down: the cell was interrupted"}`) {
					t.Errorf("%s: %d %s", a.name, a.status, a.body)
				}
			default:
				if a.status != 503 || !strings.Contains(a.body, `"unavailable"`) || !strings.Contains(a.body, "shutting down") {
					t.Errorf("%s: %d %s", a.name, a.status, a.body)
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no answer 30 s after the shutdown")
		}
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
	if err := served.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// The document tells of the 503s.
	for _, p := range []string{"/v1/exec", "/v1/sessions/{id}/execute"} {
		op := api.Doc().Paths[p].(map[string]any)["post"].(map[string]any)
		if _, ok := op["responses"].(map[string]any)["503"]; !ok {
			t.Errorf("POST %s documents no 503", p)
		}
	}
}
