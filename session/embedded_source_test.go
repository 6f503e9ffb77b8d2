package session

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The programs embedded in the module's Go packages (//go:embed of .py,
// .sh and .js files: the session drivers, the sandbox's bootstraps, the zygote, the
// policy analyser) run only inside a sandbox or a subprocess, and some of
// their paths run in no test here. A syntax error in any of them must still
// fail `go test`: this compiles every one, as python3, bash and node would read it.

// compilePython is the script that compiles each file named in its
// arguments with compile() (nothing is written next to the sources) and
// prints "FILE:LINE:COL: MESSAGE" for each that does not compile. Warnings
// the compiler gives (invalid escape sequences) are errors: they become
// errors in a later Python.
const compilePython = `
import sys, warnings
warnings.simplefilter("error")
bad = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        src = f.read()
    try:
        compile(src, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        print("%s:%s:%s: %s" % (path, getattr(e, "lineno", 0), getattr(e, "offset", 0), getattr(e, "msg", e)))
        bad = 1
sys.exit(bad)
`

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// embeddedFiles returns the files that //go:embed directives of the
// module's non-test Go files name, by extension (".py", ".sh", ...).
func embeddedFiles(root string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			patterns, ok := strings.CutPrefix(sc.Text(), "//go:embed ")
			if !ok {
				continue
			}
			for _, p := range strings.Fields(patterns) {
				matches, err := filepath.Glob(filepath.Join(filepath.Dir(path), p))
				if err != nil {
					return err
				}
				for _, m := range matches {
					ext := filepath.Ext(m)
					if !slices.Contains(out[ext], m) {
						out[ext] = append(out[ext], m)
					}
				}
			}
		}
		return sc.Err()
	})
	return out, err
}

// checkPython compiles files with /usr/bin/python3 and returns its report.
func checkPython(files []string) (string, error) {
	out, err := exec.Command("/usr/bin/python3", append([]string{"-I", "-c", compilePython}, files...)...).CombinedOutput()
	return string(out), err
}

// checkBash parses one file with bash -n.
func checkBash(file string) (string, error) {
	out, err := exec.Command("/usr/bin/bash", "-n", file).CombinedOutput()
	return string(out), err
}

func TestEmbeddedSourcesCompile(t *testing.T) {
	root := moduleRoot(t)
	files, err := embeddedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	// The scan must find what this package embeds, or it finds nothing.
	for _, want := range []string{"session/driver/python.py", "session/driver/bash.sh"} {
		if !slices.Contains(files[filepath.Ext(want)], filepath.Join(root, want)) {
			t.Fatalf("the //go:embed scan missed %s (found %v)", want, files)
		}
	}
	t.Run("python", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			t.Skip("no /usr/bin/python3")
		}
		t.Logf("compiling %q", files[".py"])
		if out, err := checkPython(files[".py"]); err != nil {
			t.Errorf("embedded Python does not compile: %v\n%s", err, out)
		}
	})
	t.Run("bash", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/bash"); err != nil {
			t.Skip("no /usr/bin/bash")
		}
		for _, f := range files[".sh"] {
			if out, err := checkBash(f); err != nil {
				t.Errorf("%s does not parse: %v\n%s", f, err, out)
			}
		}
	})
	t.Run("node", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/node"); err != nil {
			t.Skip("no /usr/bin/node")
		}
		for _, f := range files[".js"] {
			if out, err := exec.Command("/usr/bin/node", "--check", f).CombinedOutput(); err != nil {
				t.Errorf("%s does not parse: %v\n%s", f, err, out)
			}
		}
	})
}

// The checks above report broken sources (or they would pass whatever the
// files hold).
func TestEmbeddedSourceChecksFail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.py", "import os\nprint(os.sep)\n")
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		if out, err := checkPython([]string{good}); err != nil {
			t.Errorf("good Python refused: %v\n%s", err, out)
		}
		for name, src := range map[string]string{
			"syntax.py": "def f(:\n    pass\n",
			"indent.py": "if True:\nprint(1)\n",
			"escape.py": "x = '\\d'\n", // a warning today, an error later
		} {
			bad := write(name, src)
			out, err := checkPython([]string{good, bad})
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !strings.Contains(out, bad+":") || strings.Contains(out, good) {
				t.Errorf("%s: err %v, report %q", name, err, out)
			}
		}
	}
	if _, err := os.Stat("/usr/bin/bash"); err == nil {
		if out, err := checkBash(write("good.sh", "f() { echo \"$1\"; }\nf x\n")); err != nil {
			t.Errorf("good bash refused: %v\n%s", err, out)
		}
		if _, err := checkBash(write("bad.sh", "if true; then echo\n")); err == nil {
			t.Error("bash -n accepted an if without fi")
		}
	}
	// The scan finds a pattern's files, and only embedded ones.
	pkg := filepath.Join(dir, "mod", "p")
	if err := os.MkdirAll(filepath.Join(pkg, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod":       "module m\n",
		"p/p.go":       "package p\n\nimport _ \"embed\"\n\n//go:embed a.py b*.sh\nvar s string\n",
		"p/p_test.go":  "package p\n\n//go:embed t.py\nvar t string\n",
		"p/a.py":       "",
		"p/b1.sh":      "",
		"p/b2.sh":      "",
		"p/t.py":       "",
		"p/c.py":       "",
		"p/testdata/x": "//go:embed c.py\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "mod", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := embeddedFiles(filepath.Join(dir, "mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(pkg, "a.py")}; !slices.Equal(got[".py"], want) {
		t.Errorf(".py files %v, want %v", got[".py"], want)
	}
	if want := []string{filepath.Join(pkg, "b1.sh"), filepath.Join(pkg, "b2.sh")}; !slices.Equal(got[".sh"], want) {
		t.Errorf(".sh files %v, want %v", got[".sh"], want)
	}
}
