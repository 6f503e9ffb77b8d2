package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionInfo describes a session in session_list and session_create.
type SessionInfo struct {
	// Name is the client's name for the session; a session made elsewhere
	// (coderun's HTTP API) has none and is named by its id.
	Name        string `json:"name,omitempty"`
	ID          string `json:"id"`
	Language    string `json:"language"`
	Created     string `json:"created"`
	LastUsed    string `json:"last_used"`
	Cells       int    `json:"cells"`
	Busy        bool   `json:"busy"`
	Interpreter string `json:"interpreter,omitempty"`
}

func sessionInfo(name string, in session.Info) SessionInfo {
	return SessionInfo{Name: name, ID: in.ID, Language: string(in.Language), Created: in.Created.UTC().Format(time.RFC3339Nano),
		LastUsed: in.LastUsed.UTC().Format(time.RFC3339Nano), Cells: in.Cells, Busy: in.Busy, Interpreter: in.Interpreter}
}

// CellError is an exception a cell raised.
type CellError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// CellResult is session_run's structured result.
type CellResult struct {
	Session   string `json:"session"`
	SessionID string `json:"session_id"`
	// Created is set when this call made the session.
	Created bool `json:"created,omitempty"`
	// Status is ok, error, interrupted, timeout or died.
	Status         string `json:"status"`
	ExecutionCount int    `json:"execution_count"`
	Stdout         string `json:"stdout,omitempty"`
	Stderr         string `json:"stderr,omitempty"`
	// Result is the text of the cell's value (its last expression).
	Result string     `json:"result,omitempty"`
	Error  *CellError `json:"error,omitempty"`
	// Images counts the images the cell displayed (they are image content).
	Images     int     `json:"images,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Note says what else happened: the interpreter died and was
	// restarted, the output was cut, an older session of the name was
	// evicted.
	Note string `json:"note,omitempty"`
}

// cellContent renders a finished cell: its text for the model, its images,
// and its structured result. The result is an error unless the cell ran
// to its end.
func cellContent(o *opened, c *session.Cell) (*sdk.CallToolResult, *CellResult) {
	r := CellResult{Session: o.name, SessionID: o.s.ID(), Created: o.created, Status: string(c.Status),
		ExecutionCount: c.ExecutionCount, Stdout: c.Stdout(), Stderr: c.Stderr(), DurationMS: ms(c.Duration)}
	var images []sdk.Content
	for _, out := range c.Outputs {
		switch out.Type {
		case session.TypeExecuteResult:
			r.Result = out.Data.Text("text/plain")
		case session.TypeDisplayData:
			if png, err := out.Data.Bytes("image/png"); err == nil && len(png) > 0 {
				images = append(images, &sdk.ImageContent{Data: png, MIMEType: "image/png"})
				continue
			}
			if svg := out.Data.Text("image/svg+xml"); svg != "" {
				// An SVG is text; clients show it as a resource.
				images = append(images, &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{
					URI:      fmt.Sprintf("coderun://sessions/%s/cells/%d/display/%d.svg", o.s.ID(), c.Index, len(images)+1),
					MIMEType: "image/svg+xml", Text: svg}})
				continue
			}
			if t := out.Data.Text("text/plain"); t != "" {
				r.Stdout += t + "\n"
			}
		case session.TypeError:
			r.Error = &CellError{Name: out.Ename, Value: out.Evalue, Traceback: strings.Join(out.Traceback, "\n")}
		}
		if out.Type == session.TypeExecuteResult {
			if png, err := out.Data.Bytes("image/png"); err == nil && len(png) > 0 {
				images = append(images, &sdk.ImageContent{Data: png, MIMEType: "image/png"})
			}
		}
	}
	r.Images = len(images)
	var notes []string
	if o.lost != "" {
		notes = append(notes, o.lost)
	}
	if c.Ended != nil {
		notes = append(notes, c.Ended.Message)
	}
	if c.Restarted {
		notes = append(notes, "a new interpreter was started: variables and imports are gone, files are kept")
	}
	if c.RestartError != "" {
		notes = append(notes, "the interpreter could not be restarted: "+c.RestartError)
	}
	if c.OutputTruncated {
		notes = append(notes, "the cell wrote more output than its limit; the rest was discarded")
	}
	if c.Status == session.StatusTimeout {
		notes = append(notes, fmt.Sprintf("the cell reached its %s limit and was interrupted; the session's state is kept", limitName(c.Limit)))
	}
	if c.Status == session.StatusInterrupted {
		notes = append(notes, "the cell was interrupted; the session's state is kept")
	}
	r.Note = strings.Join(notes, "; ")

	var b strings.Builder
	fmt.Fprintf(&b, "[%s] In [%d] in session %q: %s", c.Status, c.ExecutionCount, o.name, statusWords(c.Status))
	if o.created {
		b.WriteString(" (new session)")
	}
	b.WriteString("\n")
	section(&b, "stdout", r.Stdout)
	section(&b, "stderr", r.Stderr)
	section(&b, "result", r.Result)
	if r.Error != nil {
		section(&b, "traceback", r.Error.Traceback)
	}
	if r.Images > 0 {
		fmt.Fprintf(&b, "%d image(s) follow.\n", r.Images)
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	res := &sdk.CallToolResult{Content: append([]sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}, images...),
		IsError: c.Status != session.StatusOK}
	return res, &r
}

func statusWords(s session.Status) string {
	switch s {
	case session.StatusOK:
		return "ran to its end"
	case session.StatusError:
		return "raised an error"
	case session.StatusInterrupted:
		return "interrupted"
	case session.StatusTimeout:
		return "stopped at its time limit"
	case session.StatusDied:
		return "the interpreter died"
	}
	return string(s)
}

func limitName(r sandbox.Reason) string {
	if r == sandbox.ReasonCPULimit {
		return "CPU-time"
	}
	return "time"
}

// section writes a labelled block of text, if there is any.
func section(b *strings.Builder, label, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(b, "--- %s ---\n%s", label, text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sessionFileURI names a file of a session's workspace as a resource.
func sessionFileURI(sessionID, p string) string {
	return "coderun://sessions/" + url.PathEscape(sessionID) + "/files/" + escapePath(p)
}

// runURI names a run record; runFileURI a file a run produced.
func runURI(runID string) string { return "coderun://runs/" + url.PathEscape(runID) }

func runFileURI(runID, p string) string { return runURI(runID) + "/files/" + escapePath(p) }

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// mimeOf guesses a file's MIME type from its name, then its content.
func mimeOf(name string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		return "image/png"
	}
	if isText(data) {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// isText reports whether data reads as text: UTF-8 without NUL bytes.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// fileContent is a file as content: a PNG as an image, text as an embedded
// text resource, anything else as an embedded blob.
func fileContent(uri, name string, data []byte) []sdk.Content {
	mt := mimeOf(name, data)
	rc := &sdk.ResourceContents{URI: uri, MIMEType: mt}
	if isText(data) && !strings.HasPrefix(mt, "image/") {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	out := []sdk.Content{&sdk.EmbeddedResource{Resource: rc}}
	if mt == "image/png" {
		out = append(out, &sdk.ImageContent{Data: data, MIMEType: mt})
	}
	return out
}

// jsonText is v as indented JSON, for a text block beside structured
// content.
func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
