// Package input holds the request shapes that coderun's API surfaces
// share: durations ("10s" or a number of seconds), sizes (a number of
// bytes or "256MiB"), per-execution limits (the three of an agent run's or
// a job item's executions, or all of them for coderun's own one-shot runs
// and sessions) and input files (text or base64, with permission bits
// where the surface takes them), with their checks. A bad value is an
// error wrapping sandbox.ErrInvalid that names the field.
package input

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Duration reads "10s" or a number of seconds.
type Duration time.Duration

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a duration such as \"10s\" or a number of seconds", s)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(data, &secs); err != nil {
		return fmt.Errorf("want a duration such as \"10s\" or a number of seconds")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// MarshalJSON writes the duration as a string ("1m30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Size reads a number of bytes or a size with its unit ("256MiB").
type Size int64

// UnmarshalJSON reads a number of bytes or a size string.
func (z *Size) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := sandbox.ParseBytes(s)
		if err != nil {
			return err
		}
		*z = Size(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("want a number of bytes or a size such as \"256MiB\"")
	}
	*z = Size(n)
	return nil
}

// Limits bound each execution; zero fields take the server's.
type Limits struct {
	WallTime Duration `json:"wall_time,omitempty"`
	CPUTime  Duration `json:"cpu_time,omitempty"`
	Memory   Size     `json:"memory,omitempty"`
}

// Limits returns the limits given, an error naming a negative one.
func (l Limits) Limits() (sandbox.Limits, error) {
	return ExecLimits{Limits: l}.Over(sandbox.Limits{})
}

// ExecLimits are every limit of an execution, as coderun's own API takes
// them for a one-shot run or a session: Limits' three, and the
// processes, output, workspace and open files. Zero fields take the
// server's.
type ExecLimits struct {
	Limits
	Processes      int  `json:"processes,omitempty"`
	OutputBytes    Size `json:"output_bytes,omitempty"`
	WorkspaceBytes Size `json:"workspace_bytes,omitempty"`
	OpenFiles      int  `json:"open_files,omitempty"`
}

// Over returns the limits given laid over defaults, an error naming a
// negative one.
func (l ExecLimits) Over(defaults sandbox.Limits) (sandbox.Limits, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"wall_time", int64(l.WallTime)}, {"cpu_time", int64(l.CPUTime)}, {"memory", int64(l.Memory)},
		{"processes", int64(l.Processes)}, {"output_bytes", int64(l.OutputBytes)},
		{"workspace_bytes", int64(l.WorkspaceBytes)}, {"open_files", int64(l.OpenFiles)}} {
		if f.v < 0 {
			return sandbox.Limits{}, fmt.Errorf("%w: limits.%s is negative", sandbox.ErrInvalid, f.name)
		}
	}
	out := sandbox.Limits{WallTime: time.Duration(l.WallTime), CPUTime: time.Duration(l.CPUTime), Memory: int64(l.Memory),
		Processes: l.Processes, OutputBytes: int64(l.OutputBytes), WorkspaceBytes: int64(l.WorkspaceBytes), OpenFiles: l.OpenFiles}
	return out.WithDefaults(defaults), nil
}

// File is a file for a workspace: its content as text, or as base64.
type File struct {
	Path          string  `json:"path"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

// FileWithMode is a File with its permission bits (0 to 0777; 0: the
// sandbox's default), as coderun's own API takes files.
type FileWithMode struct {
	File
	Mode uint32 `json:"mode,omitempty"`
}

// Files checks files (paths in the workspace, each once, one content
// each) and returns them, at most max bytes together (0: no bound).
func Files(in []File, max int64) ([]sandbox.File, error) {
	withMode := make([]FileWithMode, len(in))
	for i, f := range in {
		withMode[i].File = f
	}
	return FilesWithMode(withMode, max)
}

// FilesWithMode is Files for files with permission bits.
func FilesWithMode(in []FileWithMode, max int64) ([]sandbox.File, error) {
	out := make([]sandbox.File, 0, len(in))
	seen := map[string]bool{}
	var total int64
	for i, f := range in {
		p, err := sandbox.CleanPath(f.Path)
		if err != nil {
			return nil, fmt.Errorf("files[%d]: %w", i, err)
		}
		if seen[p] {
			return nil, fmt.Errorf("%w: files[%d]: %s is given twice", sandbox.ErrInvalid, i, p)
		}
		seen[p] = true
		if f.Mode&^0o777 != 0 {
			return nil, fmt.Errorf("%w: files[%d] (%s): mode %o: want permission bits (0 to 0777)", sandbox.ErrInvalid, i, p, f.Mode)
		}
		var b []byte
		switch {
		case f.Content != nil && f.ContentBase64 != nil:
			return nil, fmt.Errorf("%w: files[%d] (%s): give content or content_base64, not both", sandbox.ErrInvalid, i, p)
		case f.Content != nil:
			b = []byte(*f.Content)
		case f.ContentBase64 != nil:
			if b, err = base64.StdEncoding.DecodeString(*f.ContentBase64); err != nil {
				return nil, fmt.Errorf("%w: files[%d] (%s): content_base64 is not base64: %v", sandbox.ErrInvalid, i, p, err)
			}
		}
		if total += int64(len(b)); max > 0 && total > max {
			return nil, fmt.Errorf("%w: files: more than %s together", sandbox.ErrInvalid, sandbox.FormatBytes(max))
		}
		out = append(out, sandbox.File{Path: p, Content: b, Mode: fs.FileMode(f.Mode)})
	}
	return out, nil
}

// LimitsSchema is the JSON schema of Limits, for the OpenAPI documents of
// the surfaces that read them (as the component schema "RunLimits").
func LimitsSchema() map[string]any {
	duration := map[string]any{"type": []any{"string", "number"}, "description": "A duration such as \"10s\", or a number of seconds."}
	return map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
		"wall_time": duration, "cpu_time": duration,
		"memory": map[string]any{"type": []any{"string", "integer"}, "description": "A number of bytes, or a size such as \"256MiB\"."}}}
}
