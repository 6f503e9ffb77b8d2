package sandboxfusion

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coderun/coderun/language"
)

// sfLanguages are the names SandboxFusion's /run_code accepts (its
// Language literal); any other name is refused as its server refuses it,
// with 422.
var sfLanguages = []string{"python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp",
	"bash", "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia",
	"pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift", "racket"}

// resolveLanguage returns the language coderun runs a SandboxFusion
// language name with. A name outside SandboxFusion's list is a
// *validationError; a name of the list coderun does not run is an error
// naming it (answered as a SandboxError).
func resolveLanguage(name string) (language.Language, error) {
	if !slices.Contains(sfLanguages, name) {
		quoted := make([]string, len(sfLanguages))
		for i, n := range sfLanguages {
			quoted[i] = "'" + n + "'"
		}
		return "", invalid("literal_error", "language",
			"Input should be "+strings.Join(quoted[:len(quoted)-1], ", ")+" or "+quoted[len(quoted)-1], name)
	}
	if why, ok := modes[name]; ok {
		return "", fmt.Errorf("coderun does not run SandboxFusion's %s mode: %s", name, why)
	}
	if l, ok := fromSandboxFusion(name); ok {
		return l, nil
	}
	return "", fmt.Errorf("coderun does not run %s code (SandboxFusion language %q); it runs: %s",
		name, name, strings.Join(runnable(), ", "))
}

// modes are SandboxFusion names that are a way of running a language's
// code rather than the language, which coderun does not have: each is
// refused, saying why, rather than run as plain code.
var modes = map[string]string{
	"pytest": "the code's tests would not be run by pytest but the file as a script, so failing tests would pass",
}

// runnable lists the SandboxFusion names of the languages coderun runs.
func runnable() []string {
	var out []string
	for _, n := range sfLanguages {
		if _, mode := modes[n]; mode {
			continue
		}
		if _, ok := fromSandboxFusion(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// fromSandboxFusion maps a SandboxFusion language name to coderun's: the
// language table declares each language's SandboxFusion names ("nodejs"
// is Node's, "go_test" Go's).
func fromSandboxFusion(name string) (language.Language, bool) {
	return language.FromSandboxFusion(name)
}
