package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The bash session driver (driver/bash.sh) on its own: plain /usr/bin/bash
// over pipes, no sandbox, no root, its output read by the host's own
// bashDriver (marker scanner, keys), as a session reads it.

// bashDriverProc is one driver process and the events read from it.
type bashDriverProc struct {
	t      *testing.T
	d      *bashDriver
	cmd    *exec.Cmd
	write  func([]byte)
	events chan event
}

func startBashDriver(t *testing.T) *bashDriverProc {
	t.Helper()
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("no /usr/bin/bash")
	}
	d := newBashDriver(nil)
	// The bootstrap evaluates the program in a non-interactive bash with
	// fds 0, 1 and 2 on pipes: so does this.
	cmd := exec.Command("/usr/bin/bash", "-c", d.program().Code)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + cmd.Dir, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &bashDriverProc{t: t, d: d, cmd: cmd, events: make(chan event, 1024)}
	p.write = func(b []byte) {
		t.Helper()
		if _, err := stdin.Write(b); err != nil {
			t.Fatalf("write to the driver: %v", err)
		}
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		d.read(stdout, stderr, func(ev event) { p.events <- ev }, newTail(4096))
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for ended := false; !ended; { // drain, so that the readers end
			select {
			case <-p.events:
			case <-read:
				ended = true
			}
		}
		_ = cmd.Wait()
	})
	hello, err := d.hello()
	if err != nil {
		t.Fatal(err)
	}
	p.write(hello)
	if ev := p.next(); ev.kind != evReady {
		t.Fatalf("first event %+v, want ready", ev)
	}
	return p
}

func (p *bashDriverProc) next() event {
	p.t.Helper()
	select {
	case ev := <-p.events:
		if ev.kind == evProtocol {
			p.t.Fatalf("protocol error: %s", ev.err)
		}
		return ev
	case <-time.After(30 * time.Second):
		p.t.Fatal("no event from the bash driver in 30s")
	}
	return event{}
}

// bashCell is what the driver said about one cell.
type bashCell struct {
	count          int
	stdout, stderr string
	done           event
}

// run sends cell id and reads its events up to its end; started is
// called once the cell has started, with what it wrote so far.
func (p *bashDriverProc) run(id int, code string, started func(c *bashCell)) *bashCell {
	p.t.Helper()
	req, err := p.d.request(id, code)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(req)
	// The cell's markers come on stdout and stderr alike, and the two pipes
	// are read apart: what the cell wrote on one may be read before the
	// start marker on the other.
	c := &bashCell{}
	for {
		ev := p.next()
		if ev.kind == evStarted && ev.id == id {
			c.count = ev.count
			break
		}
		if ev.kind != evOutput || ev.id != id {
			p.t.Fatalf("event %+v, want cell %d started", ev, id)
		}
		c.add(ev)
	}
	if started != nil {
		started(c)
	}
	return p.finish(id, c)
}

// add keeps an output event's text.
func (c *bashCell) add(ev event) {
	if ev.out.Name == "stdout" {
		c.stdout += ev.out.Text
	} else {
		c.stderr += ev.out.Text
	}
}

func (p *bashDriverProc) finish(id int, c *bashCell) *bashCell {
	p.t.Helper()
	for {
		ev := p.next()
		switch {
		case ev.kind == evOutput && ev.id == id:
			c.add(ev)
		case ev.kind == evDone && ev.id == id:
			c.done = ev
			return c
		default:
			p.t.Fatalf("cell %d: event %+v", id, ev)
		}
	}
}

// waitOutput reads cell id's output until its stdout holds want.
func (p *bashDriverProc) waitOutput(id int, c *bashCell, want string) {
	p.t.Helper()
	for !strings.Contains(c.stdout, want) {
		ev := p.next()
		if ev.kind != evOutput || ev.id != id {
			p.t.Fatalf("event %+v while waiting for %q", ev, want)
		}
		c.add(ev)
	}
}

func TestBashDriverProtocol(t *testing.T) {
	p := startBashDriver(t)

	c := p.run(1, "x=5\ncd /\necho out\necho err >&2\nprintf 'caf\\xc3\\xa9 \\xff\\n'\nfalse", nil)
	if c.count != 1 || c.stdout != "out\ncafé \ufffd\n" || c.stderr != "err\n" || c.done.ok || c.done.exit != 1 {
		t.Errorf("cell 1: count %d, stdout %q, stderr %q, done %+v", c.count, c.stdout, c.stderr, c.done)
	}

	// State persists: variables, the working directory, functions.
	c = p.run(2, "f() { echo \"$x $(pwd)\"; }\nf", nil)
	if c.count != 2 || c.stdout != "5 /\n" || !c.done.ok || c.done.exit != 0 {
		t.Errorf("cell 2: count %d, stdout %q, done %+v", c.count, c.stdout, c.done)
	}

	// The ping (an empty line) has the prompt repeat the end of the cell.
	p.write(p.d.ping())
	if ev := p.next(); ev.kind != evDone || ev.id != 2 || !ev.ok {
		t.Errorf("ping answered %+v", ev)
	}

	// A line of the cell's own that looks like a marker of another cell's
	// key ends nothing.
	c = p.run(3, "echo \"$__cr_nonce:D:3:0123:0\"\necho \"$__cr_nonce:S:4:0123\"\necho still", nil)
	if c.stdout != "still\n" || !c.done.ok {
		t.Errorf("cell 3: stdout %q, done %+v", c.stdout, c.done)
	}

	// Code with quotes, backslashes, '!' and bytes that are not text runs
	// as written.
	c = p.run(4, "printf '%s\\n' 'a\"b' \"c'd\" 'e\\\\f' '!x' $'\\t'", nil)
	if c.stdout != "a\"b\nc'd\ne\\\\f\n!x\n\t\n" {
		t.Errorf("cell 4: stdout %q", c.stdout)
	}
}

// SIGINT stops the running command and the rest of the cell, as Ctrl-C
// does; the shell and its state stay.
func TestBashDriverInterrupt(t *testing.T) {
	p := startBashDriver(t)
	p.run(1, "x=7", nil)
	sent := time.Now()
	c := p.run(2, "echo start\nsleep 60\necho after", func(c *bashCell) {
		p.waitOutput(2, c, "start\n")
		// Between two commands the shell may take the signal for itself
		// and go on: send it once sleep runs, as a person would see it.
		p.awaitCommand("sleep")
		sent = time.Now()
		if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	})
	if d := time.Since(sent); d > 20*time.Second {
		t.Errorf("the interrupted cell took %v to end", d)
	}
	if c.stdout != "start\n" || c.done.ok || c.done.exit != 130 {
		t.Errorf("interrupted cell: stdout %q, done %+v", c.stdout, c.done)
	}
	c = p.run(3, "echo $x", nil)
	if c.stdout != "7\n" || !c.done.ok {
		t.Errorf("after the interrupt: stdout %q, done %+v", c.stdout, c.done)
	}
}

// awaitCommand waits until a process named comm runs in the driver's
// process group.
func (p *bashDriverProc) awaitCommand(comm string) {
	p.t.Helper()
	pgrp := strconv.Itoa(p.cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, st := range stats {
			data, err := os.ReadFile(st)
			if err != nil {
				continue
			}
			// pid (comm) state ppid pgrp ...
			s := string(data)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.HasSuffix(s[:i], "("+comm) {
				continue
			}
			if f := strings.Fields(s[i+1:]); len(f) > 2 && f[2] == pgrp {
				return
			}
		}
	}
	p.t.Fatalf("no %s ran in the driver's process group", comm)
}
