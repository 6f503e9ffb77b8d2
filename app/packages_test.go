package app

import (
	"os"
	"slices"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
)

// The packages named to the model are found in the sandbox itself.
func TestPythonPackages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	rt, err := linux.New(linux.Options{})
	if err != nil {
		t.Skip(err)
	}
	defer rt.Close()
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
