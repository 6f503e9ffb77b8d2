package attacks

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slowMode is a server with short deadlines for sending a request: 1 s
// for the headers, a body's pauses at most 1 s and at least 512 bytes/s
// on average after that.
func slowMode() mode {
	return mode{set: map[string]string{"server.read_header_timeout": "1s", "server.body_timeout": "1s", "server.body_min_rate": "512"}}
}

// trickle opens a connection to addr (host:port), writes head at once,
// then each byte of rest with pause between them, until the server
// closes the connection or everything is written; it returns what the
// server answered and how long the connection lived.
func trickle(t *testing.T, addr, head, rest string, pause time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	answered := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(conn) // until the server closes it
		answered <- string(data)
	}()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rest); i++ {
		select {
		case a := <-answered:
			return a, time.Since(start)
		case <-time.After(pause):
		}
		if _, err := conn.Write([]byte{rest[i]}); err != nil {
			break // closed by the server
		}
	}
	select {
	case a := <-answered:
		return a, time.Since(start)
	case <-time.After(30 * time.Second):
		return "", time.Since(start)
	}
}

// TestSlowClientsAreCutOff: a client that trickles its request (slowloris)
// to hold the server's connections and handlers for as long as it likes.
// Headers sent a byte at a time, a body sent a byte at a time (each pause
// shorter than the body's timeout, but far below its minimum rate), a body
// that stops, and a body sent slowly to a route that never reads it (an
// unauthenticated request, a 401 the server answers while it still reads
// the body to keep the connection): each connection is cut within a few
// seconds, on coderun's API and on E2B's debug envd listener alike.
func TestSlowClientsAreCutOff(t *testing.T) {
	tg := serve(t, slowMode())
	main := strings.TrimPrefix(tg.url, "http://")
	envd := strings.TrimPrefix(tg.envd, "http://")
	body := `{"language": "python", "code": "print(1)"}` + strings.Repeat(" ", 2000)
	post := func(path, key string) string {
		h := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
		if key != "" {
			h += "Authorization: Bearer " + key + "\r\n"
		}
		return h + "\r\n"
	}
	id := tg.session(t, aliceKey, nil)
	const within = 5 * time.Second
	for _, c := range []struct {
		name, addr, head, rest string
		pause                  time.Duration
	}{
		{"headers a byte at a time", main, "GET /healthz HTTP/1.1\r\n", "Host: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n", 100 * time.Millisecond},
		{"no headers at all", main, "", strings.Repeat(" ", 100), 10 * time.Second},
		{"a body a byte at a time", main, post("/v1/exec", aliceKey), body, 300 * time.Millisecond},
		{"a body that stops", main, post("/v1/exec", aliceKey) + body[:10], body[10:], 10 * time.Second},
		{"a body nobody reads", main, post("/v1/exec", ""), body, 300 * time.Millisecond},
		{"a file upload a byte at a time", main, "PUT /v1/sessions/" + id + "/files/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + aliceKey + "\r\nContent-Length: 2000\r\n\r\n", strings.Repeat("x", 2000), 300 * time.Millisecond},
		{"envd: headers a byte at a time", envd, "GET /health HTTP/1.1\r\n", "Host: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n", 100 * time.Millisecond},
		{"envd: an upload a byte at a time", envd, "POST /files?path=x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 2000\r\n\r\n", strings.Repeat("x", 2000), 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			answer, lived := trickle(t, c.addr, c.head, c.rest, c.pause)
			if lived > within {
				t.Errorf("the connection lived %s (answer %.200q), want it cut within %s", lived.Round(time.Millisecond), answer, within)
			}
			t.Logf("cut after %s: %.120q", lived.Round(time.Millisecond), answer)
		})
	}
}

// TestSlowBodyRulesSpareLongAnswers: the deadlines bound sending a
// request, not answering it: under the same 1 s deadlines, a cell that
// runs 5 s streamed as Server-Sent Events, and the same cell answered at
// once, complete; so does a 2 MiB upload at an ordinary pace.
func TestSlowBodyRulesSpareLongAnswers(t *testing.T) {
	tg := serve(t, slowMode())
	id := tg.session(t, aliceKey, nil)
	a := tg.do(t, req{method: "POST", url: tg.url + "/v1/sessions/" + id + "/execute", key: aliceKey,
		header: map[string]string{"Accept": "text/event-stream"},
		body:   map[string]any{"code": "import time\nprint('start', flush=True)\ntime.sleep(5)\nprint('end')"}})
	if a.status != http.StatusOK || !strings.Contains(string(a.body), "event: done") || !strings.Contains(string(a.body), `end\n`) {
		t.Errorf("a 5 s cell over SSE: %s", a)
	}
	c := tg.cell(t, aliceKey, id, "import time\ntime.sleep(5)\nprint('slept')")
	if s := mustJSON(t, c); !strings.Contains(s, `"slept\n"`) || !strings.Contains(s, `"status":"ok"`) {
		t.Errorf("a 5 s cell: %s", s)
	}
	// An upload at an ordinary pace: 2 MiB in 64 KiB writes, 50 ms apart.
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 64<<10)
		for range 32 {
			w.Write(make([]byte, 64<<10))
			w.Flush()
			time.Sleep(50 * time.Millisecond)
		}
		pw.Close()
	}()
	hr, _ := http.NewRequest("PUT", tg.url+"/v1/sessions/"+id+"/files/paced.bin", pr)
	hr.ContentLength = 2 << 20
	hr.Header.Set("Authorization", "Bearer "+aliceKey)
	if up := send(t, tg, hr); up.status != http.StatusCreated {
		t.Errorf("a paced 2 MiB upload: %s", up)
	}
}

// TestHugeHeadersAreRefused: a request's headers are read into the
// server's memory whole before any handler (or the key check) sees them;
// net/http's default allows 1 MiB of them per connection, so 200
// connections each sending 1 MiB of headers (no key needed) took 200 MiB
// of the server's heap until their header timeout. Headers are bounded
// by server.max_header_bytes (64 KiB by default): past it, 431, and the
// heap stays put.
func TestHugeHeadersAreRefused(t *testing.T) {
	tg := serve(t, mode{})
	addr := strings.TrimPrefix(tg.url, "http://")
	line := "X-Pad: " + strings.Repeat("p", 1000) + "\r\n"
	h := watchHeap()
	var conns []net.Conn
	var statuses []string
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go func() {
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
			for range 1000 {
				if _, err := io.WriteString(c, line); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(3 * time.Second)
	g := h.growth(t, "200 connections of 1 MiB headers")
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		statuses = append(statuses, strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
		c.Close()
	}
	if g > 64<<20 {
		t.Errorf("200 connections sending 1 MiB of headers each grew the server's heap by %d MiB", g>>20)
	}
	if statuses[0] != "HTTP/1.1 431 Request Header Fields Too Large" {
		t.Errorf("1 MiB of headers: %q, want 431", statuses[0])
	}
}

// TestConnectionsAreBounded: each connection costs the server a
// descriptor, buffers and a goroutine before any key is checked, and
// nothing bounded how many it held: a client opening connections without
// end runs the process out of descriptors, and then its sandboxes fail to
// start too. Beyond server.max_connections (100 here) a new connection is
// closed at once; the ones held keep working, and once they close, new
// ones are served again.
func TestConnectionsAreBounded(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.max_connections": "100", "server.read_header_timeout": "30s"}})
	addr := strings.TrimPrefix(tg.url, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond) // accepted
	refused := 0
	for range 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			refused++
			continue
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			refused++
		}
		c.Close()
	}
	if refused != 50 {
		t.Errorf("with 100 connections held, %d of 50 more were refused, want all", refused)
	}
	// A held connection still works.
	fmt.Fprintf(held[0], "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(held[0]).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Errorf("a held connection: %q", line)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	time.Sleep(200 * time.Millisecond)
	if a := tg.do(t, req{method: "GET", url: tg.url + "/healthz"}); a.status != http.StatusOK {
		t.Errorf("after the connections closed: %s", a)
	}
}

// TestAKeptAliveConnectionOutlivesTheWriteTimeout: the write deadline a
// stalled reader is cut by must not be left over for the next request on
// a kept-alive connection, idle meanwhile for longer than it: net/http
// writes some answers itself (100 Continue, which curl asks for before a
// large upload), and one past a stale deadline would break the
// connection. It holds (net/http clears the deadline after each request);
// this stays as its guard.
func TestAKeptAliveConnectionOutlivesTheWriteTimeout(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.write_timeout": "1s"}})
	id := tg.session(t, aliceKey, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	status := func() string {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			return "error: " + err.Error()
		}
		length := 0
		for { // the headers, then the body by its length
			h, err := br.ReadString('\n')
			if err != nil || h == "\r\n" {
				break
			}
			if n, ok := strings.CutPrefix(strings.ToLower(h), "content-length: "); ok {
				length, _ = strconv.Atoi(strings.TrimSpace(n))
			}
		}
		io.ReadFull(br, make([]byte, length))
		return strings.TrimSpace(line)
	}
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if s := status(); !strings.HasPrefix(s, "HTTP/1.1 200") {
		t.Fatalf("first request: %s", s)
	}
	time.Sleep(2 * time.Second) // idle past the write timeout
	fmt.Fprintf(c, "PUT /v1/sessions/%s/files/k.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", id, aliceKey)
	if s := status(); s != "HTTP/1.1 100 Continue" {
		t.Fatalf("Expect: 100-continue on the kept-alive connection: %s", s)
	}
	io.WriteString(c, "hello")
	if s := status(); !strings.HasPrefix(s, "HTTP/1.1 201") {
		t.Errorf("the upload: %s", s)
	}
}
