package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// validate runs Debian's nbformat validator on the notebook file.
func validate(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/nbformat"); err != nil {
		t.Skip("Debian's python3-nbformat is not installed")
	}
	out, err := exec.Command("/usr/bin/python3", "-c", "import nbformat,sys; nbformat.validate(nbformat.read(sys.argv[1], 4))", path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat rejects %s: %v\n%s", path, err, out)
	}
}

func writeNotebook(t *testing.T, nb *jupyter.Notebook, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	var buf bytes.Buffer
	if _, err := nb.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNotebookExportAndReplay(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{})
	for _, code := range []string{
		"import math\nx = math.sqrt(16)",
		"print('x is', x)\nx",
		"import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['u', 'v']})",
		"import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2))\nplt.plot([1, 4, 2]);",
		"from IPython.display import display, JSON, SVG\ndisplay(JSON({'k': [1, 2]}))\nSVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"2\" height=\"2\"/>')",
		"y = x * undefined_name",
	} {
		run(t, s, code)
	}
	if _, err := s.Execute(context.Background(), session.Exec{Code: "y = x * 2\ny", RetryOf: 6}); err != nil {
		t.Fatal(err)
	}
	nb := s.Export()
	path := writeNotebook(t, nb, "session.ipynb")
	validate(t, path)

	// Read it back and replay it in a new session: same outputs.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	read, err := jupyter.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Cells) != 7 || read.Language() != sandbox.Python {
		t.Fatalf("read %d cells, language %s", len(read.Cells), read.Language())
	}
	replayed, err := session.Replay(context.Background(), newSession(t, session.Config{}), read, session.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, writeNotebook(t, replayed, "replayed.ipynb"))
	for i := range nb.Cells {
		want, got := nb.Cells[i], replayed.Cells[i]
		if got.ExecutionCount != want.ExecutionCount {
			t.Errorf("cell %d: execution count %d, want %d", i, got.ExecutionCount, want.ExecutionCount)
		}
		w, _ := json.Marshal(want.Outputs)
		g, _ := json.Marshal(got.Outputs)
		// Text reprs carry object addresses ("at 0x7f…"); everything else
		// must be the same, images included.
		if normalize(string(g)) != normalize(string(w)) {
			t.Errorf("cell %d outputs differ:\n got %.600s\nwant %.600s", i, g, w)
		}
	}
	md := nb.Cells[5].Metadata["coderun"].(map[string]any)
	if md["status"] != "error" || md["retried_by"] != 7 {
		t.Fatalf("failed cell metadata: %v", md)
	}

	// Skipping retried cells replays only the successful path.
	clean, err := session.Replay(context.Background(), newSession(t, session.Config{}), read, session.ReplayOptions{SkipRetried: true, StopOnError: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(clean.Cells[5].Outputs) != 0 || clean.Cells[6].Outputs[0].Data.Text("text/plain") != "8.0" {
		t.Fatalf("SkipRetried: %+v", clean.Cells[5:])
	}
}

func normalize(s string) string {
	for {
		i := strings.Index(s, " at 0x")
		if i < 0 {
			return s
		}
		j := i + len(" at 0x")
		for j < len(s) && strings.ContainsRune("0123456789abcdef", rune(s[j])) {
			j++
		}
		s = s[:i] + " at ADDR" + s[j:]
	}
}

// A notebook as Jupyter writes it (sources as lists of lines, markdown,
// an older minor version without cell ids) runs, keeps its other cells,
// and comes out valid.
func TestNotebookFromJupyter(t *testing.T) {
	t.Parallel()
	src := `{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "Some *text*."]},
  {"cell_type": "code", "execution_count": 9, "metadata": {"tags": ["keep"]}, "outputs": [
    {"output_type": "stream", "name": "stdout", "text": ["stale\n"]}],
   "source": ["total = 0\n", "for i in range(5):\n", "    total += i\n", "print(total)"]},
  {"cell_type": "raw", "metadata": {}, "source": "raw text"},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "total * 2"}
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "custom": {"k": 1}},
 "nbformat": 4,
 "nbformat_minor": 2
}`
	nb, err := jupyter.Read(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := session.Replay(context.Background(), newSession(t, session.Config{}), nb, session.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeNotebook(t, out, "out.ipynb")
	validate(t, path)
	if out.Cells[0].Source != "# Title\nSome *text*." || out.Cells[2].Source != "raw text" || out.Metadata["custom"] == nil {
		t.Fatalf("non-code content changed: %+v", out.Cells)
	}
	if got := out.Cells[1].Outputs; len(got) != 1 || got[0].Text != "10\n" || out.Cells[1].Metadata["tags"] == nil {
		t.Fatalf("cell 1: %+v", out.Cells[1])
	}
	if got := out.Cells[3].Outputs; len(got) != 1 || got[0].Data.Text("text/plain") != "20" || out.Cells[3].ExecutionCount != 2 {
		t.Fatalf("cell 3: %+v", out.Cells[3])
	}
}

func TestBashNotebook(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Bash})
	run(t, s, "echo hello; echo warn >&2")
	run(t, s, "false")
	nb := s.Export()
	if nb.Language() != sandbox.Bash {
		t.Fatalf("language %s", nb.Language())
	}
	validate(t, writeNotebook(t, nb, "bash.ipynb"))
	out, err := session.Replay(context.Background(), newSession(t, session.Config{Language: sandbox.Bash}), nb, session.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// stdout and stderr are two pipes: their interleaving is not kept,
	// each stream's content is.
	streams := func(c jupyter.Cell) map[string]string {
		m := map[string]string{}
		for _, o := range c.Outputs {
			m[o.Name] += o.Text
		}
		return m
	}
	if w, g := streams(nb.Cells[0]), streams(out.Cells[0]); w["stdout"] != "hello\n" || w["stderr"] != "warn\n" || g["stdout"] != w["stdout"] || g["stderr"] != w["stderr"] {
		t.Fatalf("replay: %q vs %q", g, w)
	}
	if e := out.Cells[1].Outputs[0]; e.Ename != "ExitStatus" || e.Evalue != nb.Cells[1].Outputs[0].Evalue {
		t.Fatalf("replay of the failed cell: %+v", out.Cells[1].Outputs)
	}
}
