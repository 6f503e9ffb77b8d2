package session_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/session"
)

// shared is one runtime for the package's tests (sandboxes are
// independent; the runtime is safe for concurrent use).
var shared linuxtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

func runtimeFor(t *testing.T) *linux.Runtime {
	t.Helper()
	rt := shared.Runtime(t)
	linuxtest.RequireIPython(t)
	return rt
}

func newSession(t *testing.T, cfg session.Config) *session.Session {
	t.Helper()
	s, err := session.New(context.Background(), runtimeFor(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// run executes code and fails the test if the cell could not run at all.
func run(t *testing.T, s *session.Session, code string) *session.Cell {
	t.Helper()
	c, err := s.Execute(context.Background(), session.Exec{Code: code})
	if err != nil {
		t.Fatalf("%q: %v", code, err)
	}
	return c
}

// ok executes code and fails the test unless the cell ends ok.
func ok(t *testing.T, s *session.Session, code string) *session.Cell {
	t.Helper()
	c := run(t, s, code)
	if c.Status != session.StatusOK {
		t.Fatalf("%q: status %s, outputs %s", code, c.Status, describe(c))
	}
	return c
}

func describe(c *session.Cell) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		switch o.Type {
		case session.TypeStream:
			b.WriteString(o.Name + ": " + o.Text)
		case session.TypeError:
			b.WriteString("error: " + o.Ename + ": " + o.Evalue + "\n" + strings.Join(o.Traceback, "\n") + "\n")
		default:
			b.WriteString(o.Type + ": " + strings.Join(o.Data.Types(), ",") + " " + o.Data.Text("text/plain") + "\n")
		}
	}
	if c.Ended != nil {
		b.WriteString("ended: " + c.Ended.Message + "\n")
	}
	return b.String()
}

func result(t *testing.T, c *session.Cell) string {
	t.Helper()
	r := c.Result()
	if r == nil {
		t.Fatalf("cell %d has no execute_result: %s", c.Index, describe(c))
	}
	return r.Data.Text("text/plain")
}

func TestPythonStateAndOutputs(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{})

	// State carries across cells; the last expression is the result.
	ok(t, s, "x = 41\ndef inc(v):\n    return v + 1")
	c := ok(t, s, "inc(x)")
	if got := result(t, c); got != "42" {
		t.Fatalf("result %q", got)
	}
	if c.ExecutionCount != 2 || c.Result().ExecutionCount != 2 || c.Index != 2 {
		t.Fatalf("counts: cell %d, execution %d, result %d", c.Index, c.ExecutionCount, c.Result().ExecutionCount)
	}
	if c.Duration <= 0 || c.Started.IsZero() {
		t.Fatalf("timing: %v %v", c.Started, c.Duration)
	}

	// Output of print, os.write (binary garbage included) and a subprocess.
	c = ok(t, s, "import os, subprocess, sys\nprint('printed')\nos.write(1, b'raw \\xff\\xfe bytes\\n')\nsubprocess.run(['echo', 'from a child'])\nprint('to stderr', file=sys.stderr)\nNone")
	if got, want := c.Stdout(), "printed\nraw \ufffd\ufffd bytes\nfrom a child\n"; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
	if got := c.Stderr(); got != "to stderr\n" {
		t.Fatalf("stderr %q", got)
	}

	// Magics and shell escapes.
	c = ok(t, s, "%pwd")
	if got := result(t, c); got != "'/work'" {
		t.Fatalf("%%pwd: %q", got)
	}
	c = ok(t, s, "!echo shell $((6*7))")
	if got := c.Stdout(); got != "shell 42\n" {
		t.Fatalf("!echo: %q", got)
	}

	// pandas: text/html next to text/plain.
	c = ok(t, s, "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3, 19]})")
	html := c.Result().Data.Text("text/html")
	if !strings.Contains(html, "<table") || !strings.Contains(html, "Lima") || !strings.Contains(c.Result().Data.Text("text/plain"), "Oslo") {
		t.Fatalf("DataFrame bundle: %v", c.Result().Data)
	}

	// Rich reprs through display().
	c = ok(t, s, `from IPython.display import display
class Rich:
    def _repr_html_(self): return "<b>rich</b>"
    def _repr_svg_(self): return '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'
    def _repr_json_(self): return {"answer": 42}
    def __repr__(self): return "Rich()"
display(Rich())
Rich()`)
	if len(c.Outputs) != 2 || c.Outputs[0].Type != session.TypeDisplayData || c.Outputs[1].Type != session.TypeExecuteResult {
		t.Fatalf("outputs: %s", describe(c))
	}
	for _, o := range c.Outputs {
		d := o.Data
		if d.Text("text/html") != "<b>rich</b>" || !strings.HasPrefix(d.Text("image/svg+xml"), "<svg") || d.Text("text/plain") != "Rich()" {
			t.Fatalf("bundle %v", d)
		}
		if j, _ := d["application/json"].(map[string]any); j["answer"] != float64(42) {
			t.Fatalf("application/json %v", d["application/json"])
		}
	}
	// Updates of a display replace it; clear_output clears what came before.
	var kinds []string
	c, err := s.Execute(context.Background(), session.Exec{
		Code:     "h = display('first', display_id=True)\nh.update('second')\nprint('gone')\nfrom IPython.display import clear_output\nclear_output()\nprint('kept')",
		OnOutput: func(o session.Output) { kinds = append(kinds, o.Type) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, ","); got != "display_data,update_display_data,stream,clear_output,stream" {
		t.Fatalf("delivered %s", got)
	}
	if len(c.Outputs) != 1 || c.Stdout() != "kept\n" {
		t.Fatalf("after clear_output: %s", describe(c))
	}
	c = ok(t, s, "h2 = display('one', display_id=True)\nh2.update('two')")
	if len(c.Outputs) != 1 || c.Outputs[0].Data.Text("text/plain") != "'two'" {
		t.Fatalf("after update: %s", describe(c))
	}
	ok(t, s, "h2.update('three')") // from a later cell: the earlier cell's output changes
	if h := s.History(); h[c.Index-1].Outputs[0].Data.Text("text/plain") != "'three'" {
		t.Fatalf("update from a later cell: %+v", h[c.Index-1].Outputs)
	}

	c = ok(t, s, "from IPython.display import Image\nimport base64\nImage(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))")
	if img, err := c.Result().Data.Bytes("image/png"); err != nil || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Fatalf("_repr_png_: %v %q", err, img)
	}
}

func TestPythonMatplotlib(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{})
	// Every figure open at the end of a cell is shown, as a PNG.
	c := ok(t, s, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3))\nax.plot([1, 3, 2])\nax.set_title('shown at the end');")
	pngs := pngSizes(t, c)
	if len(pngs) != 1 || pngs[0][0] < 200 || pngs[0][1] < 150 {
		t.Fatalf("figures %v: %s", pngs, describe(c))
	}
	// plt.show() shows at once, in order with the text around it.
	c = ok(t, s, "plt.plot([1, 2]); print('before'); plt.show(); print('between'); plt.figure(); plt.bar([1, 2], [3, 4])\nprint('after')")
	var order []string
	for _, o := range c.Outputs {
		if o.Type == session.TypeStream {
			order = append(order, strings.TrimSpace(o.Text))
		} else if _, isPNG := o.Data["image/png"]; isPNG {
			order = append(order, "png")
		}
	}
	if got := strings.Join(order, " "); got != "before png between\nafter png" {
		t.Fatalf("order %q: %s", got, describe(c))
	}
	if len(pngSizes(t, c)) != 2 {
		t.Fatal("want two PNGs")
	}
	// Figures were closed: the next cell shows nothing.
	if c := ok(t, s, "x = 1"); len(c.Outputs) != 0 {
		t.Fatalf("stale figures: %s", describe(c))
	}
}

func pngSizes(t *testing.T, c *session.Cell) [][2]int {
	t.Helper()
	var out [][2]int
	for _, o := range c.Outputs {
		if _, has := o.Data["image/png"]; !has {
			continue
		}
		data, err := o.Data.Bytes("image/png")
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("PNG does not decode: %v", err)
		}
		out = append(out, [2]int{img.Bounds().Dx(), img.Bounds().Dy()})
	}
	return out
}

func TestPythonErrors(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{})
	ok(t, s, "a = 1")

	c := run(t, s, "b = 2\ndef f(:\n    pass")
	e := c.Error()
	if c.Status != session.StatusError || e == nil || e.Ename != "SyntaxError" {
		t.Fatalf("syntax error: %s %s", c.Status, describe(c))
	}
	tb := strings.Join(e.Traceback, "\n")
	if !strings.Contains(tb, "line 2") || !strings.Contains(tb, "def f(:") {
		t.Fatalf("syntax error traceback does not point into the cell:\n%s", tb)
	}

	c = run(t, s, "def g(d):\n    return 10 / d\n\ng(a - 1)")
	e = c.Error()
	if c.Status != session.StatusError || e == nil || e.Ename != "ZeroDivisionError" || e.Evalue != "division by zero" {
		t.Fatalf("runtime error: %s %s", c.Status, describe(c))
	}
	tb = strings.Join(e.Traceback, "\n")
	for _, want := range []string{"In[", "g(a - 1)", "return 10 / d", "line 4", "line 2"} {
		if !strings.Contains(strings.ReplaceAll(tb, "In [", "In["), want) {
			t.Fatalf("traceback lacks %q:\n%s", want, tb)
		}
	}
	for _, internal := range []string{"main.py", "coderun", "interactiveshell.py", "run_cell"} {
		if strings.Contains(tb, internal) {
			t.Fatalf("traceback shows the driver's internals (%q):\n%s", internal, tb)
		}
	}
	// The failed cells changed nothing else.
	if got := result(t, ok(t, s, "a")); got != "1" {
		t.Fatalf("a = %s", got)
	}
}

func TestPythonStreamsSurviveUserCode(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{})
	c := ok(t, s, "import sys, os, io\nsys.stdout = io.StringIO()\nprint('swallowed')\nsys.stderr = None")
	if c.Stdout() != "" {
		t.Fatalf("rebound stdout leaked: %q", c.Stdout())
	}
	c = ok(t, s, "print('back')")
	if c.Stdout() != "back\n" {
		t.Fatalf("after rebinding: %s", describe(c))
	}
	c = ok(t, s, "sys.stdout.close()\nos.close(1)\nos.close(2)")
	c = ok(t, s, "print('again'); os.write(2, b'fd 2\\n'); 7")
	if c.Stdout() != "again\n" || c.Stderr() != "fd 2\n" || result(t, c) != "7" {
		t.Fatalf("after closing fds: %s", describe(c))
	}

	// Forked children (multiprocessing's workers) neither hang nor speak
	// for the driver.
	c = ok(t, s, "from multiprocessing import Pool\ndef sq(x):\n    return x * x\nwith Pool(2) as pool:\n    print(pool.map(sq, range(5)))\npid = os.fork()\nif pid == 0:\n    print('child')\nelse:\n    os.waitpid(pid, 0)")
	if c.Stdout() != "[0, 1, 4, 9, 16]\nchild\n" {
		t.Fatalf("multiprocessing and fork: %s", describe(c))
	}
	ok(t, s, "print('still fine')")

	// Output arrives while the cell runs.
	var mu sync.Mutex
	var firstAt time.Time
	c, err := s.Execute(context.Background(), session.Exec{
		Code: "import time\nprint('early', flush=True)\ntime.sleep(0.5)\nprint('late')",
		OnOutput: func(o session.Output) {
			mu.Lock()
			defer mu.Unlock()
			if firstAt.IsZero() && o.Type == session.TypeStream {
				firstAt = time.Now()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stdout() != "early\nlate\n" {
		t.Fatalf("streamed cell: %s", describe(c))
	}
	if lead := c.Started.Add(c.Duration).Sub(firstAt); lead < 300*time.Millisecond {
		t.Fatalf("first output reached OnOutput only %v before the cell ended", lead)
	}

	// Output past the cell's limit is cut, and the cell says so.
	small := newSession(t, session.Config{Language: sandbox.Bash, Limits: sandbox.Limits{OutputBytes: 100 << 10}})
	c = ok(t, small, "seq 1 200000")
	if !c.OutputTruncated || len(c.Stdout()) > 100<<10 || !strings.Contains(c.Stderr(), "output exceeded") {
		t.Fatalf("bash truncation: %v, %d bytes, stderr %q", c.OutputTruncated, len(c.Stdout()), c.Stderr())
	}
	c = ok(t, s, "for i in range(5000):\n    print(str(i) * 300)")
	if !c.OutputTruncated || len(c.Stdout()) > int(session.DefaultLimits.OutputBytes) || !strings.Contains(c.Stderr(), "output exceeded") {
		t.Fatalf("truncation: %v, %d bytes, stderr %q", c.OutputTruncated, len(c.Stdout()), c.Stderr())
	}
}

func TestPythonInterruptAndTimeout(t *testing.T) {
	t.Parallel()
	// The grace period is the default's: an interrupted cell's end is seen
	// from the host (its interpreter blocked reading stdin again), which on a
	// loaded 2-core machine took longer than 500 ms (the test failed so).
	s := newSession(t, session.Config{Grace: session.DefaultGrace})
	ok(t, s, "kept = 'still here'")

	// Interrupt a busy loop: KeyboardInterrupt, state kept.
	go func() {
		time.Sleep(400 * time.Millisecond)
		s.Interrupt()
	}()
	c := run(t, s, "n = 0\nwhile True:\n    n += 1")
	if c.Status != session.StatusInterrupted || c.Error() == nil || c.Error().Ename != "KeyboardInterrupt" || c.Restarted {
		t.Fatalf("interrupt: %s %s", c.Status, describe(c))
	}
	if tb := strings.Join(c.Error().Traceback, "\n"); strings.Contains(tb, "main.py") || strings.Contains(tb, "sigint") || !strings.Contains(tb, "n += 1") {
		t.Fatalf("interrupt traceback:\n%s", tb)
	}
	if got := result(t, ok(t, s, "kept, n > 0")); got != "('still here', True)" {
		t.Fatalf("after interrupt: %s", got)
	}

	// A SIGINT handler of the user's stays installed across cells.
	ok(t, s, "import signal\nhits = []\nsignal.signal(signal.SIGINT, lambda *a: hits.append(1))")
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.Interrupt()
	}()
	c = run(t, s, "import time\ntime.sleep(0.3)\n'finished'")
	if c.Status != session.StatusInterrupted || result(t, c) != "'finished'" {
		t.Fatalf("user handler: %s", describe(c))
	}
	if got := result(t, ok(t, s, "hits\n")); got != "[1]" {
		t.Fatalf("user handler calls: %s", got)
	}
	ok(t, s, "signal.signal(signal.SIGINT, signal.default_int_handler)")

	// A cell over its time limit is interrupted the same way.
	c, err := s.Execute(context.Background(), session.Exec{Code: "import time\ntime.sleep(60)", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != session.StatusTimeout || c.Error() == nil || c.Error().Ename != "KeyboardInterrupt" || c.Restarted || c.Duration > 5*time.Second {
		t.Fatalf("timeout: %s %v %s", c.Status, c.Duration, describe(c))
	}
	ok(t, s, "kept")

	// A cell that ignores SIGINT is killed after the grace period, and the
	// session restarts with its files but without its variables.
	ok(t, s, "open('survivor.txt', 'w').write('file kept')")
	c, err = s.Execute(context.Background(), session.Exec{
		Code:    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != session.StatusTimeout || !c.Restarted || c.Ended == nil || c.Ended.Reason != sandbox.ReasonKilled {
		t.Fatalf("kill after grace: %s restarted=%v %s", c.Status, c.Restarted, describe(c))
	}
	c = run(t, s, "kept")
	if c.Error() == nil || c.Error().Ename != "NameError" || c.ExecutionCount != 1 {
		t.Fatalf("state after restart: %s", describe(c))
	}
	if got := result(t, ok(t, s, "open('survivor.txt').read()")); got != "'file kept'" {
		t.Fatalf("file after restart: %s", got)
	}

	// Cancelling the context interrupts too.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err = s.Execute(ctx, session.Exec{Code: "import time\ntime.sleep(30)"})
	if err != nil || c.Status != session.StatusInterrupted {
		t.Fatalf("cancelled: %v %s", err, describe(c))
	}
}

func TestPythonExitAndMemory(t *testing.T) {
	t.Parallel()
	cfg := session.Config{Limits: sandbox.Limits{Memory: 256 << 20}}
	victim := newSession(t, cfg)
	bystander := newSession(t, cfg)
	ok(t, bystander, "y = 5")
	ok(t, victim, "v = 1")

	// os._exit: the cell says the interpreter exited; a new one is ready.
	c := run(t, victim, "import os\nprint('bye', flush=True)\nos._exit(3)")
	if c.Status != session.StatusDied || c.Ended == nil || c.Ended.Reason != sandbox.ReasonExited || c.Ended.ExitCode != 3 ||
		!c.Restarted || c.RestartError != "" || c.Error() == nil || c.Error().Ename != "InterpreterExited" || c.Stdout() != "bye\n" {
		t.Fatalf("os._exit: %s %s", c.Status, describe(c))
	}
	if c := run(t, victim, "v"); c.Error() == nil || c.Error().Ename != "NameError" {
		t.Fatalf("state survived a restart: %s", describe(c))
	}

	// An allocation bomb: the memory limit kills the interpreter, the cell
	// says so, and only this session is affected.
	c = run(t, victim, "blob = b'x' * (1 << 30)")
	if c.Status != session.StatusDied || c.Ended == nil || c.Ended.Reason != sandbox.ReasonMemoryLimit ||
		c.Error() == nil || c.Error().Ename != "MemoryLimitExceeded" || !c.Restarted {
		t.Fatalf("memory bomb: %s %s", c.Status, describe(c))
	}
	if got := result(t, ok(t, bystander, "y")); got != "5" {
		t.Fatalf("bystander: %s", got)
	}
	if got := result(t, ok(t, victim, "1 + 1")); got != "2" {
		t.Fatalf("victim after restart: %s", got)
	}

	// Dying between cells (a timer thread allocating after the cell ended)
	// is reported by the next cell instead of a hang.
	ok(t, victim, "import threading\nthreading.Timer(0.2, lambda: b'x' * (1 << 30)).start()")
	deadline := time.Now().Add(20 * time.Second)
	for victim.Info().Alive && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	c = ok(t, victim, "'fresh'")
	if c.Ended == nil || !c.Ended.Idle || c.Ended.Reason != sandbox.ReasonMemoryLimit || !c.Restarted || !strings.Contains(c.Stderr(), "memory limit") {
		t.Fatalf("idle death: %+v %s", c.Ended, describe(c))
	}

	// exit() in IPython ends the interpreter after the cell, which says so.
	ok(t, victim, "gone = 1")
	c = ok(t, victim, "exit()")
	if c.Ended == nil || c.Ended.Reason != sandbox.ReasonExited || !c.Restarted {
		t.Fatalf("exit(): %s", describe(c))
	}
	if c := run(t, victim, "gone"); c.Error() == nil || c.Error().Ename != "NameError" || c.Ended != nil {
		t.Fatalf("after exit(): %s", describe(c))
	}
}

func TestSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	a := newSession(t, session.Config{})
	b := newSession(t, session.Config{})
	ok(t, a, "import subprocess\nopen('secret.txt', 'w').write('a only')\np = subprocess.Popen(['sleep', '4242'])")
	look := "import os\n" +
		"procs = [open(f'/proc/{p}/cmdline', 'rb').read() for p in os.listdir('/proc') if p.isdigit()]\n" +
		"(sorted(os.listdir('/work')), any(b'4242' in c for c in procs))"
	// The probe sees a's own file and process (so it can tell)...
	if got := result(t, ok(t, a, look)); got != "(['secret.txt'], True)" {
		t.Fatalf("a sees %s", got)
	}
	// ...and b sees neither.
	if got := result(t, ok(t, b, look)); got != "([], False)" {
		t.Fatalf("b sees %s", got)
	}
	if _, _, err := b.Download("secret.txt", 100); err == nil {
		t.Fatal("b downloaded a's file")
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Bash, Files: []sandbox.File{{Path: "given.txt", Content: []byte("at creation\n")}}})
	if err := s.Upload("data/in.csv", []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, s, "cat given.txt data/in.csv > out.txt; ln -s /etc/passwd link")
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := ok(t, s, "cat out.txt")
	if c.Stdout() != "at creation\na,b\n1,2\n" {
		t.Fatalf("after restart: %q", c.Stdout())
	}
	data, truncated, err := s.Download("out.txt", 5)
	if err != nil || !truncated || string(data) != "at cr" {
		t.Fatalf("download: %q %v %v", data, truncated, err)
	}
	if _, _, err := s.Download("link", 100); err == nil {
		t.Fatal("a link was followed")
	}
	files, _, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]sandbox.FileKind{}
	for _, f := range files {
		kinds[f.Path] = f.Kind
	}
	if kinds["data/in.csv"] != sandbox.KindFile || kinds["out.txt"] != sandbox.KindFile || kinds["link"] != sandbox.KindSymlink || kinds["data"] != sandbox.KindDir {
		t.Fatalf("files: %v", kinds)
	}
}

func TestBashSession(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Bash, Grace: time.Second})
	ok(t, s, "greeting=hello\ndeclare -A color=([sky]=blue)\nshout() { echo \"${1^^}!\"; }\ncd /tmp && mkdir -p d && cd d")
	c := ok(t, s, "shout \"$greeting ${color[sky]}\"; pwd; echo oops >&2")
	if c.Stdout() != "HELLO BLUE!\n/tmp/d\n" || c.Stderr() != "oops\n" || c.ExecutionCount != 2 {
		t.Fatalf("state: %s", describe(c))
	}
	c = run(t, s, "printf 'bin \\xff\\xfe\\n'; false")
	if c.Status != session.StatusError || c.ExitStatus != 1 || c.Error() == nil || c.Stdout() != "bin \ufffd\ufffd\n" {
		t.Fatalf("failure: %s", describe(c))
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.Interrupt()
	}()
	c = run(t, s, "i=0; while true; do i=$((i+1)); done; echo never")
	if c.Status != session.StatusInterrupted || strings.Contains(c.Stdout(), "never") || c.Restarted {
		t.Fatalf("interrupt: %s %s", c.Status, describe(c))
	}
	c = ok(t, s, "echo $greeting $((i > 0)) $PWD")
	if c.Stdout() != "hello 1 /tmp/d\n" {
		t.Fatalf("after interrupt: %s", describe(c))
	}
	c = run(t, s, "echo bye >&2; exit 4")
	if c.Status != session.StatusDied || c.Ended == nil || c.Ended.ExitCode != 4 || !c.Restarted {
		t.Fatalf("exit: %s", describe(c))
	}
	if c.Stderr() != "bye\n" {
		// An interactive bash says "exit" on its way out: not the cell's.
		t.Errorf("exit: stderr %q, want the cell's own", c.Stderr())
	}
	c = ok(t, s, "echo \"[$greeting]\" $PWD")
	if c.Stdout() != "[] /work\n" {
		t.Fatalf("after exit: %s", describe(c))
	}
	if _, err := s.Execute(context.Background(), session.Exec{Code: "echo \x00"}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("NUL accepted: %v", err)
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Bash})
	ok(t, s, "a=1")
	failed := run(t, s, "b=$((a + 1)); test -n \"$missing\"")
	if failed.Status != session.StatusError {
		t.Fatal(describe(failed))
	}
	if _, err := s.Execute(context.Background(), session.Exec{Code: "true", RetryOf: 1}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("retry of an ok cell: %v", err)
	}
	retry, err := s.Execute(context.Background(), session.Exec{Code: "b=$((a + 1)); echo $a $b", RetryOf: failed.Index})
	if err != nil || retry.Status != session.StatusOK || retry.Stdout() != "1 2\n" || retry.RetryOf != failed.Index {
		t.Fatalf("retry: %v %s", err, describe(retry))
	}
	h := s.History()
	if len(h) != 3 || h[1].RetriedBy != 3 || h[2].RetryOf != 2 || h[1].Status != session.StatusError {
		t.Fatalf("history: %+v", h)
	}
}
