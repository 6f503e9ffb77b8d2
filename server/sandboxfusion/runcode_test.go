package sandboxfusion_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// verl's reward path: each outcome it tells apart, over real HTTP with
// the exact body it sends, classified as verl classifies it.
func TestVerlRewardPath(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	for _, c := range []struct {
		name      string
		code      string
		stdin     *string
		timeout   int
		language  string
		expected  *string
		want      any
		status    string
		runStatus string
	}{
		{"right answer", "n = int(input())\nprint(n * 2)\n", str("21\n"), 10, "python", str("42"), true, "success", "Finished"},
		{"wrong answer", "n = int(input())\nprint(n + 2)\n", str("21\n"), 10, "python", str("42"), false, "wrong_answer", "Finished"},
		{"null stdin reads end of file", "import sys\nprint(len(sys.stdin.read()))\n", nil, 10, "python", str("0"), true, "success", "Finished"},
		{"runtime error", "raise ValueError('no')\n", str(""), 10, "python", str("42"), -2, "runtime_error", "Finished"},
		{"syntax error is a runtime error of an interpreted language", "print(\n", str(""), 10, "python", str("42"), -2, "runtime_error", "Finished"},
		{"exit status", "import sys\nprint('partial')\nsys.exit(3)\n", str(""), 10, "python", nil, -2, "runtime_error", "Finished"},
		{"timeout", "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.01)\n", str(""), 1, "python", str("42"), -3, "timeout", "TimeLimitExceeded"},
		{"busy timeout", "print('spinning', flush=True)\nwhile True:\n    pass\n", str(""), 1, "python", str("42"), -3, "timeout", "TimeLimitExceeded"},
		{"output past the limit", "print('x' * (3 << 20))\n", str(""), 10, "python", str("x"), -2, "runtime_error", "Finished"},
		{"bash", "read x; echo $((x * 2))\n", str("21\n"), 10, "bash", str("42"), true, "success", "Finished"},
		{"nodejs", "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(Number(s)*2));\n", str("21\n"), 10, "nodejs", str("42"), true, "success", "Finished"},
		{"a language coderun does not run", "module m; endmodule\n", str(""), 10, "verilog", str("42"), -1, "sandbox_error", ""},
		{"pytest, a mode coderun does not have", "def test_fails():\n    assert False\n", str(""), 10, "pytest", str(""), -1, "sandbox_error", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, resp := post(t, srv.URL+"/run_code", verlRequest(c.code, c.stdin, c.timeout, c.language))
			if code != http.StatusOK {
				t.Fatalf("HTTP %d: %v", code, resp)
			}
			got, status := verlClassify(resp, c.expected)
			if got != c.want || status != c.status {
				t.Fatalf("verl reads %v (%s), want %v (%s)\n%v", got, status, c.want, c.status, resp)
			}
			if _, ok := resp["compile_result"]; !ok || resp["compile_result"] != nil {
				t.Errorf("compile_result of an interpreted language is %v, want null", resp["compile_result"])
			}
			run, _ := resp["run_result"].(map[string]any)
			if c.runStatus == "" {
				if run != nil || resp["message"] == "" {
					t.Errorf("a run that could not be made: run_result %v, message %q", run, resp["message"])
				}
				if !strings.Contains(resp["message"].(string), c.language) {
					t.Errorf("the message does not name the language %s: %q", c.language, resp["message"])
				}
				return
			}
			if run["status"] != c.runStatus {
				t.Errorf("run_result.status %v, want %s", run["status"], c.runStatus)
			}
			// verl concatenates them: always strings.
			if _, ok := run["stdout"].(string); !ok {
				t.Errorf("stdout is %v, not a string", run["stdout"])
			}
			if _, ok := run["stderr"].(string); !ok {
				t.Errorf("stderr is %v, not a string", run["stderr"])
			}
			if _, ok := run["execution_time"].(float64); !ok {
				t.Errorf("execution_time is %v", run["execution_time"])
			}
			if resp["message"] != "" {
				t.Errorf("message %q, want empty unless SandboxError", resp["message"])
			}
			switch c.runStatus {
			case "TimeLimitExceeded":
				if run["return_code"] != nil {
					t.Errorf("return_code of a time limit is %v, want null", run["return_code"])
				}
				if !strings.Contains(run["stdout"].(string), "s") {
					t.Errorf("the output before the time limit is lost: %q", run["stdout"])
				}
				if et := run["execution_time"].(float64); et < 1 || et > 5 {
					t.Errorf("execution_time %v for a 1 s limit", et)
				}
			case "Finished":
				rc, ok := run["return_code"].(float64)
				if !ok {
					t.Errorf("return_code %v", run["return_code"])
				}
				if c.name == "output past the limit" && rc != -9 {
					t.Errorf("a run the sandbox killed past its output limit: return_code %v, want -9", rc)
				}
			}
		})
	}
}

// verl's tool path (sandbox_fusion_tools.py) sends null stdin with a 30 s
// timeout and returns stdout + stderr: both strings, even when one is
// empty, and a failing program's traceback is in stderr.
func TestVerlToolPath(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	_, resp := post(t, srv.URL+"/run_code", verlRequest("print('hi')\nimport sys\nprint('warn', file=sys.stderr)\n1/0\n", nil, 30, "python"))
	run := resp["run_result"].(map[string]any)
	text := run["stdout"].(string) + run["stderr"].(string)
	if !strings.HasPrefix(text, "hi\nwarn\n") || !strings.Contains(text, "ZeroDivisionError") {
		t.Errorf("stdout + stderr = %q", text)
	}
	if got, _ := verlClassify(resp, nil); got != -2 {
		t.Errorf("verl reads %v, want -2", got)
	}
}

// verl's tutorial agent posts only {"code": ...}: the language is Python.
func TestCodeOnlyIsPython(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	code, resp := post(t, srv.URL+"/run_code", `{"code": "import sys; print(sys.version_info[0])"}`)
	if code != http.StatusOK || resp["status"] != "Success" {
		t.Fatalf("HTTP %d: %v", code, resp)
	}
	if out := resp["run_result"].(map[string]any)["stdout"]; out != "3\n" {
		t.Errorf("stdout %q", out)
	}
}

// Files go in base64 (null content skipped), fetch_files come back base64
// (what the program wrote, or an input), a missing one is left out.
func TestFilesInAndOut(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	body := map[string]any{
		"code": "import os\nprint(open('data/in.txt').read().upper(), end='')\nprint(os.path.exists('skipped.txt'))\n" +
			"open('out.bin', 'wb').write(bytes(range(256)))\n",
		"language":    "python",
		"files":       map[string]any{"data/in.txt": b64("hello\n"), "skipped.txt": nil},
		"fetch_files": []string{"out.bin", "data/in.txt", "missing.txt", "../etc/passwd"},
	}
	code, resp := post(t, srv.URL+"/run_code", body)
	if code != http.StatusOK || resp["status"] != "Success" {
		t.Fatalf("HTTP %d: %v", code, resp)
	}
	if out := resp["run_result"].(map[string]any)["stdout"]; out != "HELLO\nFalse\n" {
		t.Errorf("stdout %q", out)
	}
	files := resp["files"].(map[string]any)
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	if files["out.bin"] != base64.StdEncoding.EncodeToString(all) {
		t.Errorf("out.bin came back as %v", files["out.bin"])
	}
	if files["data/in.txt"] != b64("hello\n") {
		t.Errorf("the input data/in.txt came back as %v", files["data/in.txt"])
	}
	if len(files) != 2 {
		t.Errorf("files %v: a missing file or a path outside the workspace came back", files)
	}
}

// An input file the program removed does not come back, as SandboxFusion
// reads fetch_files from the directory the program left; one it kept
// does. verl's reward path sends files and fetch_files alike.
func TestFetchFilesLeavesOutRemovedInputs(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	body := map[string]any{
		"code":            "import os, shutil\nos.remove('gone.txt')\nshutil.rmtree('dir')\n",
		"language":        "python",
		"stdin":           nil,
		"compile_timeout": 10, "run_timeout": 10, "memory_limit_MB": -1,
		"files":       map[string]any{"gone.txt": b64("g"), "kept.txt": b64("k"), "dir/in.txt": b64("i")},
		"fetch_files": []string{"gone.txt", "kept.txt", "dir/in.txt"},
	}
	code, resp := post(t, srv.URL+"/run_code", body)
	if code != http.StatusOK || resp["status"] != "Success" {
		t.Fatalf("HTTP %d: %v", code, resp)
	}
	files := resp["files"].(map[string]any)
	if len(files) != 1 || files["kept.txt"] != b64("k") {
		t.Errorf("files %v; want kept.txt alone", files)
	}
}

// The statuses and their shapes: a Success and a Failed answer carry
// run_result and an empty message; the answer always has every key.
func TestAnswerShape(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{PodName: "pod-7"})
	_, resp := post(t, srv.URL+"/run_code", `{"code": "pass", "language": "python"}`)
	for _, k := range []string{"status", "message", "compile_result", "run_result", "executor_pod_name", "files"} {
		if _, ok := resp[k]; !ok {
			t.Errorf("the answer lacks %q: %v", k, resp)
		}
	}
	run := resp["run_result"].(map[string]any)
	if resp["status"] != "Success" || run["stdout"] != "" || run["stderr"] != "" || run["return_code"] != float64(0) {
		t.Errorf("an empty program: %v", resp)
	}
	if resp["executor_pod_name"] != "pod-7" {
		t.Errorf("executor_pod_name %v", resp["executor_pod_name"])
	}
}

// A memory limit (memory_limit_MB) ends the program as the kernel's kill
// does: Finished with -9, a runtime error for verl.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	req := verlRequest("x = b'a' * (400 << 20)\nprint(len(x))\n", str(""), 10, "python")
	req["memory_limit_MB"] = 64
	_, resp := post(t, srv.URL+"/run_code", req)
	run := resp["run_result"].(map[string]any)
	if resp["status"] != "Failed" || run["status"] != "Finished" || run["return_code"] != float64(-9) {
		t.Fatalf("a program past its memory: %v", resp)
	}
	if got, _ := verlClassify(resp, str("419430400")); got != -2 {
		t.Errorf("verl reads %v, want -2", got)
	}
}

// Requests SandboxFusion's server refuses get its framework's 422, with
// where the problem is; the server keeps serving.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	for _, c := range []struct {
		name, body, loc string
	}{
		{"not JSON", `{"code": `, "body"},
		{"no code", `{"language": "python"}`, "code"},
		{"a language outside SandboxFusion's list", `{"code": "x", "language": "cobol"}`, "language"},
		{"code of the wrong type", `{"code": 5}`, "code"},
		{"files not base64", `{"code": "x", "files": {"a.txt": "%%%"}}`, "files"},
		{"a file outside the workspace", `{"code": "x", "files": {"../a.txt": "eA=="}}`, "files"},
		{"a negative timeout", `{"code": "x", "run_timeout": -1}`, "run_timeout"},
		{"a fractional memory limit", `{"code": "x", "memory_limit_MB": 1.5}`, "memory_limit_MB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, resp := post(t, srv.URL+"/run_code", c.body)
			if code != http.StatusUnprocessableEntity {
				t.Fatalf("HTTP %d, want 422: %v", code, resp)
			}
			detail, _ := resp["detail"].([]any)
			if len(detail) == 0 {
				t.Fatalf("no detail: %v", resp)
			}
			loc := fmt.Sprint(detail[0].(map[string]any)["loc"])
			if !strings.Contains(loc, c.loc) {
				t.Errorf("loc %s, want it to name %s", loc, c.loc)
			}
		})
	}
	if code, resp := post(t, srv.URL+"/run_code", `{"code": "print(1)"}`); code != http.StatusOK || resp["status"] != "Success" {
		t.Errorf("after the bad requests: HTTP %d %v", code, resp)
	}
}

// TestWrongTypeProblems: a field of the wrong type gets pydantic v2's
// error item, as FastAPI answers it: the type wanted ("string_type", not
// the type sent), the field's loc, the message and the input sent (it was
// "number_type" with input null).
func TestWrongTypeProblems(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	for _, c := range []struct{ body, want string }{
		{`{"code": 1}`, `{"input":1,"loc":["body","code"],"msg":"Input should be a valid string","type":"string_type"}`},
		{`{"code": ["x"]}`, `{"input":["x"],"loc":["body","code"],"msg":"Input should be a valid string","type":"string_type"}`},
		{`{"code": "x", "run_timeout": "soon"}`, `{"input":"soon","loc":["body","run_timeout"],"msg":"Input should be a valid number, unable to parse string as a number","type":"float_parsing"}`},
		{`{"code": "x", "files": {"a.b.txt": 5}}`, `{"input":5,"loc":["body","files","a.b.txt"],"msg":"Input should be a valid string","type":"string_type"}`},
		{`{"code": "x", "files": [1]}`, `{"input":[1],"loc":["body","files"],"msg":"Input should be a valid dictionary","type":"dict_type"}`},
	} {
		code, resp := post(t, srv.URL+"/run_code", c.body)
		detail, _ := resp["detail"].([]any)
		if code != http.StatusUnprocessableEntity || len(detail) != 1 {
			t.Errorf("%s: HTTP %d %v", c.body, code, resp)
			continue
		}
		if got, _ := json.Marshal(detail[0]); string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.body, got, c.want)
		}
	}
}

// 64 requests at once (verl's default sandbox_fusion.max_concurrent) on a
// surface that runs 4 at a time, for a tenant allowed 2 executions at once
// and 40 requests a second, all succeed: the others wait their turn
// rather than get a 429, which verl would score as a sandbox error.
func TestConcurrentRequestsQueue(t *testing.T) {
	t.Parallel()
	tenants := server.NewTenants(server.TenantLimits{Executions: 2, Rate: 40, Burst: 4})
	srv := newServer(t, sandboxfusion.Options{MaxConcurrent: 4, Admit: sandboxfusion.TenantAdmit(tenants)})
	const n = 64
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, resp := post(t, srv.URL+"/run_code", verlRequest(fmt.Sprintf("print(%d * 2)", i), nil, 10, "python"))
			got, status := verlClassify(resp, str(fmt.Sprint(i*2)))
			if code != http.StatusOK || got != true {
				results[i] = fmt.Sprintf("request %d: HTTP %d, %v (%s): %v", i, code, got, status, resp)
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != "" {
			t.Error(r)
		}
	}
}

// GET /v1/ping answers "pong".
func TestPing(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	resp, err := http.Get(srv.URL + "/v1/ping")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got any
	if err := jsonDecode(resp, &got); err != nil || resp.StatusCode != http.StatusOK || got != "pong" {
		t.Errorf("ping: HTTP %d %v %v", resp.StatusCode, got, err)
	}
}
