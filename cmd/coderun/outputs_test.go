package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Outputs are checked before anything runs: a command never does its work
// only to lose it, and never writes its results into its own input.
func TestOutputsCheckedBeforeRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	const line = `{"id": "a", "code": "x = 1", "test": "assert x == 1"}` + "\n"
	if err := os.WriteFile(items, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	nb := filepath.Join(dir, "n.ipynb")
	if err := os.WriteFile(nb, []byte(`{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"eval into its own input", []string{"eval", items, "-o", items}, "is the input"},
		{"eval summary into its input", []string{"eval", items, "--summary", items}, "is the input"},
		{"eval into a directory", []string{"eval", items, "-o", dir}, "is a directory"},
		{"eval into a missing directory", []string{"eval", items, "-o", filepath.Join(dir, "no", "v.jsonl")}, "its directory"},
		{"notebook into a directory", []string{"notebook", "run", nb, "-o", dir}, "is a directory"},
		{"notebook into a missing directory", []string{"notebook", "run", nb, "-o", filepath.Join(dir, "no", "x.ipynb")}, "its directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := coderun(t, "", c.args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Fatalf("stderr lacks %q:\n%s", c.want, r.stderr)
			}
			if data, _ := os.ReadFile(items); string(data) != line {
				t.Fatalf("the input changed:\n%s", data)
			}
		})
	}
}
