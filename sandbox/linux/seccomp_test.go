package linux

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A sandbox init loads the filter the host assembled; without one, or with
// bytes that are not whole instructions, it refuses to go on rather than
// run the program unfiltered, and this thread stays unfiltered.
func TestLoadSeccompRefusesNoFilter(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for name, raw := range map[string][]byte{"none": nil, "empty": {}, "7 bytes": make([]byte, 7), "9 bytes": make([]byte, 9)} {
		if err := loadSeccomp(raw); err == nil {
			t.Fatalf("%s: loaded", name)
		}
	}
	if mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil || mode != 0 {
		t.Errorf("this thread's seccomp mode is %d (%v), want none", mode, err)
	}
	// What the host sends decodes back to the program it assembled.
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := seccompBytes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFilter(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, prog) {
		t.Errorf("the filter sent decodes to %d instructions other than the %d assembled", len(got), len(prog))
	}
}
