package eval

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
)

// harnessSource is the Python harness that runs a HumanEval or MBPP
// solution in one process and its tests in another (see the package
// documentation, "Verdicts a solution cannot forge").
//
//go:embed harness.py
var harnessSource string

// harnessProgram is the program that tests solution in a process of its
// own: the harness, then a call that hands it the solution's source (for
// HumanEval, the prompt it continues and the entry point; for MBPP, the
// setup code that runs after the solution). The tests are not in it: the
// harness reads them from its standard input (harnessTests) after it has
// forked the solution's process.
func harnessProgram(solution, prompt, entry, setup string) string {
	return harnessCall(false, solution, prompt, entry, setup)
}

// genericProgram is the program that tests a generic item's solution in a
// process of its own: the harness, and a call that hands it the solution;
// the tests (harnessTests) may use any name the solution defines that is
// not a builtin, and read the attributes of its objects (Solution().f(x)).
func genericProgram(solution string) string {
	return harnessCall(true, solution, "", "", "")
}

// harnessCall is the harness followed by its call: _run(solution, prompt,
// entry, setup), and attributes=True when the tests may read the
// attributes of the solution's objects.
func harnessCall(attributes bool, args ...string) string {
	var b strings.Builder
	b.WriteString(harnessLoader())
	b.WriteString("\n_run(")
	for i, s := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyString(s))
	}
	if attributes {
		b.WriteString(", attributes=True")
	}
	b.WriteString(")\n")
	return b.String()
}

// harnessTests is what the harness reads after the run's marker: the test
// code, and the reference solution, whose top-level names are the names of
// the solution's that MBPP's tests may use (the reference never reaches the
// solution's process).
func harnessTests(tests, reference string) string {
	return jsonText(struct {
		Tests     string `json:"tests"`
		Reference string `json:"reference,omitempty"`
	}{tests, reference})
}

// pyString is s as a Python string literal: a JSON string is one, with the
// same value (Go escapes only with \", \\, \n, \r, \t and \uXXXX, all of
// which Python reads alike), except that invalid UTF-8 becomes U+FFFD, as
// it would not be valid Python source anyway.
func pyString(s string) string { return jsonText(s) }

// jsonText is v in JSON, without HTML's escapes.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // strings and structs of strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// harnessLoader is the harness as the program's first lines. Compiling its
// source costs a sandboxed run about 9 ms of CPU, several times the rest of
// a HumanEval item, so the harness comes compiled (marshal) by the host's
// own /usr/bin/python3 — the interpreter sandboxes run, from the same /usr
// — with the source kept for an interpreter of another build (an
// alternative root), which compiles it as before. Either way its code
// carries the program's file name, as when the source was the program.
var harnessLoader = sync.OnceValue(func() string {
	version, code, err := compileHarness(programFile)
	if err != nil {
		return loader("", "")
	}
	return loader(version, code)
})

// loader is the harness's lines: its code compiled by the Python whose
// sys.version is version, used by that Python, else its source compiled.
func loader(version, code string) string {
	src := "exec(compile(" + pyString(harnessSource) + ", __file__, \"exec\"))\n"
	if code == "" {
		return src
	}
	return "import sys as _sys\n" +
		"if _sys.version == " + pyString(version) + " and __file__ == " + pyString(programFile) + ":\n" +
		"    import base64 as _b64, marshal as _marshal\n" +
		"    exec(_marshal.loads(_b64.b64decode(" + pyString(code) + ")))\n" +
		"else:\n    " + src
}

// programFile is the file name a sandboxed Python program runs as (the
// runtime's default, which eval does not change).
const programFile = "/work/main.py"

// compileHarness has /usr/bin/python3 compile the harness as file name
// and returns the interpreter's version string and the code, marshalled
// and in base64 (decoded in C: base64's other alphabets decode in Python,
// slower than compiling).
func compileHarness(name string) (version, code string, err error) {
	const script = `import marshal, sys
src = sys.stdin.read()
sys.stdout.write(sys.version + "\0")
sys.stdout.flush()
sys.stdout.buffer.write(marshal.dumps(compile(src, sys.argv[1], "exec")))
`
	cmd := exec.Command("/usr/bin/python3", "-I", "-c", script, name)
	cmd.Stdin = strings.NewReader(harnessSource)
	out, err := cmd.Output()
	if err != nil {
		return "", "", err
	}
	v, data, ok := bytes.Cut(out, []byte{0})
	if !ok || len(data) == 0 {
		return "", "", errors.New("no code")
	}
	return string(v), base64.StdEncoding.EncodeToString(data), nil
}
