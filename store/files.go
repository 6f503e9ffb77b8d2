package store

import "io/fs"

// The roles of a run's files.
const (
	// RoleInput is one of the user's input files.
	RoleInput = "input"
	// RoleOutput is a file the run's code created or changed.
	RoleOutput = "output"
)

// File is a file of a run: an input, or what the code produced.
type File struct {
	Role string `json:"role"`
	// Path is relative to the workspace.
	Path string `json:"path"`
	// Kind is "file", "dir", "symlink" or "other".
	Kind       string      `json:"kind"`
	Size       int64       `json:"size"`
	Mode       fs.FileMode `json:"mode"`
	LinkTarget string      `json:"link_target,omitempty"`
	// Content is the file's bytes, up to the agent's bound; Truncated is
	// set when the file was larger.
	Content   []byte `json:"content,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Step is the seq of the step that produced the file (outputs).
	Step int `json:"step,omitempty"`
}
