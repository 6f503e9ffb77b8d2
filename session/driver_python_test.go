package session

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests run the Python session driver (driver/python.py) on its own:
// plain /usr/bin/python3 over pipes, no sandbox, no root. The driver is
// started as the sandbox's bootstrap starts it, as a script with fds 0, 1
// and 2 on pipes and nothing else open, and the test speaks the protocol of
// the package documentation to it, reading its messages as raw JSON lines
// (not through the host's own parser, which has tests of its own).

// pyDriverProc is one driver process.
type pyDriverProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	msgs   chan map[string]any // closed when stdout ends
	stderr *bytes.Buffer

	waitOnce sync.Once
	waited   chan error // the process's exit, once it has ended
}

// pyMsgTimeout bounds the wait for one message (IPython's start and
// matplotlib's first import included, on a loaded machine).
const pyMsgTimeout = 60 * time.Second

func startPythonDriver(t *testing.T) *pyDriverProc {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import IPython, matplotlib_inline").Run(); err != nil {
		t.Skip("the driver needs IPython and matplotlib-inline:", err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "main.py")
	if err := os.WriteFile(script, []byte(pythonDriverSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", script)
	cmd.Dir = dir
	// A home and a matplotlib directory of its own: nothing is written
	// outside the test's directory, whoever runs it.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "MPLCONFIGDIR=" + filepath.Join(dir, "mpl"), "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // signalled as a group, as the sandbox does
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pyDriverProc{t: t, cmd: cmd, stdin: stdin, msgs: make(chan map[string]any, 1024), stderr: &bytes.Buffer{}, waited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.msgs)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var m map[string]any
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					m = map[string]any{"type": "!unreadable", "line": string(line)}
				}
				p.msgs <- m
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done()
		if t.Failed() {
			t.Logf("driver stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

// done returns a channel that yields the process's exit once it has ended
// (messages not read by then are discarded).
func (p *pyDriverProc) done() <-chan error {
	p.waitOnce.Do(func() {
		go func() {
			for range p.msgs { // drain, so that the reader ends
			}
			p.waited <- p.cmd.Wait()
			close(p.waited)
		}()
	})
	return p.waited
}

func (p *pyDriverProc) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to the driver: %v", err)
	}
}

// next returns the driver's next message.
func (p *pyDriverProc) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			p.t.Fatalf("the driver ended its output (stderr: %s)", p.stderr.String())
		}
		if m["type"] == "!unreadable" {
			p.t.Fatalf("the driver wrote a line that is not JSON: %q", m["line"])
		}
		return m
	case <-time.After(pyMsgTimeout):
		p.t.Fatalf("no message from the driver in %v", pyMsgTimeout)
	}
	return nil
}

// expect returns the next message, which must be of type typ.
func (p *pyDriverProc) expect(typ string) map[string]any {
	p.t.Helper()
	m := p.next()
	if m["type"] != typ {
		p.t.Fatalf("message %v, want type %q", m, typ)
	}
	return m
}

func (p *pyDriverProc) init(outputLimit int, preload ...string) map[string]any {
	p.t.Helper()
	if preload == nil {
		preload = []string{}
	}
	p.send(map[string]any{"op": "init", "preload": preload, "output_limit": outputLimit})
	return p.expect("ready")
}

// cellRun is what the driver said about one cell.
type cellRun struct {
	started map[string]any
	outputs []map[string]any // everything between started and done
	done    map[string]any
}

// stream is everything the cell wrote on name, its messages joined.
func (c *cellRun) stream(name string) string {
	var b strings.Builder
	for _, o := range c.outputs {
		if o["type"] == "stream" && o["name"] == name {
			b.WriteString(o["text"].(string))
		}
	}
	return b.String()
}

// types lists the outputs' types, consecutive stream messages of one
// stream counted once.
func (c *cellRun) types() []string {
	var out []string
	for i, o := range c.outputs {
		t := o["type"].(string)
		if t == "stream" {
			if i > 0 && c.outputs[i-1]["type"] == "stream" && c.outputs[i-1]["name"] == o["name"] {
				continue
			}
			t += ":" + o["name"].(string)
		}
		out = append(out, t)
	}
	return out
}

// execute runs code as cell id and reads its messages up to its "done",
// checking that each carries the cell's id.
func (p *pyDriverProc) execute(id int, code string) *cellRun {
	p.t.Helper()
	p.send(map[string]any{"op": "execute", "id": id, "code": code})
	return p.finish(id, p.expect("started"))
}

func (p *pyDriverProc) finish(id int, started map[string]any) *cellRun {
	p.t.Helper()
	c := &cellRun{started: started}
	for {
		m := p.next()
		if m["id"] != float64(id) {
			p.t.Fatalf("cell %d: message %v carries another id", id, m)
		}
		if m["type"] == "done" {
			c.done = m
			return c
		}
		c.outputs = append(c.outputs, m)
	}
}

func TestPythonDriverProtocol(t *testing.T) {
	p := startPythonDriver(t)
	ready := p.init(1 << 20)
	if ready["protocol"] != float64(1) || ready["error"] != nil || ready["ipython"] == "" || !strings.HasPrefix(ready["version"].(string), "3.") {
		t.Fatalf("ready %v", ready)
	}

	// A cell's outputs, in the order written, and its result.
	c := p.execute(1, "x = 6 * 7\nprint('hi')\nimport sys; print('warn', file=sys.stderr)\nx")
	if c.started["execution_count"] != float64(1) {
		t.Errorf("started %v", c.started)
	}
	if got := c.types(); !reflect.DeepEqual(got, []string{"stream:stdout", "stream:stderr", "execute_result"}) &&
		!reflect.DeepEqual(got, []string{"stream:stderr", "stream:stdout", "execute_result"}) {
		t.Errorf("outputs %v", c.outputs)
	}
	if c.stream("stdout") != "hi\n" || c.stream("stderr") != "warn\n" {
		t.Errorf("stdout %q, stderr %q", c.stream("stdout"), c.stream("stderr"))
	}
	res := c.outputs[len(c.outputs)-1]
	if res["execution_count"] != float64(1) || res["data"].(map[string]any)["text/plain"] != "42" {
		t.Errorf("execute_result %v", res)
	}
	want := map[string]any{"type": "done", "id": float64(1), "status": "ok", "execution_count": float64(1), "truncated": false, "exiting": false}
	if !reflect.DeepEqual(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}

	// The host's ping: the driver repeats its last "done", word for word.
	p.send(map[string]any{"op": "ping"})
	if m := p.expect("done"); !reflect.DeepEqual(m, c.done) {
		t.Errorf("ping answered %v, want %v", m, c.done)
	}

	// An exception: an error output pointing into the cell, status error.
	c = p.execute(2, "y = 1\n1 / 0")
	if got := c.types(); !reflect.DeepEqual(got, []string{"error"}) {
		t.Fatalf("outputs %v", c.outputs)
	}
	e := c.outputs[0]
	tb, _ := json.Marshal(e["traceback"])
	if e["ename"] != "ZeroDivisionError" || e["evalue"] != "division by zero" || !strings.Contains(string(tb), "Cell In") || !strings.Contains(string(tb), "[2], line 2") {
		t.Errorf("error %v", e)
	}
	if c.done["status"] != "error" || c.done["execution_count"] != float64(2) {
		t.Errorf("done %v", c.done)
	}

	// Output of os.write and of subprocesses is captured; bytes that are
	// not UTF-8 arrive as replacement characters.
	c = p.execute(3, "import os, subprocess\nos.write(1, b'raw\\xff\\n')\nsubprocess.run(['echo', 'sub'])\nos.write(2, b'err\\n');")
	if got := c.stream("stdout"); got != "raw\ufffd\nsub\n" {
		t.Errorf("stdout %q", got)
	}
	if got := c.stream("stderr"); got != "err\n" {
		t.Errorf("stderr %q", got)
	}

	// clear_output comes after what was written before it.
	c = p.execute(4, "from IPython.display import clear_output\nprint('a')\nclear_output(wait=True)\nprint('b')")
	if got := c.types(); !reflect.DeepEqual(got, []string{"stream:stdout", "clear_output", "stream:stdout"}) {
		t.Fatalf("outputs %v", c.outputs)
	}
	if c.outputs[0]["text"] != "a\n" || c.outputs[1]["wait"] != true || c.outputs[2]["text"] != "b\n" {
		t.Errorf("outputs %v", c.outputs)
	}

	// A display with an id, then its update.
	c = p.execute(5, "from IPython.display import display\nh = display('one', display_id='d1')\nh.update('two')")
	if got := c.types(); !reflect.DeepEqual(got, []string{"display_data", "display_data"}) {
		t.Fatalf("outputs %v", c.outputs)
	}
	for i, text := range []string{"'one'", "'two'"} {
		o := c.outputs[i]
		if o["data"].(map[string]any)["text/plain"] != text || o["transient"].(map[string]any)["display_id"] != "d1" || (o["update"] == true) != (i == 1) {
			t.Errorf("display %d: %v", i, o)
		}
	}

	// A figure open at the end of the cell: a PNG display_data.
	c = p.execute(6, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);")
	if got := c.types(); !reflect.DeepEqual(got, []string{"display_data"}) {
		t.Fatalf("outputs %v", c.outputs)
	}
	data := c.outputs[0]["data"].(map[string]any)
	png, err := base64.StdEncoding.DecodeString(data["image/png"].(string))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("image/png is not a base64 PNG (%v): %.40q", err, data["image/png"])
	}
	if !strings.HasPrefix(data["text/plain"].(string), "<Figure size") {
		t.Errorf("text/plain %q", data["text/plain"])
	}
	if c.done["status"] != "ok" {
		t.Errorf("done %v", c.done)
	}

	// exit(): "done" says so and the driver ends.
	c = p.execute(7, "exit()")
	if c.done["exiting"] != true || c.done["status"] != "ok" {
		t.Errorf("done %v", c.done)
	}
	select {
	case err := <-p.done():
		if err != nil {
			t.Errorf("the driver ended with %v after exit()", err)
		}
	case <-time.After(pyMsgTimeout):
		t.Error("the driver did not end after exit()")
	}
}

// Output past the limit is dropped and "done" says so: a stream is kept up
// to the limit exactly, however its writes were gathered; the next cell
// has its whole allowance again.
func TestPythonDriverOutputLimit(t *testing.T) {
	p := startPythonDriver(t)
	p.init(1000)
	c := p.execute(1, "print('a' * 400)\nprint('b' * 5000)\nprint('c' * 100)")
	out := c.stream("stdout")
	if out != strings.Repeat("a", 400)+"\n"+strings.Repeat("b", 599) {
		t.Errorf("stdout of %d bytes: %.60q...", len(out), out)
	}
	if c.done["truncated"] != true || c.done["status"] != "ok" {
		t.Errorf("done %v", c.done)
	}
	c = p.execute(2, "print('x' * 900)")
	if c.stream("stdout") != strings.Repeat("x", 900)+"\n" || c.done["truncated"] != false {
		t.Errorf("next cell: stdout of %d bytes, done %v", len(c.stream("stdout")), c.done)
	}
}

// SIGINT during a cell is a KeyboardInterrupt in the user's code; between
// cells it is ignored; the session's state is kept.
func TestPythonDriverInterrupt(t *testing.T) {
	p := startPythonDriver(t)
	p.init(1 << 20)
	p.execute(1, "x = 42")
	p.send(map[string]any{"op": "execute", "id": 2, "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(120)\nprint('woke')"})
	started := p.expect("started")
	if m := p.expect("stream"); m["text"] != "sleeping\n" {
		t.Fatalf("stream %v", m)
	}
	sent := time.Now()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	c := p.finish(2, started)
	if time.Since(sent) > 30*time.Second {
		t.Errorf("the interrupted cell took %v to end", time.Since(sent))
	}
	if got := c.types(); !reflect.DeepEqual(got, []string{"error"}) || c.outputs[0]["ename"] != "KeyboardInterrupt" {
		t.Errorf("outputs %v", c.outputs)
	}
	if c.done["status"] != "error" || strings.Contains(c.stream("stdout"), "woke") {
		t.Errorf("done %v", c.done)
	}

	// Between cells: ignored (the driver neither dies nor reports).
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	c = p.execute(3, "print(x)")
	if c.stream("stdout") != "42\n" || c.done["status"] != "ok" {
		t.Errorf("after an idle SIGINT: outputs %v, done %v", c.outputs, c.done)
	}
}

// A failed start is a "ready" with the error, and the driver ends.
func TestPythonDriverInitError(t *testing.T) {
	p := startPythonDriver(t)
	ready := p.init(1<<20, "no_such_module_for_coderun")
	if msg, _ := ready["error"].(string); !strings.Contains(msg, "no_such_module_for_coderun") {
		t.Errorf("ready %v", ready)
	}
	select {
	case err := <-p.done():
		if err == nil {
			t.Error("the driver ended with status 0 after a failed start")
		}
	case <-time.After(pyMsgTimeout):
		t.Error("the driver did not end after a failed start")
	}
}

// A NameError or AttributeError ends with the interpreter's "Did you mean"
// hint, in the error's value and its traceback's last line, as a model
// fixing its code needs it.
func TestPythonDriverDidYouMean(t *testing.T) {
	p := startPythonDriver(t)
	p.init(1 << 20)
	for i, c := range []struct{ code, want string }{
		{"values = [1]\nvaleus", "name 'valeus' is not defined. Did you mean: 'values'?"},
		{"import math\nmath.sqroot(2)", "module 'math' has no attribute 'sqroot'. Did you mean: 'sqrt'?"},
	} {
		run := p.execute(i+1, c.code)
		if got := run.types(); !reflect.DeepEqual(got, []string{"error"}) {
			t.Fatalf("outputs %v", run.outputs)
		}
		e := run.outputs[0]
		tb, _ := e["traceback"].([]any)
		last := ""
		if len(tb) > 0 {
			last, _ = tb[len(tb)-1].(string)
		}
		if e["evalue"] != c.want || !strings.Contains(last, "Did you mean") {
			t.Errorf("%q: evalue %q, last traceback line %q", c.code, e["evalue"], last)
		}
	}
}
