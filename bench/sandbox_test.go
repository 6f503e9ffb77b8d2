package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With a baseline binary, the command-line rows have its exec -c and
// version beside this binary's, run as many times, and the table prints
// them with their CPU against python3's.
func TestCLIRowsWithBaseline(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	exe := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := SandboxConfig{Code: "print(1)", CLIRuns: 2, Exe: exe("new"), BaselineExe: exe("old")}
	rows, err := measureCLI(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	want := []string{"python3 -c", "coderun exec -c", "coderun version (start only)", "baseline exec -c", "baseline version"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("rows %q, want %q", names, want)
	}
	var out bytes.Buffer
	(&SandboxReport{Config: cfg, Latencies: []Latency{{Name: "bare"}}, CLI: rows}).Print(&out)
	if !strings.Contains(out.String(), "baseline exec -c") || !strings.Contains(out.String(), "CPU - python3") {
		t.Errorf("the table lacks the baseline's rows or the CPU column:\n%s", out.String())
	}
}
