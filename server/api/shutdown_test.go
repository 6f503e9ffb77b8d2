package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/app"
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
