package app

import (
	"context"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// packagesOfInterest are the Python packages a model is told about when the
// sandbox has them: those it reaches for in data work.
var packagesOfInterest = []string{
	"numpy", "pandas", "matplotlib", "scipy", "sklearn", "statsmodels", "seaborn", "sympy",
	"networkx", "PIL", "openpyxl", "pyarrow", "polars", "bs4", "yaml",
}

// probeProgram prints, one a line, the packages of its argument list that
// the sandbox's Python finds (without importing them).
const probeProgram = `import importlib.util, sys
for name in sys.stdin.read().split():
    if importlib.util.find_spec(name) is not None:
        print(name)
`

// PythonPackages returns which of the packages of interest the runtime's
// Python sandbox offers, found by a run in the sandbox itself (an
// alternative root may have others than the host); nil when the probe
// cannot run.
func PythonPackages(ctx context.Context, rt sandbox.Runtime) []string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{
		Language: sandbox.Python,
		Code:     probeProgram,
		Stdin:    []byte(strings.Join(packagesOfInterest, "\n")),
		Limits:   sandbox.Limits{WallTime: 15 * time.Second},
	})
	if err != nil || !res.OK() {
		return nil
	}
	var found []string
	for _, line := range strings.Split(res.Stdout, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			found = append(found, line)
		}
	}
	return found
}
