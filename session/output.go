package session

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Output types, as in Jupyter's messaging protocol and nbformat 4.
const (
	TypeStream        = "stream"
	TypeDisplayData   = "display_data"
	TypeExecuteResult = "execute_result"
	TypeError         = "error"
	// TypeClearOutput and TypeUpdateDisplayData reach only Exec.OnOutput:
	// the session applies them to the cell's outputs (as a notebook front end
	// does) and never stores them.
	TypeClearOutput       = "clear_output"
	TypeUpdateDisplayData = "update_display_data"
)

// Output is one output of a cell, in the shape of an nbformat 4 output.
// Which fields are set depends on Type.
type Output struct {
	Type string
	// Stream: Name is "stdout" or "stderr"; Text is what was written
	// (bytes that are not UTF-8 are replaced by U+FFFD).
	Name string
	Text string
	// DisplayData and ExecuteResult: the MIME bundle and its metadata.
	Data     MIMEBundle
	Metadata map[string]any
	// ExecuteResult: the cell's execution count.
	ExecutionCount int
	// Error: the exception's class name, its message, and the traceback
	// lines (plain text, pointing into the cell).
	Ename     string
	Evalue    string
	Traceback []string
	// DisplayID is set for display_data published with a display id
	// (display(..., display_id=...)), which later updates replace. Jupyter
	// keeps it out of the notebook ("transient"), and so does this package.
	DisplayID string
	// Wait is set on TypeClearOutput: clear when the next output arrives.
	Wait bool
}

// MIMEBundle maps MIME types to content: strings for text and for
// base64-encoded images, any JSON value for application/json.
type MIMEBundle map[string]any

// Text returns the bundle's content for mime as a string ("" if absent or
// not a string).
func (b MIMEBundle) Text(mime string) string {
	s, _ := b[mime].(string)
	return s
}

// Bytes decodes base64 content (image/png, image/jpeg) or returns text
// content as bytes.
func (b MIMEBundle) Bytes(mime string) ([]byte, error) {
	s, ok := b[mime].(string)
	if !ok {
		return nil, fmt.Errorf("session: no %s in the bundle", mime)
	}
	if strings.HasPrefix(mime, "image/") && mime != "image/svg+xml" || mime == "application/pdf" {
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("session: decode %s: %w", mime, err)
		}
		return data, nil
	}
	return []byte(s), nil
}

// Types lists the bundle's MIME types.
func (b MIMEBundle) Types() []string {
	out := make([]string, 0, len(b))
	for k := range b {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// MarshalJSON writes the output exactly as nbformat 4 wants it: the fields
// of its type and no others, keys sorted as Jupyter writes them.
func (o Output) MarshalJSON() ([]byte, error) {
	switch o.Type {
	case TypeStream:
		return json.Marshal(struct {
			Name string `json:"name"`
			Type string `json:"output_type"`
			Text string `json:"text"`
		}{o.Name, o.Type, o.Text})
	case TypeDisplayData:
		return json.Marshal(struct {
			Data     MIMEBundle     `json:"data"`
			Metadata map[string]any `json:"metadata"`
			Type     string         `json:"output_type"`
		}{nonNilBundle(o.Data), nonNilMap(o.Metadata), o.Type})
	case TypeExecuteResult:
		var count *int
		if o.ExecutionCount > 0 {
			count = &o.ExecutionCount
		}
		return json.Marshal(struct {
			Data           MIMEBundle     `json:"data"`
			ExecutionCount *int           `json:"execution_count"`
			Metadata       map[string]any `json:"metadata"`
			Type           string         `json:"output_type"`
		}{nonNilBundle(o.Data), count, nonNilMap(o.Metadata), o.Type})
	case TypeError:
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		return json.Marshal(struct {
			Ename     string   `json:"ename"`
			Evalue    string   `json:"evalue"`
			Type      string   `json:"output_type"`
			Traceback []string `json:"traceback"`
		}{o.Ename, o.Evalue, o.Type, tb})
	case TypeClearOutput:
		return json.Marshal(struct {
			Type string `json:"output_type"`
			Wait bool   `json:"wait"`
		}{o.Type, o.Wait})
	case TypeUpdateDisplayData:
		return json.Marshal(struct {
			Type      string         `json:"output_type"`
			Data      MIMEBundle     `json:"data"`
			Metadata  map[string]any `json:"metadata"`
			DisplayID string         `json:"display_id"`
		}{o.Type, nonNilBundle(o.Data), nonNilMap(o.Metadata), o.DisplayID})
	}
	return nil, fmt.Errorf("session: unknown output type %q", o.Type)
}

// UnmarshalJSON reads an nbformat 4 output, accepting text given as a
// string or as a list of lines, as notebooks written by Jupyter have it.
func (o *Output) UnmarshalJSON(data []byte) error {
	var raw struct {
		Type           string            `json:"output_type"`
		Name           string            `json:"name"`
		Text           multiline         `json:"text"`
		Data           map[string]any    `json:"data"`
		Metadata       map[string]any    `json:"metadata"`
		ExecutionCount *int              `json:"execution_count"`
		Ename          string            `json:"ename"`
		Evalue         string            `json:"evalue"`
		Traceback      []string          `json:"traceback"`
		Wait           bool              `json:"wait"`
		DisplayID      string            `json:"display_id"`
		Transient      map[string]string `json:"transient"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*o = Output{Type: raw.Type, Name: raw.Name, Text: string(raw.Text), Metadata: raw.Metadata,
		Ename: raw.Ename, Evalue: raw.Evalue, Traceback: raw.Traceback, Wait: raw.Wait, DisplayID: raw.DisplayID}
	if raw.ExecutionCount != nil {
		o.ExecutionCount = *raw.ExecutionCount
	}
	if raw.Data != nil {
		o.Data = MIMEBundle{}
		for k, v := range raw.Data {
			// Text and base64 content may come as lists of lines.
			if lines, ok := v.([]any); ok && !isJSONMime(k) {
				var b strings.Builder
				for _, l := range lines {
					s, _ := l.(string)
					b.WriteString(s)
				}
				v = b.String()
			}
			o.Data[k] = v
		}
	}
	return nil
}

func isJSONMime(m string) bool {
	return m == "application/json" || strings.HasSuffix(m, "+json")
}

// multiline is nbformat's "string or list of strings".
type multiline string

func (m *multiline) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*m = multiline(s)
		return nil
	}
	var lines []string
	if err := json.Unmarshal(data, &lines); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*m = multiline(strings.Join(lines, ""))
	return nil
}

func nonNilBundle(b MIMEBundle) MIMEBundle {
	if b == nil {
		return MIMEBundle{}
	}
	return b
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

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
