package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// A session runs on Docker end to end: IPython in a long-lived sandbox's
// container keeps its state across cells, an interrupt stops a busy cell
// with KeyboardInterrupt and keeps the state, a cell that ends the
// interpreter is followed by a restarted one (a fresh container) over the
// same files, and a bash session keeps its shell's state.
func TestSessionOnDocker(t *testing.T) {
	rt := newRuntime(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := session.New(ctx, rt, session.Config{Grace: session.DefaultGrace})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exec := func(code string) *session.Cell {
		t.Helper()
		c, err := s.Execute(ctx, session.Exec{Code: code})
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		return c
	}
	want := func(c *session.Cell, status session.Status, result string) {
		t.Helper()
		if c.Status != status {
			t.Fatalf("cell %q: status %s, want %s; stderr %q, error %+v", c.Code, c.Status, status, c.Stderr(), c.Error())
		}
		if result == "" {
			return
		}
		if r := c.Result(); r == nil || r.Data.Text("text/plain") != result {
			t.Fatalf("cell %q: result %+v, want %s", c.Code, r, result)
		}
	}
	want(exec("x = 6\nopen('/work/kept.txt', 'w').write('on the workspace')"), session.StatusOK, "")
	want(exec("x * 7"), session.StatusOK, "42")

	go func() {
		time.Sleep(500 * time.Millisecond)
		s.Interrupt()
	}()
	c := exec("n = 0\nwhile True:\n    n += 1")
	want(c, session.StatusInterrupted, "")
	if c.Error() == nil || c.Error().Ename != "KeyboardInterrupt" || c.Restarted {
		t.Fatalf("interrupted cell: error %+v, restarted %v", c.Error(), c.Restarted)
	}
	want(exec("x, n > 0"), session.StatusOK, "(6, True)")

	want(exec("import os\nos._exit(3)"), session.StatusDied, "")
	c = exec("'x' in dir(), open('/work/kept.txt').read()")
	want(c, session.StatusOK, "(False, 'on the workspace')")

	b, err := session.New(ctx, rt, session.Config{Language: sandbox.Bash})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Execute(ctx, session.Exec{Code: "cd /tmp && v=kept"}); err != nil {
		t.Fatal(err)
	}
	c, err = b.Execute(ctx, session.Exec{Code: "echo $PWD $v"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != session.StatusOK || strings.TrimSpace(c.Stdout()) != "/tmp kept" {
		t.Fatalf("bash session: %s %q %q", c.Status, c.Stdout(), c.Stderr())
	}
}
