package sandboxfusion_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/sandbox/toolchain"
	"github.com/coderun/coderun/server/sandboxfusion"
	"github.com/coderun/coderun/session"
)

// The surface is tested over real HTTP (httptest on loopback) against real
// sandboxes, with the request shapes SandboxFusion's clients send.

var shared = linuxtest.Shared{Options: linux.Options{Pool: 4, Zygote: true}}

// runtime is the linux runtime (with a pool and the zygote, as a server
// runs it), shared by the tests. Without root or isolation it skips the
// test, except in CI, where it fails it.
func runtime(t testing.TB) *linux.Runtime {
	t.Helper()
	return shared.Runtime(t)
}

// keys is a fixed key table.
type keys map[string]string

func (k keys) Tenant(key string) (string, bool) {
	t, ok := k[key]
	return t, ok
}

// newServer serves the surface with opts (the runtime and a session
// manager filled in when left out) on loopback.
func newServer(t testing.TB, opts sandboxfusion.Options) *httptest.Server {
	t.Helper()
	r := runtime(t)
	if opts.Runtime == nil {
		// As coderun serve opens it: every language, the compiled ones
		// through their toolchains.
		opts.Runtime = toolchain.Wrap(r, toolchain.Options{})
	}
	if opts.Sessions == nil {
		m := session.NewManager(r, session.ManagerOptions{})
		t.Cleanup(func() { m.Close() })
		opts.Sessions = m
	}
	if opts.Keys == nil && opts.KeylessTenant == "" {
		opts.InsecureLocal = true
	}
	h, err := sandboxfusion.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// post sends body (JSON text, or a value to encode) as verl sends it and
// returns the status and the decoded answer.
func post(t testing.TB, url string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v\n%s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, out
}

// verlRequest is the body verl's reward function posts
// (verl/utils/reward_score/sandbox_fusion/utils.py, call_sandbox_api):
// exactly these keys, stdin a string or null.
func verlRequest(code string, stdin *string, timeout int, language string) map[string]any {
	var in any
	if stdin != nil {
		in = *stdin
	}
	return map[string]any{
		"compile_timeout": timeout,
		"run_timeout":     timeout,
		"code":            code,
		"stdin":           in,
		"memory_limit_MB": 1024,
		"language":        language,
		"files":           map[string]any{},
		"fetch_files":     []any{},
	}
}

// verlClassify is how verl's _process_single_case reads an answer: true
// (right), false (wrong answer), -1 (API or sandbox error), -2 (runtime
// error), -3 (timeout), -4 (compile error), with its status word. It
// reads the fields verl reads, the way verl reads them.
func verlClassify(resp map[string]any, expected *string) (any, string) {
	compile, _ := resp["compile_result"].(map[string]any)
	run, _ := resp["run_result"].(map[string]any)
	switch resp["status"] {
	case "SandboxError":
		return -1, "sandbox_error"
	case "Failed":
		if compile != nil && (compile["status"] == "Error" || compile["status"] == "TimeLimitExceeded" ||
			(compile["status"] == "Finished" && compile["return_code"] != float64(0))) {
			if compile["status"] == "TimeLimitExceeded" {
				return -4, "compile_timeout"
			}
			return -4, "compile_error"
		}
		if run == nil {
			return -1, "unknown_failure_state"
		}
		switch {
		case run["status"] == "TimeLimitExceeded":
			return -3, "timeout"
		case run["status"] == "Error" || (run["status"] == "Finished" && run["return_code"] != float64(0)):
			return -2, "runtime_error"
		}
		return -1, "unknown_failure"
	case "Success":
		if run == nil || run["status"] != "Finished" {
			return -1, "unexpected_success_state"
		}
		stdout, _ := run["stdout"].(string)
		if expected == nil || strings.TrimRight(stdout, "\n") == strings.TrimRight(*expected, "\n") {
			return true, "success"
		}
		return false, "wrong_answer"
	}
	return -1, "unknown_api_status"
}

func str(s string) *string { return &s }

func jsonDecode(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}
