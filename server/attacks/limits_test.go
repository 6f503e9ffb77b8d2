package attacks

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Python that tries to go past the operator's limits, each printing how
// far it got.
const (
	hog   = "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('allocated 200 MiB')"
	forks = `import os, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
except OSError:
    pass
print('forked', n)`
	flood = "import sys\nsys.stdout.write('x' * (1 << 20))"
)

// TestOneShotGetsTheOperatorsLimits: a one-shot run over HTTP (coderun's
// /v1/exec and SandboxFusion's /run_code) is bounded as the operator
// configured it (here 128 MiB, 64 processes, 64 KiB of output per
// stream), as `coderun exec` would be: 200 MiB is a memory_limit, 200
// forks stop short, a 1 MiB print is cut at 64 KiB.
func TestOneShotGetsTheOperatorsLimits(t *testing.T) {
	tg := serve(t, mode{})
	var res struct {
		Stdout    string `json:"stdout"`
		Truncated bool   `json:"stdout_truncated"`
		Reason    string `json:"reason"`
	}
	tg.exec(t, aliceKey, map[string]any{"code": hog}).json(t, &res)
	if res.Reason != "memory_limit" || strings.Contains(res.Stdout, "allocated") {
		t.Errorf("200 MiB under a 128 MiB limit: %+v", res)
	}
	res.Stdout = ""
	tg.exec(t, aliceKey, map[string]any{"code": forks}).json(t, &res)
	if !strings.HasPrefix(res.Stdout, "forked ") || strings.TrimSpace(res.Stdout) == "forked 200" {
		t.Errorf("200 forks under a 64-process limit: %+v", res)
	}
	res.Stdout = ""
	tg.exec(t, aliceKey, map[string]any{"code": flood}).json(t, &res)
	if !res.Truncated || len(res.Stdout) > 64<<10 || res.Reason != "output_limit" {
		t.Errorf("1 MiB of output under a 64 KiB limit: truncated %v, %d bytes, %s", res.Truncated, len(res.Stdout), res.Reason)
	}
	a := tg.do(t, req{method: "POST", url: tg.url + "/run_code", key: aliceKey, body: map[string]any{"code": hog, "language": "python"}})
	if a.status != http.StatusOK || strings.Contains(string(a.body), "allocated") {
		t.Errorf("/run_code, 200 MiB under a 128 MiB limit: %s", a)
	}
}

// TestRequestsCannotRaiseLimitsPastTheOperatorsMaximum: the operator's
// limits are defaults a request may change, up to the operator's maximum
// (server.max_limits.*, here 256 MiB of memory, 128 processes, 4 MiB of
// output, a 64 MiB workspace, 1 minute). A tenant asking for more — 64
// GiB of memory and of workspace (the workspace is memory: a tmpfs) on a
// host with less, 4096 processes, 256 MiB of output per stream held by
// the server — through every surface that takes limits is refused before
// anything runs (400, or SandboxFusion's 422), while asking up to the
// maximum works.
func TestRequestsCannotRaiseLimitsPastTheOperatorsMaximum(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{
		"server.max_limits.memory": "256MiB", "server.max_limits.processes": "128", "server.max_limits.output_limit": "4MiB",
		"server.max_limits.workspace_size": "64MiB", "server.max_limits.timeout": "1m", "server.max_limits.cpu_time": "1m",
	}})
	for _, over := range []map[string]any{
		{"memory": "64GiB"}, {"memory": "1GiB"}, {"workspace_bytes": "64GiB"}, {"processes": 4096},
		{"output_bytes": "256MiB"}, {"wall_time": "1h"}, {"cpu_time": "1h"},
	} {
		a := tg.exec(t, aliceKey, map[string]any{"code": "print('ran')", "limits": over})
		if a.status != http.StatusBadRequest || strings.Contains(string(a.body), "ran") {
			t.Errorf("/v1/exec with limits %v: %s (want 400)", over, a)
		}
		s := tg.do(t, req{method: "POST", url: tg.url + "/v1/sessions", key: aliceKey, body: map[string]any{"limits": over}})
		if s.status != http.StatusBadRequest {
			t.Errorf("/v1/sessions with limits %v: %s (want 400)", over, s)
		}
	}
	for _, body := range []map[string]any{
		{"code": "print('ran')", "language": "python", "memory_limit_MB": 65536},
		{"code": "print('ran')", "language": "python", "run_timeout": 3600},
	} {
		a := tg.do(t, req{method: "POST", url: tg.url + "/run_code", key: aliceKey, body: body})
		var sf struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(a.body, &sf)
		if (a.status == http.StatusOK && sf.Status == "Success") || strings.Contains(string(a.body), "ran\\n") {
			t.Errorf("/run_code %v: %s (want a refusal)", body, a)
		}
	}
	var sessions struct {
		Sessions []any `json:"sessions"`
	}
	tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions", key: aliceKey}).json(t, &sessions)
	if len(sessions.Sessions) != 0 {
		t.Errorf("refused sessions were made: %v", sessions.Sessions)
	}
	// Up to the maximum is the tenant's to ask.
	var res struct {
		Stdout string `json:"stdout"`
		Reason string `json:"reason"`
	}
	tg.exec(t, aliceKey, map[string]any{"code": hog, "limits": map[string]any{"memory": "256MiB", "processes": 128}}).json(t, &res)
	if res.Reason != "exited" || !strings.Contains(res.Stdout, "allocated") {
		t.Errorf("200 MiB with 256 MiB asked: %+v", res)
	}
}
