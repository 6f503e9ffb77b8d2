package attacks

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentCreatesStayWithinTheQuota: a tenant allowed 3 sessions
// sends 24 creates at once, through coderun's API and E2B's control plane
// together, hoping that checks and counts race: at most 3 succeed (the
// others 429), and once they are closed the tenant gets its 3 again.
func TestConcurrentCreatesStayWithinTheQuota(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.tenant_sessions": "3"}})
	var mu sync.Mutex
	var made []string // DELETE URLs
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r req
			if i%2 == 0 {
				r = req{method: "POST", url: tg.url + "/v1/sessions", key: aliceKey, body: map[string]any{}}
			} else {
				r = req{method: "POST", url: tg.url + "/v2/sandboxes", header: map[string]string{"X-API-Key": aliceKey},
					body: map[string]any{"templateID": "code-interpreter-v1", "timeout": 60}}
			}
			a, err := tg.try(r)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			statuses[a.status]++
			if a.status < 300 {
				var v struct {
					ID        string `json:"id"`
					SandboxID string `json:"sandboxID"`
				}
				a.json(t, &v)
				if v.ID != "" {
					made = append(made, tg.url+"/v1/sessions/"+v.ID)
				} else {
					made = append(made, tg.url+"/sandboxes/"+v.SandboxID)
				}
			}
		}()
	}
	wg.Wait()
	if len(made) > 3 {
		t.Errorf("24 concurrent creates under a quota of 3: %d made (%v)", len(made), statuses)
	}
	for code, n := range statuses {
		if code >= 300 && code != http.StatusTooManyRequests {
			t.Errorf("%d creates answered %d, want 429 beyond the quota", n, code)
		}
	}
	for _, u := range made {
		tg.do(t, req{method: "DELETE", url: u, key: aliceKey, header: map[string]string{"X-API-Key": aliceKey}})
	}
	for i := range 3 {
		if a := tg.do(t, req{method: "POST", url: tg.url + "/v1/sessions", key: aliceKey, body: map[string]any{}}); a.status != http.StatusCreated {
			t.Errorf("create %d after closing them: %s", i, a)
		}
	}
}

// TestFilePathTricks: paths on the session file routes and envd's /files
// spelled to slip past a check — encoded slashes and dots, NUL, names and
// paths past the kernel's limits, fullwidth dots and a slash that are not
// dots or a slash to the kernel, backslashes, unicode in both
// normalisations — are each a 4xx or a file inside the workspace, never a
// 5xx, never a file outside it, and never one file reached by two
// different names.
func TestFilePathTricks(t *testing.T) {
	secret, _ := hostSecret(t)
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	files := tg.url + "/v1/sessions/" + id + "/files/"
	envd := map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983", "Content-Type": "application/octet-stream"}
	for _, p := range []string{
		"a%2Fb", "a%2F..%2F..%2Fx", "%2e%2e%2fx", "%2E%2E/x", "a/%2e%2e", "a/%2e/b", ".%2e/x", "%252e%252e/x",
		"a%00b", "a%2500b", strings.Repeat("n", 256), strings.Repeat("d/", 2100) + "x",
		"\uff0e\uff0e\uff0fx", "..\\x", "caf%C3%A9", "cafe%CC%81", "%C0%AE%C0%AE/x", "%ff",
		"x%0d%0aSet-Cookie:%20a=b", "a;b", "a?b", "%23frag",
	} {
		up := tg.do(t, req{method: "PUT", url: files + p, key: aliceKey, body: "probe " + p})
		down := tg.do(t, req{method: "GET", url: files + p, key: aliceKey})
		e2bUp := tg.do(t, req{method: "POST", url: tg.url + "/files?path=" + p, header: envd, body: "probe " + p})
		for _, a := range []answer{up, down, e2bUp} {
			if a.status >= 500 || strings.Contains(string(a.body), "host-secret") {
				t.Errorf("%s: %s", p, a)
			}
		}
		if up.status < 300 && down.status == http.StatusOK && string(down.body) != "probe "+p {
			t.Errorf("%s: wrote it, read back %q", p, down.body)
		}
	}
	for _, p := range []string{url.PathEscape(secret), "%2F" + strings.TrimPrefix(url.PathEscape(secret), "%2F")} {
		if a := tg.do(t, req{method: "PUT", url: files + p, key: aliceKey, body: "x"}); a.status < 400 {
			t.Errorf("PUT %s: %s", p, a)
		}
	}
	c := tg.cell(t, aliceKey, id, "import os\nprint(sorted(os.listdir('.'))[:40])\nprint(os.path.exists('/x'), os.path.exists('../x'))")
	if s := mustJSON(t, c); strings.Contains(s, "True") {
		t.Errorf("a probe landed outside the workspace: %s", s)
	}
}

// TestDownloadNamesCannotInjectHeaders: code names a file with quotes,
// semicolons, CR LF and a header after it, or unicode; its download's
// Content-Disposition holds that one name as one parameter (parsed back
// as written), and no header but the server's comes with it, on coderun's
// API and on envd's /files.
func TestDownloadNamesCannotInjectHeaders(t *testing.T) {
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	names := []string{`a"; filename="evil.sh`, "x\r\nSet-Cookie: stolen=1\r\nX-Injected: 1", `b\"; x=y`, "ünï ćødé.txt", "tab\there", "semi;colon=1"}
	code := "import json, base64\nfor n in json.loads(base64.b64decode('" + base64.StdEncoding.EncodeToString([]byte(mustJSON(t, names))) + "')): open(n, 'w').write(n)\nprint('ok')"
	if c := tg.cell(t, aliceKey, id, code); !strings.Contains(mustJSON(t, c), `"ok\n"`) {
		t.Fatalf("make the files: %s", mustJSON(t, c))
	}
	if a := tg.do(t, req{method: "POST", url: tg.url + "/execute", body: map[string]any{"code": code},
		header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49999"}}); !strings.Contains(string(a.body), `"ok\n"`) {
		t.Fatalf("make the files in the E2B sandbox: %s", a)
	}
	for _, n := range names {
		for _, a := range []answer{
			tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files/" + url.PathEscape(n), key: aliceKey}),
			tg.do(t, req{method: "GET", url: tg.url + "/files?path=" + url.QueryEscape(n), header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983"}}),
		} {
			if a.status != http.StatusOK || string(a.body) != n {
				t.Errorf("%q: %s", n, a)
				continue
			}
			if a.header.Get("Set-Cookie") != "" || a.header.Get("X-Injected") != "" {
				t.Errorf("%q: a header was injected: %v", n, a.header)
			}
			cd := a.header.Values("Content-Disposition")
			if len(cd) != 1 {
				t.Errorf("%q: Content-Disposition %q", n, cd)
				continue
			}
			typ, params, err := mime.ParseMediaType(cd[0])
			if err != nil || typ != "attachment" || params["filename"] != n || len(params) != 1 {
				t.Errorf("%q: Content-Disposition %q parses as %q %q (%v)", n, cd[0], typ, params, err)
			}
		}
	}
}

// TestJobsWithEnormousLines: a batch whose JSONL has one line nearly as
// large as the body cap, or tens of thousands of tiny lines, or lines
// nested deep, is refused or taken without the server failing; it keeps
// serving.
func TestJobsWithEnormousLines(t *testing.T) {
	tg := serve(t, mode{})
	item := func(i int) string {
		return fmt.Sprintf(`{"id": "p%d", "code": "def f(): return 1", "test": "assert f() == 1"}`, i)
	}
	var many strings.Builder
	for i := 0; many.Len() < 600<<10; i++ {
		many.WriteString(item(i) + "\n")
	}
	for name, problems := range map[string]string{
		"one 900 KiB line":       `{"id": "big", "code": "` + strings.Repeat("x", 900<<10) + `", "test": "assert True"}` + "\n",
		"a line of 900 KiB junk": strings.Repeat("{", 900<<10) + "\n",
		"8,000 tiny items":       many.String(),
		"nested 100,000 deep":    `{"id": "deep", "code": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}\n",
	} {
		a := tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs", key: aliceKey, body: map[string]any{"problems": problems}})
		if a.status >= 500 {
			t.Errorf("%s: %s", name, a)
		}
		t.Logf("%s: %.200s", name, a)
		if a.status < 300 {
			var j struct {
				ID string `json:"id"`
			}
			a.json(t, &j)
			tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs/" + j.ID + "/cancel", key: aliceKey})
		}
	}
	if a := tg.exec(t, aliceKey, map[string]any{"code": "print(6*7)"}); a.status != http.StatusOK || !strings.Contains(string(a.body), "42") {
		t.Errorf("the server after the jobs: %s", a)
	}
}

// TestStalledReadersHoldNothingOfTheServers: clients that ask for a
// stream — a cell's outputs as Server-Sent Events, an E2B execution's
// NDJSON — and never read it, while the code prints as fast as it can.
// The code's output waits for the reader (nothing piles up in the server
// beyond the cells' output limits), so the stalled stream held the cell,
// its session and the handler for as long as the client stayed connected:
// deleting the session hung, and the handler outlived the cell's time
// limit (3 s here): its last events waited for the reader for ever. Past
// server.write_timeout (2 s here) without the client taking a byte, the
// connection is cut (the cell interrupted, as for a client gone): the
// handlers end, the session can be deleted.
func TestStalledReadersHoldNothingOfTheServers(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.write_timeout": "2s", "session.timeout": "3s", "session.output_limit": "4MiB"}})
	id := tg.session(t, aliceKey, nil)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stall := func(target, head, body string) net.Conn {
		conn, err := net.Dial("tcp", strings.TrimPrefix(target, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
		return conn
	}
	printer := `{"code": "import sys\nwhile True: sys.stdout.write('x' * 65536)"}`
	sse := stall(tg.url, "POST /v1/sessions/"+id+"/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+aliceKey+"\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n", printer)
	defer sse.Close()
	e2b := stall(tg.url, "POST /execute HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: "+aliceKey+"\r\nE2b-Sandbox-Port: 49999\r\nContent-Type: application/json\r\n", printer)
	defer e2b.Close()
	time.Sleep(8 * time.Second)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB with two stalled streams", float64(growth)/(1<<20))
	if growth > 48<<20 {
		t.Errorf("two stalled readers grew the server's heap by %d MiB", growth>>20)
	}
	// Both handlers have ended (their log lines are written as they do),
	// their connections closed: what is left of them is the kernel's.
	for _, route := range []string{`"route":"POST /v1/sessions/{id}/execute"`, `"path":"/execute","route":"/execute"`} {
		if !strings.Contains(tg.log.String(), route) {
			t.Errorf("the stalled stream's handler (%s) still runs after %s:\n%s", route, 8*time.Second, tg.log.String())
		}
	}
	done := make(chan answer, 1)
	go func() { done <- tg.do(t, req{method: "DELETE", url: tg.url + "/v1/sessions/" + id, key: aliceKey}) }()
	select {
	case a := <-done:
		if a.status != http.StatusNoContent {
			t.Errorf("delete the session of the stalled stream: %s", a)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("deleting the session of a stalled stream hangs")
	}
}

// TestIdleConnectionsAreBounded: connections that never send a request,
// and kept-alive ones that stop sending, are closed after the server's
// timeouts (here 1 s for headers, 2 s idle), so that a tenant cannot keep
// thousands open; meanwhile the server serves.
func TestIdleConnectionsAreBounded(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.read_header_timeout": "1s", "server.idle_timeout": "2s"}})
	var conns []net.Conn
	for range 500 {
		c, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	kept := make([]net.Conn, 0, 50)
	for range 50 {
		c, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		kept = append(kept, c)
	}
	if a := tg.do(t, req{method: "GET", url: tg.url + "/healthz"}); a.status != http.StatusOK {
		t.Errorf("healthz with 550 idle connections: %s", a)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var longest time.Duration
	for _, c := range append(conns, kept...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			mu.Lock()
			longest = max(longest, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if longest > 6*time.Second {
		t.Errorf("the last idle connection was closed after %s, want within the timeouts", longest)
	}
}
