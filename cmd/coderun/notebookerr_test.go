package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed notebook is refused before anything runs, naming the file, the
// line and column, and what was expected there.
func TestNotebookRunMalformed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ name, src, want string }{
		{"cut.ipynb", "{\n \"cells\": [\n  {\"cell_type\": \"code\", \"source\": \"x\"\n",
			"cut.ipynb: line 4, column 1: the file ends in the middle of the notebook: the '{' at line 3, column 3 is never closed (expected more, then '}')"},
		{"types.ipynb", "{\"nbformat\": 4, \"cells\": [\n {\"cell_type\": \"code\", \"source\": 5}]}",
			`types.ipynb: line 2, column 34: cell 1: "source" is 5: expected a string or a list of strings`},
		{"v3.ipynb", "{\"nbformat\": 3, \"worksheets\": []}",
			`v3.ipynb: line 1, column 14: "nbformat" is 3: expected 4`},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		r := coderun(t, "", "notebook", "run", path)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, r.code, r.stderr, c.want)
		}
		for _, bad := range []string{"unexpected EOF", "Go struct", "json:"} {
			if strings.Contains(r.stderr, bad) {
				t.Errorf("%s: stderr says %q: %s", c.name, bad, r.stderr)
			}
		}
		if _, err := os.Stat(strings.TrimSuffix(path, ".ipynb") + ".out.ipynb"); err == nil {
			t.Errorf("%s: an output notebook was written", c.name)
		}
	}
}
