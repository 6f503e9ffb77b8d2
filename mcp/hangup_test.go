package mcp_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conns is a dialer that remembers its connections, so that a test can
// cut them as a client that goes away would, without a word.
type conns struct {
	mu  sync.Mutex
	all []net.Conn
}

func (c *conns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.all = append(c.all, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *conns) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.all {
		conn.Close()
	}
}

// TestHTTPHangupInterruptsTheCell: a client whose connection drops while
// a cell runs (no notifications/cancelled) has the cell interrupted at
// once, not at its time limit; the session runs the next cell.
func TestHTTPHangupInterruptsTheCell(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("alice", nil)
	if r := call(t, cs, "session_run", map[string]any{"session": "long", "code": "x = 41"}); r.IsError {
		t.Fatalf("first cell: %s", text(r))
	}

	var cc conns
	c := sdk.NewClient(&sdk.Implementation{Name: "go-hangup-client", Version: "1"}, nil)
	gone, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.srv.URL, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"alice-key", &http.Transport{DialContext: cc.dial}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	started := make(chan struct{})
	go func() {
		close(started)
		gone.CallTool(context.Background(), &sdk.CallToolParams{Name: "session_run",
			Arguments: map[string]any{"session": "long", "code": "import time\ntime.sleep(60)", "timeout_seconds": 60}})
	}()
	<-started
	busy := func() bool {
		ss := structured(t, call(t, cs, "session_list", map[string]any{}))["sessions"].([]any)
		return len(ss) == 1 && ss[0].(map[string]any)["busy"] == true
	}
	waitFor(t, 10*time.Second, "the long cell to start", busy)
	cc.cut()
	cut := time.Now()
	waitFor(t, 3*time.Second, "the session to be idle after the client hung up", func() bool { return !busy() })
	t.Logf("idle %s after the hangup", time.Since(cut).Round(time.Millisecond))
	r := call(t, cs, "session_run", map[string]any{"session": "long", "code": "print(x + 1)"})
	if r.IsError || structured(t, r)["stdout"] != "42\n" {
		t.Errorf("the next cell: %s", text(r))
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
