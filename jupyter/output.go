package jupyter

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Output types, as in Jupyter's messaging protocol and nbformat 4.
const (
	TypeStream        = "stream"
	TypeDisplayData   = "display_data"
	TypeExecuteResult = "execute_result"
	TypeError         = "error"
	// TypeClearOutput and TypeUpdateDisplayData are messages of the
	// protocol, not outputs a notebook keeps: a front end applies them to
	// the outputs it shows (session.Exec.OnOutput receives them).
	TypeClearOutput       = "clear_output"
	TypeUpdateDisplayData = "update_display_data"
)

// Output is one output of a code cell, in the shape of an nbformat 4
// output (or, for TypeClearOutput and TypeUpdateDisplayData, of the
// messaging protocol's message). Which fields are set depends on Type.
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
		return nil, fmt.Errorf("jupyter: no %s in the bundle", mime)
	}
	if strings.HasPrefix(mime, "image/") && mime != "image/svg+xml" || mime == "application/pdf" {
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("jupyter: decode %s: %w", mime, err)
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
	return nil, fmt.Errorf("jupyter: unknown output type %q", o.Type)
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
