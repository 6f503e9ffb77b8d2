package eval

import (
	_ "embed"
	"encoding/json"
	"strings"
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
	var b strings.Builder
	b.WriteString(harnessSource)
	b.WriteString("\n_run(")
	for i, s := range []string{solution, prompt, entry, setup} {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyString(s))
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
