package app

import (
	"slices"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
)

// The packages named to the model are found in the sandbox itself.
func TestPythonPackages(t *testing.T) {
	rt := linuxtest.Runtime(t, linux.Options{})
	got := PythonPackages(t.Context(), rt)
	for _, want := range []string{"numpy", "pandas", "matplotlib"} { // scripts/setup.sh installs them
		if !slices.Contains(got, want) {
			t.Errorf("%s not found: %v", want, got)
		}
	}
	for _, p := range got {
		if !slices.Contains(packagesOfInterest, p) {
			t.Errorf("%s is not a package that was asked about", p)
		}
	}
}
