package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Tracebacks as the sandbox's Python 3.11 prints them.
const (
	tbAssert = `Traceback (most recent call last):
  File "/work/main.py", line 5, in <module>
    check(lambda x: x)
  File "/work/main.py", line 4, in check
    assert c(1) == 2, "one"
           ^^^^^^^^^
AssertionError: one
`
	tbSyntax = `  File "/work/main.py", line 2
    def f(:
          ^
SyntaxError: invalid syntax
`
	tbMultiline = `Traceback (most recent call last):
  File "/work/main.py", line 6, in <module>
    raise ValueError("bad\nsecond line") from None
ValueError: bad
second line
`
	tbLibrary = `some output the program wrote
Traceback (most recent call last):
  File "/work/main.py", line 3, in <module>
    json.loads("{")
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode
    obj, end = self.scan_once(s, idx)
               ^^^^^^^^^^^^^^^^^^^^^^
json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
`
	tbChained = `Traceback (most recent call last):
  File "/work/main.py", line 2, in <module>
    1/0
ZeroDivisionError: division by zero

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/work/main.py", line 4, in <module>
    undefined_name
NameError: name 'undefined_name' is not defined
`
)

// Tracebacks printed by the harness of HumanEval and MBPP items: the tests'
// frames, then (for an exception the candidate raised) the solution's, then
// a library's.
const (
	tbHarnessSolution = `Traceback (most recent call last):
  File "<tests>", line 3, in check
    assert candidate(0) == 1
  File "<solution>", line 7, in f
    return 1 / x
ZeroDivisionError: division by zero
`
	tbHarnessTest = `Traceback (most recent call last):
  File "<tests>", line 9, in <module>
    check(f)
  File "<tests>", line 4, in check
    assert candidate(2) == 2
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
AssertionError
`
)

func TestExceptionOf(t *testing.T) {
	for _, c := range []struct {
		name, stderr, exc, line string
	}{
		{"assert", tbAssert, "AssertionError: one", `assert c(1) == 2, "one"`},
		{"syntax", tbSyntax, "SyntaxError: invalid syntax", "def f(:"},
		{"multiline", tbMultiline, "ValueError: bad\nsecond line", `raise ValueError("bad\nsecond line") from None`},
		{"library frames", tbLibrary, "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)", `json.loads("{")`},
		{"chained", tbChained, "NameError: name 'undefined_name' is not defined", "undefined_name"},
		{"no traceback", "warning: x\nsegfault happened\n\n", "segfault happened", ""},
		{"harness: the solution's line", tbHarnessSolution, "ZeroDivisionError: division by zero", "return 1 / x"},
		{"harness: the test's line", tbHarnessTest, "AssertionError", "assert candidate(2) == 2"},
		{"empty", "", "", ""},
	} {
		exc, line := exceptionOf(c.stderr)
		if exc != c.exc || line != c.line {
			t.Errorf("%s: got (%q, %q), want (%q, %q)", c.name, exc, line, c.exc, c.line)
		}
	}
}

func TestJudge(t *testing.T) {
	const marker = "coderun-eval-done-x"
	for _, c := range []struct {
		name   string
		res    sandbox.Result
		status Status
		err    string
	}{
		{"passed", sandbox.Result{Reason: sandbox.ReasonExited, Stdout: "hi\n" + marker + "\n"}, Passed, ""},
		{"early exit 0", sandbox.Result{Reason: sandbox.ReasonExited, Stdout: "hi\n"}, Failed, "exited with code 0 before the tests finished"},
		{"assertion", sandbox.Result{Reason: sandbox.ReasonExited, ExitCode: 1, Stderr: tbAssert}, Failed, "AssertionError: one"},
		{"exit 3", sandbox.Result{Reason: sandbox.ReasonExited, ExitCode: 3}, Failed, "exited with code 3"},
		{"signal", sandbox.Result{Reason: sandbox.ReasonExited, ExitCode: -1, Signal: "SIGSEGV"}, Failed, "terminated by SIGSEGV"},
		{"MemoryError", sandbox.Result{Reason: sandbox.ReasonExited, ExitCode: 1, Stderr: "Traceback (most recent call last):\n  File \"/work/main.py\", line 1, in <module>\n    x = [0] * 10**12\nMemoryError\n"}, Memory, "MemoryError"},
		{"timeout", sandbox.Result{Reason: sandbox.ReasonTimeout, ExitCode: -1, Signal: "SIGKILL", Error: "wall time limit of 1s reached"}, Timeout, "wall time limit of 1s reached"},
		{"cpu", sandbox.Result{Reason: sandbox.ReasonCPULimit, ExitCode: -1, Error: "CPU time limit of 1s reached"}, Timeout, "CPU time limit of 1s reached"},
		{"oom", sandbox.Result{Reason: sandbox.ReasonMemoryLimit, ExitCode: -1, Error: "a process exceeded the memory limit"}, Memory, "a process exceeded the memory limit"},
		{"output", sandbox.Result{Reason: sandbox.ReasonOutputLimit, ExitCode: -1, Error: "output exceeded 1 MiB"}, Failed, "output exceeded 1 MiB"},
		{"setup", sandbox.Result{Reason: sandbox.ReasonSetupError, ExitCode: -1, Error: "mount: boom"}, Error, "sandbox setup failed: mount: boom"},
	} {
		v := Verdict{}
		c.res.Usage = sandbox.Usage{Wall: 1500 * time.Microsecond, CPUUser: time.Millisecond, CPUSystem: time.Millisecond}
		judge(&v, &c.res, marker)
		if v.Status != c.status || v.Error != c.err {
			t.Errorf("%s: got %s %q, want %s %q", c.name, v.Status, v.Error, c.status, c.err)
		}
		if v.WallMS != 1.5 || v.CPUMS != 2 {
			t.Errorf("%s: timings %v %v", c.name, v.WallMS, v.CPUMS)
		}
		if (v.Status == Passed) != (v.Stderr == "") && c.res.Stderr != "" {
			t.Errorf("%s: stderr %q", c.name, v.Stderr)
		}
	}
}

func TestTailAndClip(t *testing.T) {
	s := strings.Repeat("é", 3000) // 2 bytes each
	if got := tail(s, 101); !strings.HasPrefix(got, "…é") || len(got) > 104 {
		t.Errorf("tail cut a rune: %q", got[:10])
	}
	if got := clip(s, 101); !strings.HasSuffix(got, "é…") {
		t.Errorf("clip cut a rune: %q", got[len(got)-10:])
	}
	lines := strings.Repeat("x", 50) + "\n" + strings.Repeat("y", 80)
	if got := tail(lines, 100); got != "…\n"+strings.Repeat("y", 80) {
		t.Errorf("tail should start at a line: %q", got)
	}
}

// TestPanicOf: a failed Rust test's reason comes from the harness's
// report on stdout, in the panic formats of old and new rustc.
func TestPanicOf(t *testing.T) {
	for out, want := range map[string]string{
		"running 1 test\ntest tests::t ... FAILED\n\nfailures:\n\n---- tests::t stdout ----\n" +
			"thread 'tests::t' panicked at 'assertion failed: `(left == right)`\n  left: `4`,\n right: `1`', main.rs:20:9\n" +
			"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n": "thread 'tests::t' panicked at 'assertion failed: `(left == right)` left: `4`, right: `1`', main.rs:20:9",
		"thread 'tests::t' panicked at main.rs:20:9:\nassertion `left == right` failed\n  left: 4\n right: 1\n\nfailures:\n": "thread 'tests::t' panicked at main.rs:20:9: assertion `left == right` failed left: 4 right: 1",
		"test result: FAILED. 0 passed; 1 failed\n": "",
	} {
		if got := panicOf(out); got != want {
			t.Errorf("panicOf(%q) = %q, want %q", out, got, want)
		}
	}
}
