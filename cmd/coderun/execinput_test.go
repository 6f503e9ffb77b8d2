package main

import (
	"strings"
	"testing"
)

// A program file's language comes from its extension (or its #! line); an
// extension coderun does not know is refused, never run as Python.
func TestExecLanguageByExtension(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	for _, c := range []struct {
		name, file, content string
		code                int
		stdout, stderr      string
	}{
		{"python", "a.py", "print('py', 6 * 7)", 0, "py 42\n", ""},
		{"bash", "a.sh", "echo \"sh $((6 * 7))\"", 0, "sh 42\n", ""},
		{"node module extension", "a.mjs", "console.log('js', 6 * 7)", 0, "js 42\n", ""},
		{"shebang without extension", "script", "#!/usr/bin/env bash\necho \"bash $((6 * 7))\"", 0, "bash 42\n", ""},
		{"csv refused", "data.csv", "a,b\n1,2\n", exitUsage, "", `what language ".csv" files are in; name it with --lang`},
		{"unknown extension refused", "t.kt", "fun main() {}", exitUsage, "", `".kt"`},
		{"c compiled, then run", "a.c", "#include <stdio.h>\nint main(void) { printf(\"c %d\\n\", 6 * 7); return 4; }\n", 4, "c 42\n", ""},
		{"c compile error", "b.c", "int main(void) { return nope; }\n", exitCompile, "", "compile_error: compilation failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := coderun(t, "", "exec", write(c.file, c.content))
			if r.code != c.code || r.stdout != c.stdout || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", r.code, r.stdout, r.stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
	// --lang overrides the extension.
	if r := coderun(t, "", "exec", "--lang", "python", write("x.csv", "print('forced')")); r.code != 0 || r.stdout != "forced\n" {
		t.Fatalf("--lang python: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// --stdin reads at most the workspace size: a device that never ends is
// refused quickly, not read until the host runs out of memory.
func TestExecStdinBounded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file, want string
	}{
		{"/dev/zero", "(the workspace size"},
		{"/", "is a directory"},
		{"/nonexistent", "no such file"},
	} {
		r := coderun(t, "", "exec", "--workspace-size", "1MiB", "-c", "import sys; print(len(sys.stdin.read()))", "--stdin", c.file)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("--stdin %s: exit %d, stderr %q; want %d and %q", c.file, r.code, r.stderr, exitUsage, c.want)
		}
	}
}

// A NameError or AttributeError ends with the interpreter's "Did you
// mean" hint, as a terminal would show it: a model fixing its code needs it.
func TestExecTracebackHints(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	for code, want := range map[string]string{
		"import math\nprint(math.sqroot(2))": "AttributeError: module 'math' has no attribute 'sqroot'. Did you mean: 'sqrt'?",
		"values = [1, 2]\nprint(valeus)":     "NameError: name 'valeus' is not defined. Did you mean: 'values'?",
	} {
		if r := coderun(t, "", "exec", "-c", code); r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%q: exit %d, stderr lacks %q:\n%s", code, r.code, want, r.stderr)
		}
	}
}
