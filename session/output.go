package session

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/sandbox"
)

// Output types, as in Jupyter's messaging protocol and nbformat 4 (see
// package jupyter).
const (
	TypeStream        = jupyter.TypeStream
	TypeDisplayData   = jupyter.TypeDisplayData
	TypeExecuteResult = jupyter.TypeExecuteResult
	TypeError         = jupyter.TypeError
	// TypeClearOutput and TypeUpdateDisplayData reach only Exec.OnOutput:
	// the session applies them to the cell's outputs (as a notebook front end
	// does) and never stores them.
	TypeClearOutput       = jupyter.TypeClearOutput
	TypeUpdateDisplayData = jupyter.TypeUpdateDisplayData
)

// Output is one output of a cell: a Jupyter output, written and read as
// nbformat 4 has it.
type Output = jupyter.Output

// MIMEBundle maps MIME types to content (see jupyter.MIMEBundle).
type MIMEBundle = jupyter.MIMEBundle

// Status says how a cell ended. The set is closed.
type Status string

const (
	// StatusOK: the code ran to its end.
	StatusOK Status = "ok"
	// StatusError: the code raised an exception (Python) or its last
	// command failed (bash); the error output says which.
	StatusError Status = "error"
	// StatusInterrupted: stopped by Session.Interrupt or by cancelling the
	// context (KeyboardInterrupt, SIGINT). State is kept unless Restarted.
	StatusInterrupted Status = "interrupted"
	// StatusTimeout: the cell reached its time limit and was interrupted;
	// state is kept unless Restarted (it did not stop within the grace
	// period and the interpreter was killed).
	StatusTimeout Status = "timeout"
	// StatusDied: the interpreter ended during the cell: it exited (exit,
	// os._exit), exceeded the memory limit, or was killed. Ended says how;
	// the session started a fresh interpreter (Restarted).
	StatusDied Status = "died"
)

// Ending says how an interpreter ended.
type Ending struct {
	// Reason is the sandbox's: exited, memory_limit, killed...
	Reason   sandbox.Reason `json:"reason"`
	ExitCode int            `json:"exit_code"`
	Signal   string         `json:"signal,omitempty"`
	// Message says it in one sentence, for people and models.
	Message string `json:"message"`
	// Diagnostics is the end of what the interpreter itself wrote on its
	// standard error (a fatal error's traceback), if anything.
	Diagnostics string `json:"diagnostics,omitempty"`
	// Usage is what the interpreter used over its life.
	Usage sandbox.Usage `json:"usage"`
	// Idle is set when it ended between cells.
	Idle bool `json:"idle,omitempty"`
}

// Cell is one executed cell: its code, its outputs, how it ended.
type Cell struct {
	// Index is the cell's position in the session's history, from 1.
	Index int `json:"index"`
	// ExecutionCount is the interpreter's count (In [n]); it starts again at
	// 1 when the interpreter restarts, as in Jupyter.
	ExecutionCount int      `json:"execution_count"`
	Code           string   `json:"code"`
	Outputs        []Output `json:"outputs"`
	Status         Status   `json:"status"`
	// ExitStatus is the status of a bash cell's last command.
	ExitStatus int       `json:"exit_status,omitempty"`
	Started    time.Time `json:"started"`
	// Duration is from sending the cell to its last output, measured on
	// the host (in JSON: duration_ms).
	Duration time.Duration `json:"-"`
	// OutputTruncated is set when the cell wrote more than its output limit;
	// the rest was discarded.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// Ended is set when the interpreter ended during this cell, or had
	// ended between the previous cell and this one (Ended.Idle).
	Ended *Ending `json:"ended,omitempty"`
	// Restarted is set when a fresh interpreter was started because of this
	// cell (after it died or was killed) or before it (after an idle death):
	// variables and imports are gone, files are kept.
	Restarted bool `json:"restarted,omitempty"`
	// Limit names the limit that stopped a StatusTimeout cell: the time
	// limit (sandbox.ReasonTimeout) or the CPU-time limit
	// (sandbox.ReasonCPULimit).
	Limit sandbox.Reason `json:"limit,omitempty"`
	// RestartError is set when that restart failed.
	RestartError string `json:"restart_error,omitempty"`
	// RetryOf is the Index of the failed cell this one retries (0: none);
	// RetriedBy is the Index of the cell that retried this one.
	RetryOf   int `json:"retry_of,omitempty"`
	RetriedBy int `json:"retried_by,omitempty"`
}

// MarshalJSON adds duration_ms.
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell
	return json.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}{plain(c), durationMS(c.Duration)})
}

// Error returns the cell's first error output, or nil.
func (c *Cell) Error() *Output {
	for i := range c.Outputs {
		if c.Outputs[i].Type == TypeError {
			return &c.Outputs[i]
		}
	}
	return nil
}

// Stdout returns everything the cell wrote on stdout.
func (c *Cell) Stdout() string { return c.stream("stdout") }

// Stderr returns everything the cell wrote on stderr.
func (c *Cell) Stderr() string { return c.stream("stderr") }

func (c *Cell) stream(name string) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		if o.Type == TypeStream && o.Name == name {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

// Result returns the cell's execute_result, or nil.
func (c *Cell) Result() *Output {
	for i := range c.Outputs {
		if c.Outputs[i].Type == TypeExecuteResult {
			return &c.Outputs[i]
		}
	}
	return nil
}

func (c *Cell) clone() *Cell {
	d := *c
	d.Outputs = append([]Output(nil), c.Outputs...)
	if c.Ended != nil {
		e := *c.Ended
		d.Ended = &e
	}
	return &d
}
