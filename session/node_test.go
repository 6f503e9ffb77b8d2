package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// TestNodeSession: a Node session keeps its declarations across cells,
// shows a cell's value, reports an uncaught error as the cell's error,
// survives an interrupt of an endless loop and restarts after
// process.exit.
func TestNodeSession(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Node, Grace: time.Second})
	ok(t, s, "const greeting = 'hello'\nlet n = 40\nfunction shout(x) { return x.toUpperCase() + '!' }")
	c := ok(t, s, "console.log(shout(greeting)); console.error('oops'); n + 2")
	if c.Stdout() != "HELLO!\n" || c.Stderr() != "oops\n" || c.ExecutionCount != 2 {
		t.Fatalf("state: %s", describe(c))
	}
	if len(c.Outputs) == 0 || c.Outputs[len(c.Outputs)-1].Type != session.TypeExecuteResult ||
		c.Outputs[len(c.Outputs)-1].Data["text/plain"] != "42" {
		t.Fatalf("value: %s", describe(c))
	}
	c = run(t, s, "null.x")
	if e := c.Error(); c.Status != session.StatusError || e == nil || e.Ename != "TypeError" || !strings.Contains(e.Evalue, "null") {
		t.Fatalf("error: %s", describe(c))
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		s.Interrupt()
	}()
	c = run(t, s, "let i = 0; while (true) { i++ }; console.log('never')")
	if c.Status != session.StatusInterrupted || strings.Contains(c.Stdout(), "never") || c.Restarted {
		t.Fatalf("interrupt: %s %s", c.Status, describe(c))
	}
	c = ok(t, s, "greeting + ' ' + n")
	if got := c.Outputs[len(c.Outputs)-1].Data["text/plain"]; got != "'hello 40'" {
		t.Fatalf("after interrupt: %s", describe(c))
	}
	c = run(t, s, "process.exit(3)")
	if c.Status != session.StatusDied || c.Ended == nil || c.Ended.ExitCode != 3 || !c.Restarted {
		t.Fatalf("exit: %s", describe(c))
	}
	c = ok(t, s, "typeof greeting")
	if got := c.Outputs[len(c.Outputs)-1].Data["text/plain"]; got != "'undefined'" {
		t.Fatalf("after exit: %s", describe(c))
	}
}
