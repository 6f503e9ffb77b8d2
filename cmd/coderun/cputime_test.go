package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --cpu-time reaches a session's cells, in repl and in notebook run: a
// spinning cell stops at its CPU-time limit, long before its time limit,
// and the next cell runs in the same session.
func TestSessionCPUTimeFlag(t *testing.T) {
	needSandbox(t)
	needSessions(t)
	const spin = "x = 41\nwhile True:\n    pass\n"
	t.Run("repl", func(t *testing.T) {
		start := time.Now()
		r := coderun(t, spin+"\nprint(x + 1)\n", "repl", "--cpu-time", "1s", "--timeout", "60s")
		if r.code != 1 || !strings.Contains(r.stderr, "cell 1: timeout") {
			t.Fatalf("exit %d, want 1 with cell 1 timed out:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "42") {
			t.Errorf("the next cell did not run in the same session:\n%s", r.stdout)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %s: the CPU limit is 1s, the time limit 60s", d)
		}
	})
	t.Run("notebook", func(t *testing.T) {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "nb.ipynb"), filepath.Join(dir, "out.ipynb")
		nb := `{"cells": [
 {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "x = 41\nwhile True:\n    pass\n"},
 {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "print(x + 1)"}],
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
 "nbformat": 4, "nbformat_minor": 5}`
		if err := os.WriteFile(in, []byte(nb), 0o644); err != nil {
			t.Fatal(err)
		}
		r := coderun(t, "", "notebook", "run", in, "-o", out, "--cpu-time", "1s", "--timeout", "60s")
		if r.code != 1 || !strings.Contains(r.stderr, "cell 1 (1/2): timeout") {
			t.Fatalf("exit %d, want 1 with cell 1 timed out:\n%s", r.code, r.stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "CPU-time limit (1s)") || !strings.Contains(string(data), `"42\n"`) {
			t.Errorf("executed notebook:\n%s", data)
		}
	})
}
