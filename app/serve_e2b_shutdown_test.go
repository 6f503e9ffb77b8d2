package app

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeE2BDebugListenersAnswerAtShutdown: requests still running on
// the E2B debug-mode listeners when a shutdown's grace period ends are
// answered, as the main listener's are: an execution with a final error
// event, a command's stream with a final Connect error; they ran on
// unanswered.
func TestServeE2BDebugListenersAnswerAtShutdown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	interp, envdAddr := freeAddr(t), freeAddr(t)
	c := Defaults(env(nil))
	for k, v := range map[string]string{"server.insecure_local": "true", "server.grace": "3s", "server.addr": freeAddr(t),
		"server.e2b_debug_interpreter": interp, "server.e2b_debug_envd": envdAddr,
		"runtime.linux.pool": "0", "store.data_dir": t.TempDir()} {
		if err := c.Set(k, v, Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Run(ctx) }()
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + interp + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 300 {
			t.Fatal("the debug interpreter listener does not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}

	type answer struct {
		name, body string
		err        error
	}
	answers := make(chan answer, 2)
	started := make(chan struct{}, 2)
	read := func(name string, resp *http.Response, err error) {
		a := answer{name: name, err: err}
		if err == nil {
			br := bufio.NewReader(resp.Body)
			_, _ = br.Peek(1) // the answer has begun: the work runs
			started <- struct{}{}
			b, rerr := io.ReadAll(br)
			resp.Body.Close()
			a.body, a.err = string(b), rerr
		} else {
			started <- struct{}{}
		}
		answers <- a
	}
	go func() {
		resp, err := http.Post("http://"+interp+"/execute", "application/json",
			strings.NewReader(`{"code": "import time\nprint('started', flush=True)\ntime.sleep(120)"}`))
		read("execute", resp, err)
	}()
	go func() {
		msg := []byte(`{"process": {"cmd": "/bin/bash", "args": ["-c", "echo started; sleep 120"]}}`)
		frame := make([]byte, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
		copy(frame[5:], msg)
		req, _ := http.NewRequest("POST", "http://"+envdAddr+"/process.Process/Start", strings.NewReader(string(frame)))
		req.Header.Set("Content-Type", "application/connect+json")
		resp, err := http.DefaultClient.Do(req)
		read("command", resp, err)
	}()
	for range 2 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatal("the requests did not start")
		}
	}
	time.Sleep(time.Second) // both run
	cancel()
	for range 2 {
		select {
		case a := <-answers:
			switch {
			case a.err != nil:
				t.Errorf("%s: no answer: %v", a.name, a.err)
			case a.name == "execute":
				if !strings.Contains(a.body, "started") || !strings.Contains(a.body, `"name":"ServiceUnavailable"`) || !strings.HasSuffix(strings.TrimSpace(a.body), `{"type":"end_of_execution"}`) {
					t.Errorf("execute: %s", a.body)
				}
			default:
				// "c3RhcnRlZAo=": "started\n" (bytes are base64 in JSON)
				if !strings.Contains(a.body, "c3RhcnRlZAo=") || !strings.Contains(a.body, `"code":"unavailable"`) || !strings.Contains(a.body, "shutting down") {
					t.Errorf("command: %q", a.body)
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no answer 30 s after the shutdown")
		}
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
}
