package main

import (
	"strings"
	"testing"
)

// A program run from a file runs under that file's name: its errors and
// tracebacks name the user's file, not /work/main.py; and source that is not
// UTF-8 is read as the language reads a file, never an internal traceback.
func TestExecNamesTheUsersFile(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	for _, c := range []struct {
		name, file, code string
		exit             int
		stdout           string
		stderr           []string
	}{
		{"syntax error", "myscript.py", "x = 1\ndef f(:\n", 1, "",
			[]string{`File "/work/myscript.py", line 2`, "SyntaxError: invalid syntax"}},
		{"traceback", "calc.py", "import sys\nprint(sys.argv[0], __file__)\n1/0\n", 1, "/work/calc.py /work/calc.py\n",
			[]string{`File "/work/calc.py", line 3, in <module>`, "1/0", "ZeroDivisionError"}},
		{"not utf-8", "latin.py", "x = 1\nprint(\"caf\xe9\")\n", 1, "",
			[]string{"SyntaxError: Non-UTF-8 code starting with '\\xe9' in file /work/latin.py on line 2, but no encoding declared"}},
		{"coding declared", "declared.py", "# -*- coding: latin-1 -*-\ns = \"caf\xe9\"\nprint(s)\n1/0\n", 1, "café\n",
			[]string{`File "/work/declared.py", line 4, in <module>`, "1/0"}},
		{"bash", "job.sh", "echo $0\nnosuchcommand\n", 127, "job.sh\n", []string{"job.sh: line 2: nosuchcommand: command not found"}},
		{"node", "app.js", "console.log(__filename)\nnosuch()\n", 1, "/work/app.js\n", []string{"/work/app.js:2", "ReferenceError"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := coderun(t, "", "exec", write(c.file, c.code))
			if r.code != c.exit || r.stdout != c.stdout {
				t.Fatalf("exit %d stdout %q, want %d %q\nstderr: %s", r.code, r.stdout, c.exit, c.stdout, r.stderr)
			}
			for _, want := range c.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, r.stderr)
				}
			}
			for _, bad := range []string{"main.py", "main.js", "UnicodeEncodeError", "_coderun"} {
				if strings.Contains(r.stderr, bad) {
					t.Errorf("stderr mentions %q:\n%s", bad, r.stderr)
				}
			}
		})
	}
	// Code given with -c has no file: it stays main.py.
	if r := coderun(t, "", "exec", "-c", "1/0"); !strings.Contains(r.stderr, `File "/work/main.py", line 1`) {
		t.Errorf("-c traceback:\n%s", r.stderr)
	}
}
