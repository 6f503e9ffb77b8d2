package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/session"
)

func TestCellReader(t *testing.T) {
	in := "x = 1\ny = 2\n\n\n```python\ndef f():\n\n    return 1\n```\nlast\nline"
	r := &cellReader{br: bufio.NewReader(strings.NewReader(in))}
	var got []string
	for {
		code, ok := r.next(func(bool) {})
		if !ok {
			break
		}
		got = append(got, code)
	}
	want := []string{"x = 1\ny = 2", "def f():\n\n    return 1", "last\nline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cells %q, want %q", got, want)
	}
}

func needSessions(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sessions need root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/IPython"); err != nil {
		t.Skip("python3-ipython is not installed")
	}
}

func TestReplFromPipe(t *testing.T) {
	needSessions(t)
	dir := t.TempDir()
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString("x = 6\n\nprint('x is', x)\nx * 7\n\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);\n\n1/0\n")
		w.Close()
	}()
	f := &replFlags{images: filepath.Join(dir, "img"), save: filepath.Join(dir, "s.ipynb")}
	f.timeout, f.grace, f.procs = session.DefaultLimits.WallTime, session.DefaultGrace, 64
	f.memory, f.output, f.workspace = "512MiB", "1MiB", "64MiB"
	var out, errOut bytes.Buffer
	err = runRepl(context.Background(), &globalFlags{runtime: "linux"}, f, stdin, &out, &errOut)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("exit %v (a cell failed: want 1)\n%s", err, errOut.String())
	}
	for _, want := range []string{"x is 6\n", "Out[2]: 42\n", "image/png", "saved to " + filepath.Join(dir, "img")} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "ZeroDivisionError") || !strings.Contains(errOut.String(), "cell 4: error") {
		t.Fatalf("stderr:\n%s", errOut.String())
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "img", "*.png"))
	if len(pngs) != 1 {
		t.Fatalf("saved images %v", pngs)
	}

	// The saved session runs again as a notebook.
	nf := &notebookFlags{out: filepath.Join(dir, "out.ipynb"), quiet: true}
	nf.sessionFlags = f.sessionFlags
	err = runNotebook(context.Background(), &globalFlags{runtime: "linux"}, nf, f.save, &errOut)
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("notebook run: %v", err)
	}
	data, err := os.ReadFile(nf.out)
	if err != nil || !bytes.Contains(data, []byte(`"text/plain": "42"`)) || !bytes.Contains(data, []byte("image/png")) {
		t.Fatalf("executed notebook: %v\n%.500s", err, data)
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/nbformat"); err == nil {
		if out, err := exec.Command("/usr/bin/python3", "-c", "import nbformat,sys; nbformat.validate(nbformat.read(sys.argv[1], 4))", nf.out).CombinedOutput(); err != nil {
			t.Fatalf("invalid notebook: %s", out)
		}
	}
}

// A cell that runs out of memory says so in text mode, as --json and
// notebook run do, rather than only "died".
func TestReplSaysMemoryLimit(t *testing.T) {
	needSessions(t)
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString("x = bytearray(400 << 20)\n\nprint('after')\n")
		w.Close()
	}()
	f := &replFlags{}
	f.timeout, f.grace, f.procs = session.DefaultLimits.WallTime, session.DefaultGrace, 64
	f.memory, f.output, f.workspace = "64MiB", "1MiB", "64MiB"
	var out, errOut bytes.Buffer
	err = runRepl(context.Background(), &globalFlags{runtime: "linux"}, f, stdin, &out, &errOut)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("exit %v (a cell failed: want 1)\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "cell 1: died") || !strings.Contains(errOut.String(), "memory limit") {
		t.Fatalf("stderr does not name the memory limit:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), "after") {
		t.Fatalf("the session did not go on after the restart:\n%s", out.String())
	}
}
