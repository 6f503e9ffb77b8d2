package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox/linux"
)

// evalCLI runs "coderun eval args..." in-process and returns its standard
// output, standard error and error.
func evalCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"eval"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func needEvalSandbox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the linux sandbox runtime needs root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const evalProblems = `{"id": "ok1", "code": "x = 1", "test": "assert x == 1"}
{"id": "broken", "code": "x = 1", "test": "assert x ==
{"id": "ok2", "code": "def f(): return 2", "test": "assert f() == 2"}
{"id": "nocode", "test": "assert True"}
{"id": "fails", "code": "def f(): return 3", "test": "assert f() == 2, 'f is wrong'"}
`

func TestEvalStrictStopsBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	problems := writeFile(t, dir, "p.jsonl", evalProblems)
	out := filepath.Join(dir, "v.jsonl")
	_, _, err := evalCLI(t, problems, "-o", out, "--strict")
	if !isUsage(err) || !strings.Contains(err.Error(), "p.jsonl:2: malformed JSON") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the verdict file was created before the run stopped: %v", err)
	}
	_, _, err = evalCLI(t, problems, "--json")
	if !isUsage(err) {
		t.Errorf("--json without --output: %v", err)
	}
}

func TestEvalSkipsBadLinesAndResumes(t *testing.T) {
	needEvalSandbox(t)
	dir := t.TempDir()
	problems := writeFile(t, dir, "p.jsonl", evalProblems)
	out := filepath.Join(dir, "v.jsonl")
	stdout, stderr, err := evalCLI(t, problems, "-o", out, "--json", "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{
		"skipped " + problems + ":2: malformed JSON",
		"skipped " + problems + ":4: task nocode has no code to run",
		"2 bad input lines skipped",
		"passed    2 (66.67%)  failed 1",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var sum eval.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Items != 3 || sum.Passed != 2 || sum.Ran != 3 {
		t.Fatalf("summary %+v (%v):\n%s", sum, err, stdout)
	}
	verdicts := readVerdicts(t, out)
	if v := verdicts["fails"]; v.Status != eval.Failed || v.Error != "AssertionError: f is wrong" || v.Line != "assert f() == 2, 'f is wrong'" {
		t.Errorf("failing item: %+v", v)
	}

	// Cut the file back to its first verdict plus half a line, as a crash
	// would leave it, and run again: only the missing two run.
	data, _ := os.ReadFile(out)
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	second, _, _ := bytes.Cut(rest, []byte("\n"))
	os.WriteFile(out, append(append(first, '\n'), second[:len(second)/2]...), 0o644)
	stdout, stderr, err = evalCLI(t, problems, "-o", out, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "resuming: 1 of 3 items already have verdicts") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Items != 3 || sum.Ran != 2 || sum.Resumed != 1 || sum.Passed != 2 {
		t.Fatalf("summary after resume %+v (%v)", sum, err)
	}
	if got := readVerdicts(t, out); len(got) != 3 {
		t.Errorf("%d distinct verdicts in the file, want 3", len(got))
	}

	// Nothing left: nothing runs.
	_, stderr, err = evalCLI(t, problems, "-o", out)
	if err != nil || !strings.Contains(stderr, "0 run now, 3 resumed") {
		t.Errorf("third run: %v\n%s", err, stderr)
	}
}

func TestEvalSamplesWithUnknownTask(t *testing.T) {
	needEvalSandbox(t)
	dir := t.TempDir()
	problems := writeFile(t, dir, "p.jsonl", `{"task_id": "T/0", "prompt": "def f():\n", "canonical_solution": "    return 0\n", "test": "def check(c):\n    assert c() == 0\n", "entry_point": "f"}`+"\n")
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"task_id": "T/0", "completion": "    return %d\n"}`, i%2))
	}
	lines = append(lines[:2], append([]string{`{"task_id": "T/9", "completion": "    return 0\n"}`}, lines[2:]...)...)
	samples := writeFile(t, dir, "s.jsonl", strings.Join(lines, "\n"))
	stdout, stderr, err := evalCLI(t, problems, "--samples", samples, "--k", "1,2,10")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, samples+`:3: unknown task_id "T/9"`) {
		t.Errorf("stderr:\n%s", stderr)
	}
	// 4 samples, 2 correct: pass@1 = 0.5, pass@2 = 1 - C(2,2)/C(4,2) = 5/6.
	if !strings.Contains(stderr, "pass@1 0.5000 pass@2 0.8333\n") {
		t.Errorf("pass@k line:\n%s", stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 4 {
		t.Errorf("%d verdict lines on stdout, want 4", n)
	}
}

func readVerdicts(t *testing.T, path string) map[string]eval.Verdict {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]eval.Verdict{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v eval.Verdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("bad verdict line %q: %v", line, err)
		}
		out[v.ID] = v
	}
	return out
}
