package eval

import (
	_ "embed"
	"strings"
)

// bashHarnessSource is the harness of generic bash items: the tests run in
// the harness's shell, the solution's functions in processes of their own
// that cannot reach it (see the package documentation, "Verdicts a solution
// cannot forge").
//
//go:embed harness.sh
var bashHarnessSource string

// bashHarnessProgram is the program that tests a bash solution in
// processes of its own: the solution's source as data, then the harness,
// which reads the marker and the tests from its standard input.
func bashHarnessProgram(solution string) string {
	return "__cr_solution=" + shellQuote(solution) + "\n" + bashHarnessSource
}

// shellQuote is s as one single-quoted word of POSIX shell (a quote in s
// ends the quoting, is escaped with a backslash, and the quoting resumes).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
