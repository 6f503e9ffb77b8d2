package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A one-shot run may be in any language of the table: a C program is
// compiled, then run, and its compile step comes back as the result's
// compile; a compile error is its own reason, with the diagnostics. Every
// answer is held to /openapi.json (the harness checks it).
func TestExecCompiledLanguage(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc on this machine (scripts/setup.sh installs it)")
	}
	h := newHarness(t, nil)
	type result struct {
		Stdout, Stderr, Reason string
		ExitCode               int `json:"exit_code"`
		Compile                *struct {
			Reason, Stderr string
			ExitCode       int `json:"exit_code"`
		}
	}
	var res result
	r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"language": "c", "stdin": "20",
		"code": "#include <stdio.h>\nint main(void) { int n; scanf(\"%d\", &n); printf(\"%d\\n\", n + 22); return 0; }\n"})
	r.json(t, &res)
	if r.status != 200 || res.Reason != "exited" || res.Stdout != "42\n" || res.Compile == nil || res.Compile.ExitCode != 0 {
		t.Fatalf("C program: %d %s", r.status, r.body)
	}
	res = result{}
	r = h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"language": "c", "code": "int main(void) { return undefined_name; }\n"})
	r.json(t, &res)
	if r.status != 200 || res.Reason != "compile_error" || res.Compile == nil || !strings.Contains(res.Compile.Stderr, "undefined_name") {
		t.Fatalf("compile error: %d %s", r.status, r.body)
	}
	// Compile arguments reach the compiler; a language without a compile
	// step refuses them.
	res = result{}
	r = h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"language": "c", "compile_args": []string{"-DANSWER=42"},
		"code": "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", ANSWER); return 0; }\n"})
	r.json(t, &res)
	if r.status != 200 || res.Stdout != "42\n" {
		t.Fatalf("compile args: %d %s", r.status, r.body)
	}
	if r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"language": "python", "compile_args": []string{"-O"}, "code": "print(1)"}); r.status != 400 {
		t.Errorf("python with compile args: %d %s", r.status, r.body)
	}
	// A node session (TestBadInput: a compiled language has none).
	s := h.createSession(aliceKey, map[string]any{"language": "node"})
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "let x = 6 * 7"}).json(t, &cell)
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "console.log(x)"}).json(t, &cell)
	if cell.Status != "ok" || cell.stdout() != "42\n" {
		t.Errorf("node session: %+v", cell)
	}
}
