package api

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server/input"
)

// duration and size are read as the other surfaces read them.
type (
	duration = input.Duration
	size     = input.Size
)

// The request bodies' shared parts: limits and files, read strictly.

// limitsIn are limits as a request gives them: durations as strings
// ("10s") or seconds, sizes as bytes or strings ("256MiB"). Absent or zero
// fields take the server's defaults; a negative one is an error.
type limitsIn struct {
	WallTime       duration `json:"wall_time,omitempty"`
	CPUTime        duration `json:"cpu_time,omitempty"`
	Memory         size     `json:"memory,omitempty"`
	Processes      int      `json:"processes,omitempty"`
	OutputBytes    size     `json:"output_bytes,omitempty"`
	WorkspaceBytes size     `json:"workspace_bytes,omitempty"`
	OpenFiles      int      `json:"open_files,omitempty"`
}

// limits lays l over defaults, checked against the allowed ranges.
func (l limitsIn) limits(defaults sandbox.Limits) (sandbox.Limits, error) {
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

// fileIn is a file for a workspace: its content as text, or as base64.
type fileIn struct {
	Path          string  `json:"path"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
	Mode          uint32  `json:"mode,omitempty"`
}

// files checks and decodes the files: each path relative to the workspace
// without "..", each content given one way, no path twice.
func files(in []fileIn) ([]sandbox.File, error) {
	out := make([]sandbox.File, 0, len(in))
	seen := map[string]bool{}
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
			return nil, fmt.Errorf("%w: files[%d]: mode %o: want permission bits (0 to 0777)", sandbox.ErrInvalid, i, f.Mode)
		}
		var data []byte
		switch {
		case f.Content != nil && f.ContentBase64 != nil:
			return nil, fmt.Errorf("%w: files[%d]: give content or content_base64, not both", sandbox.ErrInvalid, i)
		case f.Content != nil:
			data = []byte(*f.Content)
		case f.ContentBase64 != nil:
			if data, err = base64.StdEncoding.DecodeString(*f.ContentBase64); err != nil {
				return nil, fmt.Errorf("%w: files[%d]: content_base64: %v", sandbox.ErrInvalid, i, err)
			}
		}
		out = append(out, sandbox.File{Path: p, Content: data, Mode: fs.FileMode(f.Mode)})
	}
	return out, nil
}
