package attacks

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowserCannotDriveTheKeylessServer: `coderun serve --insecure-local`
// needs no key, so any web page the machine's user opens could drive it
// from their browser. Two ways a page gets there:
//
//   - a cross-site request (CSRF): fetch(…, {mode: "no-cors"}) with a Blob
//     body sends no Content-Type and no preflight, so a state-changing POST
//     reaches the server (the page cannot read the answer, but the run, the
//     session, the agent run with the operator's model key happen);
//   - DNS rebinding: the attacker's name resolves to 127.0.0.1 after the
//     page loaded, so the page is same-origin with the server and reads
//     every answer (the CLI's agent records, the sessions' files); the
//     only trace is a Host header naming the attacker's domain.
//
// Each is tried on the main listener and on the E2B debug listeners; each
// must be refused (403) before anything runs, while the same request as a
// local tool sends it (no Origin, a loopback Host) still works.
func TestBrowserCannotDriveTheKeylessServer(t *testing.T) {
	tg := serve(t, mode{insecureLocal: true})
	crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
	rebound := map[string]string{"Host": "rebind.evil.example:" + port(tg.url)}
	type attack struct {
		name string
		r    req
	}
	var attacks []attack
	for name, h := range map[string]map[string]string{"cross-site": crossSite, "rebound": rebound} {
		hostFor := func(base string) map[string]string {
			out := map[string]string{}
			for k, v := range h {
				if k == "Host" {
					v = "rebind.evil.example:" + port(base)
				}
				out[k] = v
			}
			return out
		}
		attacks = append(attacks,
			attack{name + " exec", req{method: "POST", url: tg.url + "/v1/exec", body: `{"code": "print('pwned')"}`, header: hostFor(tg.url)}},
			attack{name + " session", req{method: "POST", url: tg.url + "/v1/sessions", body: `{}`, header: hostFor(tg.url)}},
			attack{name + " run_code", req{method: "POST", url: tg.url + "/run_code", body: `{"code": "print('pwned')", "language": "python"}`, header: hostFor(tg.url)}},
			attack{name + " e2b create", req{method: "POST", url: tg.url + "/sandboxes", body: `{"templateID": "code-interpreter-v1"}`, header: hostFor(tg.url)}},
			attack{name + " debug execute", req{method: "POST", url: tg.interp + "/execute", body: `{"code": "print('pwned')"}`, header: hostFor(tg.interp)}},
			attack{name + " debug files", req{method: "POST", url: tg.envd + "/files?path=/home/user/pwned.txt", body: "pwned", header: hostFor(tg.envd)}},
		)
		if name == "rebound" {
			// Rebinding reads too: the records and the files.
			attacks = append(attacks,
				attack{name + " list runs", req{method: "GET", url: tg.url + "/v1/runs", header: hostFor(tg.url)}},
				attack{name + " list sessions", req{method: "GET", url: tg.url + "/v1/sessions", header: hostFor(tg.url)}},
				attack{name + " debug read file", req{method: "GET", url: tg.envd + "/files?path=/home/user/x.txt", header: hostFor(tg.envd)}},
			)
		}
	}
	for _, at := range attacks {
		a := tg.do(t, at.r)
		if a.status != http.StatusForbidden || strings.Contains(string(a.body), "pwned") {
			t.Errorf("%s: %s %s: %s (want 403)", at.name, at.r.method, at.r.url, a)
		}
	}
	// What a local tool sends still works: no Origin, a loopback Host.
	for _, host := range []string{"", "localhost:" + port(tg.url), "127.0.0.1:" + port(tg.url), "[::1]:" + port(tg.url)} {
		h := map[string]string{}
		if host != "" {
			h["Host"] = host
		}
		a := tg.do(t, req{method: "POST", url: tg.url + "/v1/exec", body: map[string]any{"code": "print('local')"}, header: h})
		if a.status != http.StatusOK || !strings.Contains(string(a.body), "local") {
			t.Errorf("a local tool (Host %q): %s", host, a)
		}
	}
	// A page of the server's own origin (the web view) may post.
	same := tg.do(t, req{method: "POST", url: tg.url + "/v1/exec", body: map[string]any{"code": "print('web view')"},
		header: map[string]string{"Origin": tg.url, "Sec-Fetch-Site": "same-origin"}})
	if same.status != http.StatusOK {
		t.Errorf("the web view's own request: %s", same)
	}
	a := tg.do(t, req{method: "POST", url: tg.interp + "/execute", body: map[string]any{"code": "print('debug mode')"}})
	if a.status != http.StatusOK || !strings.Contains(string(a.body), "debug mode") {
		t.Errorf("the E2B SDK's debug mode: %s", a)
	}
}

// port is the port of a base URL.
func port(base string) string {
	return base[strings.LastIndex(base, ":")+1:]
}
