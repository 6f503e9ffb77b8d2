package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initBudget is the most a coderun package's initialisation may allocate.
// Every command pays every linked package's initialisers before main runs,
// a one-shot exec too: a package-level regular expression costs 10–100
// KiB and up to 0.7 ms of CPU to compile, so coderun's own are compiled
// on first use (sync.OnceValue), and its package-level tables stay small.
const initBudget = 16 << 10

// initOverBudget are packages known to be over the budget, with why.
var initOverBudget = map[string]string{}

// TestPackageInitIsSmall: no coderun package's initialisers allocate more
// than initBudget, as the Go runtime reports them (GODEBUG=inittrace=1)
// in the real binary's start.
func TestPackageInitIsSmall(t *testing.T) {
	cmd := exec.Command(binary, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("coderun version: %v\n%s", err, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, N allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/coderun/coderun") {
			continue
		}
		seen++
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		if why, known := initOverBudget[f[1]]; known {
			t.Logf("%s: %d bytes (known: %s)", f[1], bytes, why)
			continue
		}
		if bytes > initBudget {
			t.Errorf("%s allocates %d bytes (%s allocs) in its initialisers, over %d: make its package-level work lazy", f[1], bytes, f[9], initBudget)
		}
	}
	if seen == 0 {
		t.Fatalf("no coderun package in the init trace:\n%s", stderr.String())
	}
}
