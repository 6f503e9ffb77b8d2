package attacks

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunInputsStayInTheWorkspace: what a one-shot run's request names on
// the host's side — the program's file name, input files' paths, the
// compile step's reserved directory — cannot point out of the workspace
// (../, absolute, NUL, .coderun), and environment variables that would
// break the process's start (NUL, '=' in a name) are refused, each with a
// 400 before anything runs; the host directory next to the data directory
// stays empty.
func TestRunInputsStayInTheWorkspace(t *testing.T) {
	tg := serve(t, mode{})
	hostDir := t.TempDir()
	for name, body := range map[string]map[string]any{
		"name ../":         {"code": "print('ran')", "name": "../../../../../.." + hostDir + "/pwn.py"},
		"name absolute":    {"code": "print('ran')", "name": hostDir + "/pwn.py"},
		"name with /":      {"code": "print('ran')", "name": "a/b.py"},
		"file ../":         {"code": "print('ran')", "files": []map[string]any{{"path": "../../../../../.." + hostDir + "/pwn.txt", "content": "x"}}},
		"file absolute":    {"code": "print('ran')", "files": []map[string]any{{"path": hostDir + "/pwn.txt", "content": "x"}}},
		"file NUL":         {"code": "print('ran')", "files": []map[string]any{{"path": "a\x00b", "content": "x"}}},
		"file .coderun":    {"language": "c", "code": "int main(){return 0;}", "files": []map[string]any{{"path": ".coderun/cache/x", "content": "x"}}},
		"file setuid mode": {"code": "print('ran')", "files": []map[string]any{{"path": "x", "content": "x", "mode": 0o4755}}},
		"env NUL":          {"code": "print('ran')", "env": map[string]string{"A": "b\x00c"}},
		"env name =":       {"code": "print('ran')", "env": map[string]string{"A=B": "c"}},
		"env empty name":   {"code": "print('ran')", "env": map[string]string{"": "c"}},
	} {
		a := tg.exec(t, aliceKey, body)
		if a.status != http.StatusBadRequest || strings.Contains(string(a.body), "ran") {
			t.Errorf("%s: %s (want 400)", name, a)
		}
	}
	if entries, _ := os.ReadDir(hostDir); len(entries) != 0 {
		t.Errorf("the host directory holds %v", entries)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "pwn.py")); err == nil {
		t.Error("a request wrote on the host")
	}
}

// TestWebViewIsNotAPageForRunOutput: the web view's page allows its own
// scripts only (no inline script, so HTML in a run's output or a file's
// name cannot run there) and cannot be framed (clickjacking the approve
// button from another site); files code wrote are never served as a page
// of the server's origin.
func TestWebViewIsNotAPageForRunOutput(t *testing.T) {
	tg := serve(t, mode{insecureLocal: true})
	a := tg.do(t, req{method: "GET", url: tg.url + "/"})
	csp := a.header.Get("Content-Security-Policy")
	if a.status != http.StatusOK || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
		strings.Contains(csp, "unsafe-eval") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("GET /: %d, CSP %q", a.status, csp)
	}
	id := tg.session(t, "", nil)
	tg.cell(t, "", id, "open('page.html', 'w').write('<script>fetch(\"/v1/sessions\")</script>')\nopen('pic.svg', 'w').write('<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>')")
	for _, f := range []string{"page.html", "pic.svg"} {
		a := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files/" + f})
		ct := a.header.Get("Content-Type")
		if a.status != http.StatusOK || strings.Contains(ct, "html") || strings.Contains(ct, "svg") || strings.Contains(ct, "xml") {
			t.Errorf("GET files/%s: %d, Content-Type %q", f, a.status, ct)
		}
	}
}

// TestJobsPerTenantAreBounded: eval jobs run items outside the tenant's
// executions at once, so a tenant submitting job after job would start
// sandboxes without end; the jobs a tenant runs at once are bounded
// (server/jobs' MaxRunning), the next ones refused, and another tenant
// still gets its own.
func TestJobsPerTenantAreBounded(t *testing.T) {
	tg := serve(t, mode{})
	slow := `{"id": "slow", "code": "import time\ntime.sleep(15)", "test": "pass"}` + "\n"
	accepted := 0
	for range 6 {
		a := tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs", key: aliceKey, body: map[string]any{"problems": slow}})
		if a.status == http.StatusAccepted {
			accepted++
		} else if a.status != http.StatusTooManyRequests && a.status != http.StatusConflict {
			t.Errorf("a job past the bound: %s", a)
		}
	}
	if accepted == 0 || accepted > 2 {
		t.Errorf("%d of 6 jobs at once accepted (want 1 or 2)", accepted)
	}
	if a := tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs", key: bobKey, body: map[string]any{"problems": slow}}); a.status != http.StatusAccepted {
		t.Errorf("bob's job while alice's run: %s", a)
	}
}
