package eval

import (
	_ "embed"

	"github.com/coderun/coderun/language"
)

// nodeHarnessSource is the harness of generic node items: the tests run in
// the harness's process, the solution in a process of its own that cannot
// reach it (see the package documentation, "Verdicts a solution cannot
// forge").
//
//go:embed harness.js
var nodeHarnessSource string

// nodeHarnessProgram is the program that tests a node solution in a
// process of its own: the solution's source as data, where the solution
// finds the modules the evaluation provides (language.NodeModules), then
// the harness, which reads the marker and the tests from its standard
// input.
func nodeHarnessProgram(solution string) string {
	return "const __cr_solution = " + jsonText(solution) + ";\nconst __cr_node_modules = " + jsonText(language.NodeModules) + ";\n" + nodeHarnessSource
}
