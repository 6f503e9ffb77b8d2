package attacks

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coderun/coderun/app"
)

// TestOversizedAndHostileBodies: bodies past the operator's cap (1 MiB
// here) on every listener and every route that reads one answer 413 —
// the E2B debug listeners too, which had no cap; files uploaded (streamed
// into the workspace, so bounded by it instead) past the workspace's 32
// MiB answer 413 too; JSON nested 200,000
// deep, a gzip bomb sent with Content-Encoding where the route does not
// decode it, and one where it does (E2B's /files), are refused without
// the server taking the bomb's size in memory; the server keeps serving.
func TestOversizedAndHostileBodies(t *testing.T) {
	tg := serve(t, mode{})
	big := `{"code": "print(1)"` + strings.Repeat(" ", 2<<20) + `}`
	id := tg.session(t, aliceKey, nil)
	e2b := func(port string, extra map[string]string) map[string]string {
		h := map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": port}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, r := range []req{
		{method: "POST", url: tg.url + "/v1/exec", key: aliceKey, header: map[string]string{"Content-Type": "application/json"}},
		{method: "POST", url: tg.url + "/v1/sessions", key: aliceKey, header: map[string]string{"Content-Type": "application/json"}},
		{method: "POST", url: tg.url + "/v1/sessions/" + id + "/execute", key: aliceKey, header: map[string]string{"Content-Type": "application/json"}},
		{method: "POST", url: tg.url + "/v1/jobs", key: aliceKey, header: map[string]string{"Content-Type": "application/json"}},
		{method: "POST", url: tg.url + "/run_code", key: aliceKey, header: map[string]string{"Content-Type": "application/json"}},
		{method: "POST", url: tg.url + "/execute", header: e2b("49999", map[string]string{"Content-Type": "application/json"})},
		{method: "POST", url: tg.interp + "/execute", header: e2b("", map[string]string{"Content-Type": "application/json"})},
	} {
		r.body = big
		if a := tg.do(t, r); a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("2 MiB to %s %s: %s (want 413)", r.method, r.url, a)
		}
	}
	huge := strings.Repeat(" ", 33<<20)
	for _, r := range []req{
		{method: "PUT", url: tg.url + "/v1/sessions/" + id + "/files/big.txt", key: aliceKey},
		{method: "POST", url: tg.url + "/files?path=big.txt", header: e2b("49983", map[string]string{"Content-Type": "application/octet-stream"})},
		{method: "POST", url: tg.envd + "/files?path=big.txt", header: e2b("", map[string]string{"Content-Type": "application/octet-stream"})},
	} {
		r.body = huge
		if a := tg.do(t, r); a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("33 MiB to %s %s: %s (want 413: more than the workspace)", r.method, r.url, a)
		}
		r.body = big
		if a := tg.do(t, r); a.status >= 300 {
			t.Errorf("a 2 MiB file to %s %s: %s (want it written: within the workspace)", r.method, r.url, a)
		}
	}
	deep := `{"code": ` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}`
	for _, u := range []string{tg.url + "/v1/exec", tg.url + "/run_code"} {
		if a := tg.do(t, req{method: "POST", url: u, key: aliceKey, body: deep, header: map[string]string{"Content-Type": "application/json"}}); a.status < 400 || a.status >= 500 {
			t.Errorf("JSON 200,000 deep to %s: %s (want a 4xx)", u, a)
		}
	}
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 512 { // 512 MiB of zeros in about half a MiB
		zw.Write(zero)
	}
	zw.Close()
	a := tg.do(t, req{method: "POST", url: tg.url + "/v1/exec", key: aliceKey, body: bomb.Bytes(),
		header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}})
	if a.status < 400 || a.status >= 500 {
		t.Errorf("a gzip bomb to /v1/exec: %s (want a 4xx)", a)
	}
	for _, u := range []string{tg.url, tg.envd} {
		a := tg.do(t, req{method: "POST", url: u + "/files?path=bomb.bin", body: bomb.Bytes(),
			header: e2b("49983", map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})})
		if a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("a gzip bomb to %s/files: %s (want 413: more than the workspace)", u, a)
		}
	}
	if c := tg.cell(t, aliceKey, id, "print(6*7)"); !strings.Contains(mustJSON(t, c), "42") {
		t.Errorf("the session after the bodies: %s", mustJSON(t, c))
	}
}

// TestRateAndQuotasIgnoreHeaders: a tenant's request rate and session
// quota are the tenant's, whatever the request says of its origin
// (X-Forwarded-For, X-Real-IP, Forwarded) and whichever surface it uses:
// past the rate, 429 with Retry-After; past the quota, sessions made
// through coderun's API and E2B's control plane and contexts alike are
// refused, and another tenant is not affected.
func TestRateAndQuotasIgnoreHeaders(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.tenant_rate": "1", "server.tenant_burst": "3", "server.tenant_sessions": "2"}})
	limited := 0
	for i := range 8 {
		ip := "203.0.113." + string(rune('1'+i))
		a := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions", key: aliceKey,
			header: map[string]string{"X-Forwarded-For": ip, "X-Real-IP": ip, "Forwarded": "for=" + ip}})
		if a.status == http.StatusTooManyRequests {
			limited++
			if a.header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		}
	}
	if limited < 3 {
		t.Errorf("8 requests at once with a rate of 1/s and a burst of 3, each from another forwarded address: %d limited", limited)
	}
	// A fresh server for the quota, so the rate does not answer first.
	tg = serve(t, mode{set: map[string]string{"server.tenant_sessions": "2"}})
	tg.session(t, aliceKey, nil)
	a := tg.do(t, req{method: "POST", url: tg.url + "/sandboxes", header: map[string]string{"X-API-Key": aliceKey},
		body: map[string]any{"templateID": "code-interpreter-v1"}})
	if a.status != http.StatusCreated {
		t.Fatalf("alice's second session, an E2B sandbox: %s", a)
	}
	var box struct {
		ID    string `json:"sandboxID"`
		Token string `json:"envdAccessToken"`
	}
	a.json(t, &box)
	for _, r := range []req{
		{method: "POST", url: tg.url + "/v1/sessions", key: aliceKey, body: map[string]any{}},
		{method: "POST", url: tg.url + "/sandboxes", header: map[string]string{"X-API-Key": aliceKey}, body: map[string]any{"templateID": "code-interpreter-v1"}},
		{method: "POST", url: tg.url + "/contexts", header: map[string]string{"E2b-Sandbox-Id": box.ID, "E2b-Sandbox-Port": "49999", "X-Access-Token": box.Token},
			body: map[string]any{"language": "python"}},
	} {
		if a := tg.do(t, r); a.status != http.StatusTooManyRequests {
			t.Errorf("alice's third session: %s %s: %s (want 429)", r.method, r.url, a)
		}
	}
	tg.session(t, bobKey, nil)
}

// TestNoSecretsInLogsOrErrors: the server's log lines never hold a key —
// not the keys that worked, not the wrong ones presented (a key with a
// typo is most of a key), not one sent as SandboxFusion's Basic password
// or in a URL; and error answers never show the host's paths (the data
// directory, the sandboxes' state directory /run/coderun, cgroups).
func TestNoSecretsInLogsOrErrors(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"server.sandboxfusion_tenant": "rl"}})
	id := tg.session(t, aliceKey, nil)
	tg.cell(t, aliceKey, id, "open('f.txt', 'w').write('x')")
	typo := aliceKey[:len(aliceKey)-1] + "X"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+bobKey))
	var answers []answer
	for _, r := range []req{
		{method: "GET", url: tg.url + "/v1/sessions", key: typo},
		{method: "GET", url: tg.url + "/v1/sessions", header: map[string]string{"X-API-Key": typo}},
		{method: "GET", url: tg.url + "/v1/sessions?api_key=" + url.QueryEscape(aliceKey)},
		{method: "POST", url: tg.url + "/run_code", header: map[string]string{"Authorization": basic}, body: map[string]any{"code": "print(1)", "language": "python"}},
		{method: "POST", url: tg.url + "/run_code", header: map[string]string{"Authorization": "Bearer " + typo}, body: map[string]any{"code": "print(1)", "language": "python"}},
		{method: "GET", url: tg.url + "/v2/sandboxes", header: map[string]string{"X-API-Key": typo}},
		{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files/missing.txt", key: aliceKey},
		{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files/f.txt/below", key: aliceKey},
		{method: "PUT", url: tg.url + "/v1/sessions/" + id + "/files/f.txt/below", key: aliceKey, body: "x"},
		{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files/.", key: aliceKey},
		{method: "POST", url: tg.url + "/v1/exec", key: aliceKey, body: map[string]any{"code": "print(1)", "files": []map[string]any{{"path": "a", "content": "x"}, {"path": "a/b", "content": "y"}}}},
		{method: "POST", url: tg.url + "/files?path=/home/user/f.txt/below", body: "x", header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983", "Content-Type": "application/octet-stream"}},
		{method: "GET", url: tg.url + "/files?path=/home/user/missing", header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983"}},
		{method: "POST", url: tg.url + "/filesystem.Filesystem/ListDir", body: `{"path": "/home/user/missing"}`, header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983", "Content-Type": "application/json"}},
	} {
		answers = append(answers, tg.do(t, r))
	}
	tg.do(t, req{method: "DELETE", url: tg.url + "/v1/sessions/" + id, key: aliceKey})
	answers = append(answers, tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files", key: aliceKey}))
	for _, a := range answers {
		for _, leak := range []string{tg.dataDir, "/run/coderun", "/sys/fs/cgroup", "/proc/", aliceKey[:16], bobKey[:16]} {
			if strings.Contains(string(a.body), leak) {
				t.Errorf("an answer shows %q: %s", leak, a)
			}
		}
	}
	log := tg.log.String()
	if !strings.Contains(log, `"request"`) {
		t.Fatalf("nothing logged: %q", log)
	}
	for _, leak := range []string{aliceKey[:16], bobKey[:16], typo[4:20]} {
		if strings.Contains(log, leak) {
			i := strings.Index(log, leak)
			t.Errorf("the log holds %q: ...%s...", leak, log[max(0, i-200):min(len(log), i+100)])
		}
	}
}

// TestInsecureLocalStaysOnLoopback: the keyless mode refuses every
// address that is not a loopback one, however it is spelled, and the E2B
// debug listeners likewise.
func TestInsecureLocalStaysOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "0:8080", "localhost.:8080", "127.0.0.1.nip.io:8080",
		"[::ffff:0.0.0.0]:8080", "10.0.0.1:8080", "host:8080"} {
		c := app.Defaults(func(string) string { return "" })
		c.Set("server.insecure_local", "true", app.Flag("--insecure-local"))
		if err := c.Set("server.addr", addr, app.Flag("--addr")); err != nil {
			continue // refused as an address at all
		}
		if srv, err := c.NewServer(app.ServeOptions{}); err == nil {
			srv.Close()
			t.Errorf("--insecure-local on %s: served", addr)
		}
	}
	for _, addr := range []string{"0.0.0.0:49999", "[::]:49983", ":49999", "192.168.1.1:49999"} {
		c := app.Defaults(func(string) string { return "" })
		if err := c.Set("server.e2b_debug_interpreter", addr, app.Flag("x")); err == nil {
			t.Errorf("a debug listener on %s: accepted", addr)
		}
	}
}

// TestMetricsDoNotGrowWithWhatClientsSend: the Prometheus metrics are
// labelled by route pattern, method and status. A client with no key at
// all sends requests with made-up methods (any token is a method to
// net/http): were each method a label value, every one would add a
// series the server keeps for ever and /metrics serves on every scrape,
// a memory leak anyone can drive. Unknown methods count as "other".
func TestMetricsDoNotGrowWithWhatClientsSend(t *testing.T) {
	tg := serve(t, mode{})
	for i := range 200 {
		m := fmt.Sprintf("ATTACK%03d", i)
		tg.do(t, req{method: m, url: tg.url + "/v1/sessions"})
		tg.do(t, req{method: m, url: tg.url + "/no/such/route/" + m})
	}
	a := tg.do(t, req{method: "GET", url: tg.url + "/metrics"})
	if n := strings.Count(string(a.body), "ATTACK"); a.status != http.StatusOK || n > 0 {
		t.Errorf("/metrics: %d, %d series of made-up methods", a.status, n)
	}
	if !strings.Contains(string(a.body), `method="other"`) {
		t.Errorf("/metrics does not count the made-up methods as other")
	}
}

// TestSessionHistoryIsBounded: each cell's output is bounded by the
// session's output limit, but a session keeps every cell in its history
// for export and review: a tenant running cell after cell of 3 MiB
// output had the server keep it all for the session's life (30 cells: 94
// MB; its 20 sessions, cell after cell: the host's memory). The history
// keeps the latest 32 MiB of outputs; older cells keep their code and a
// note saying their outputs were dropped.
func TestSessionHistoryIsBounded(t *testing.T) {
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	for i := range 12 {
		c := tg.cell(t, aliceKey, id, fmt.Sprintf("import sys\nsys.stdout.write('%c' * (3 << 20))", 'a'+i))
		if s := mustJSON(t, c); len(s) < 3<<20 {
			t.Fatalf("cell %d answered %d bytes", i+1, len(s))
		}
	}
	a := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/cells", key: aliceKey})
	if a.status != http.StatusOK || len(a.body) > 34<<20 {
		t.Errorf("the history of 12 cells of 3 MiB: %d, %d bytes (want at most the latest 32 MiB of outputs)", a.status, len(a.body))
	}
	body := string(a.body)
	if !strings.Contains(body, "were dropped from the session's history") || !strings.Contains(body, strings.Repeat("l", 1000)) ||
		strings.Contains(body, strings.Repeat("a", 1000)) {
		t.Errorf("the history does not keep the latest outputs and a note for the oldest")
	}
	nb := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/notebook", key: aliceKey})
	if nb.status != http.StatusOK || len(nb.body) > 34<<20 {
		t.Errorf("the notebook: %d, %d bytes", nb.status, len(nb.body))
	}
}
