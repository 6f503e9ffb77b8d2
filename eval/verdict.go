package eval

import (
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Status is an item's outcome. The set is closed.
type Status string

const (
	Passed  Status = "passed"  // the program ran to its end and exited with status 0
	Failed  Status = "failed"  // an assertion or another error in the program, or an early exit
	Timeout Status = "timeout" // the wall-time or CPU-time limit was reached
	Memory  Status = "memory"  // the memory limit was reached (or Python raised MemoryError)
	Error   Status = "error"   // the item could not be run: sandbox setup, an invalid request
)

// Statuses lists every status, in report order.
var Statuses = []Status{Passed, Failed, Timeout, Memory, Error}

// Verdict is what happened to one item. It is written as one JSON line.
type Verdict struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	Sample int    `json:"sample"`
	Status Status `json:"status"`
	// Error says why the item did not pass: the exception line of the
	// traceback ("AssertionError", "NameError: name 'x' is not defined"),
	// or the limit that was reached, or what went wrong around the run.
	Error string `json:"error,omitempty"`
	// Line is the source line the exception was raised at (in the program,
	// when it appears in the traceback): the failing assertion, typically.
	Line string `json:"line,omitempty"`
	// Stderr is the end of the program's standard error when it did not pass.
	Stderr string `json:"stderr,omitempty"`
	// Reason, ExitCode and Signal are the sandbox's account of the run.
	Reason   sandbox.Reason `json:"reason,omitempty"`
	ExitCode int            `json:"exit_code"`
	Signal   string         `json:"signal,omitempty"`
	// WallMS is the program's run time in its sandbox; CPUMS its CPU time;
	// TotalMS the item's whole time in Run, sandbox setup and teardown on the
	// request path included (milliseconds).
	WallMS     float64 `json:"wall_ms"`
	CPUMS      float64 `json:"cpu_ms"`
	TotalMS    float64 `json:"total_ms"`
	PeakMemory int64   `json:"peak_memory,omitempty"`
	Pooled     bool    `json:"pooled,omitempty"`
	// Hash identifies the program (language and code), so that a verdict
	// read back from a file can be matched to the item it was made for.
	Hash string `json:"hash"`
	// Finished is when the verdict was made.
	Finished time.Time `json:"finished"`
}

// StderrTail bounds Verdict.Stderr.
const StderrTail = 2048

// maxErrorLen bounds Verdict.Error and Verdict.Line.
const maxErrorLen = 1024

// judge turns a sandbox result into a verdict's status and explanation.
// marker is the line the program prints when it has run to its end.
func judge(v *Verdict, res *sandbox.Result, marker string) {
	v.Reason, v.ExitCode, v.Signal = res.Reason, res.ExitCode, res.Signal
	v.WallMS = ms(res.Usage.Wall)
	v.CPUMS = ms(res.Usage.CPU())
	v.PeakMemory = res.Usage.PeakMemory
	v.Pooled = res.Pooled
	finished := strings.Contains(res.Stdout, marker)
	switch res.Reason {
	case sandbox.ReasonExited:
		switch {
		case res.Signal != "":
			v.Status, v.Error = Failed, "terminated by "+res.Signal
		case res.ExitCode != 0:
			v.Status = Failed
			v.Error, v.Line = exceptionOf(res.Stderr)
			if v.Error == "" {
				v.Error = panicOf(res.Stdout)
			}
			if v.Error == "" {
				v.Error = fmt.Sprintf("exited with code %d", res.ExitCode)
			}
			if strings.HasPrefix(v.Error, "MemoryError") {
				v.Status = Memory
			}
		case !finished:
			v.Status, v.Error = Failed, "exited with code 0 before the tests finished"
		default:
			v.Status = Passed
		}
	case sandbox.ReasonTimeout, sandbox.ReasonCPULimit:
		v.Status, v.Error = Timeout, res.Error
	case sandbox.ReasonMemoryLimit:
		v.Status, v.Error = Memory, res.Error
	case sandbox.ReasonOutputLimit:
		v.Status, v.Error = Failed, res.Error
	default: // setup error; killed other than by our own cancellation
		v.Status, v.Error = Error, res.Summary()
	}
	if v.Status != Passed {
		v.Stderr = tail(res.Stderr, StderrTail)
	}
	v.Error = clip(v.Error, maxErrorLen)
	v.Line = clip(v.Line, maxErrorLen)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// panicOf is the first panic a test harness reported on its standard
// output, as rustc's does for a failed #[test] (it captures what a test
// prints, the panic's message included, and prints it in its failures):
// the "thread '…' panicked at …" line and the lines of its message after
// it, up to a blank one, on one line; "" when there is none.
func panicOf(stdout string) string {
	ls := strings.Split(stdout, "\n")
	for i, l := range ls {
		if !strings.HasPrefix(l, "thread '") || !strings.Contains(l, "' panicked at ") {
			continue
		}
		msg := []string{strings.TrimSpace(l)}
		for _, m := range ls[i+1 : min(len(ls), i+5)] {
			if strings.TrimSpace(m) == "" || strings.HasPrefix(m, "note: ") {
				break
			}
			msg = append(msg, strings.TrimSpace(m))
		}
		return clip(strings.Join(msg, " "), maxErrorLen)
	}
	return ""
}

// exceptionOf finds, in a Python program's standard error, the exception
// that ended it: the exception line of the last traceback ("ValueError:
// bad value", continuation lines of its message included) and the source
// line it was raised at, preferring the innermost frame in the program
// itself (/work/main.py, or the harness's <solution>, <setup>, <tests> and
// <prompt>) over frames in libraries. For other output it
// returns the last non-blank line.
func exceptionOf(stderr string) (exc, line string) {
	ls := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	start := -1
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i] == "Traceback (most recent call last):" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		// A SyntaxError is printed without the header: its location line
		// (`  File "...", line N`) starts the report.
		for i := len(ls) - 1; i >= 0; i-- {
			if strings.HasPrefix(ls[i], `  File "`) {
				start = i
				break
			}
		}
	}
	if start < 0 {
		for i := len(ls) - 1; i >= 0; i-- {
			if s := strings.TrimSpace(ls[i]); s != "" {
				return s, ""
			}
		}
		return "", ""
	}
	var progLine, anyLine string
	i := start
	for ; i < len(ls) && strings.HasPrefix(ls[i], " "); i++ {
		if !strings.HasPrefix(ls[i], `  File "`) {
			continue
		}
		src := ""
		if i+1 < len(ls) && strings.HasPrefix(ls[i+1], "    ") {
			src = strings.TrimSpace(ls[i+1])
		}
		anyLine = src
		if programFrame(ls[i]) {
			progLine = src
		}
	}
	if i >= len(ls) {
		return "", firstNonEmpty(progLine, anyLine)
	}
	exc = strings.TrimRight(strings.Join(ls[i:], "\n"), "\n ")
	return exc, firstNonEmpty(progLine, anyLine)
}

// programFrame says whether a traceback's frame line is in the program
// itself: the program's file, or the code the harness runs under names of
// its own (the solution and the setup in their process, the tests and the
// prompt's helpers in the harness's).
func programFrame(line string) bool {
	for _, f := range []string{sandbox.WorkDir + "/main.", "<solution>\"", "<setup>\"", "<tests>\"", "<prompt>\""} {
		if strings.HasPrefix(line, `  File "`+f) {
			return true
		}
	}
	return false
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	// Start at a line boundary when one is near, else at a rune boundary.
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n/2 {
		s = s[i:]
	}
	return "…" + strings.ToValidUTF8(s, "")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
