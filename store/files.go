package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
)

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

func putFile(ctx context.Context, tx *sql.Tx, runID string, f File) error {
	if f.Kind == "" {
		f.Kind = "file"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO files (run_id, role, path, kind, size, mode, link_target, content, truncated, step)
		VALUES (?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (run_id, role, path) DO UPDATE SET kind = excluded.kind, size = excluded.size,
		mode = excluded.mode, link_target = excluded.link_target, content = excluded.content,
		truncated = excluded.truncated, step = excluded.step`,
		runID, f.Role, f.Path, f.Kind, f.Size, uint32(f.Mode), f.LinkTarget, f.Content, f.Truncated, f.Step)
	if err != nil {
		return fmt.Errorf("file %s: %w", f.Path, err)
	}
	return nil
}

// Files returns the run's files of a role (RoleInput, RoleOutput; "" for
// both), in path order, with their contents.
func (s *Store) Files(ctx context.Context, runID, role string) ([]File, error) {
	q := "SELECT role, path, kind, size, mode, link_target, content, truncated, step FROM files WHERE run_id = ?"
	args := []any{runID}
	if role != "" {
		q += " AND role = ?"
		args = append(args, role)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY role, path", args...)
	if err != nil {
		return nil, fmt.Errorf("store: files of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []File
	for rows.Next() {
		var f File
		var mode uint32
		if err := rows.Scan(&f.Role, &f.Path, &f.Kind, &f.Size, &mode, &f.LinkTarget, &f.Content, &f.Truncated, &f.Step); err != nil {
			return nil, fmt.Errorf("store: files of %s: %w", runID, err)
		}
		f.Mode = fs.FileMode(mode)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: files of %s: %w", runID, err)
	}
	return out, nil
}
