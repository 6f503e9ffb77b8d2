package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// A cell that computes past its CPU-time limit is interrupted as at its
// time limit, long before its wall-time limit, and the session's state is
// kept; a cell that waits is not stopped by it.
func TestCellCPULimit(t *testing.T) {
	for _, c := range []struct {
		lang        sandbox.Language
		set, spin   string
		sleep, seen string
	}{
		{sandbox.Python, "x = 41", "while True:\n    pass", "import time; time.sleep(1.5); print('slept')", "print(x + 1)"},
		{sandbox.Bash, "x=41", "while :; do :; done", "sleep 1.5; echo slept", "echo $((x + 1))"},
	} {
		t.Run(string(c.lang), func(t *testing.T) {
			t.Parallel()
			s := newSession(t, session.Config{Language: c.lang, Limits: sandbox.Limits{WallTime: 30 * time.Second, CPUTime: time.Second}})
			ok(t, s, c.set)
			cell := run(t, s, c.spin)
			if cell.Status != session.StatusTimeout || cell.Limit != sandbox.ReasonCPULimit {
				t.Fatalf("status %s, want timeout: %+v", cell.Status, cell.Outputs)
			}
			if cell.Duration > 10*time.Second {
				t.Errorf("stopped after %s: the CPU limit is 1s, the time limit 30s", cell.Duration)
			}
			if text := allText(cell); !strings.Contains(text, "CPU-time limit (1s)") {
				t.Errorf("the cell does not name its CPU-time limit:\n%s", text)
			}
			if got := run(t, s, c.sleep); got.Status != session.StatusOK {
				t.Errorf("a cell that waits past the CPU limit: %s", got.Status)
			}
			if got := allText(run(t, s, c.seen)); !strings.Contains(got, "42") {
				t.Errorf("state lost after the CPU limit: %q", got)
			}
		})
	}
}

// allText is every text a cell shows: streams, results and errors.
func allText(c *session.Cell) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		b.WriteString(o.Text)
		if v, ok := o.Data["text/plain"].(string); ok {
			b.WriteString(v)
		}
		b.WriteString(o.Ename + ": " + o.Evalue + "\n")
	}
	return b.String()
}
