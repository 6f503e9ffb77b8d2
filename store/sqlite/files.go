package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/coderun/coderun/store"
)

func (t *tenant) putFile(ctx context.Context, tx *sql.Tx, runID string, f store.File) error {
	if f.Path == "" {
		return errors.New("a file without a path")
	}
	if f.Kind == "" {
		f.Kind = "file"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO files (tenant, run_id, role, path, kind, size, mode, link_target, content, truncated, step)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (tenant, run_id, role, path) DO UPDATE SET kind = excluded.kind, size = excluded.size,
		mode = excluded.mode, link_target = excluded.link_target, content = excluded.content,
		truncated = excluded.truncated, step = excluded.step`,
		t.name, runID, f.Role, f.Path, f.Kind, f.Size, uint32(f.Mode), f.LinkTarget, f.Content, f.Truncated, f.Step)
	if err != nil {
		return fmt.Errorf("file %s: %w", f.Path, err)
	}
	return nil
}

func (t *tenant) Files(ctx context.Context, runID, role string) ([]store.File, error) {
	q := "SELECT role, path, kind, size, mode, link_target, content, truncated, step FROM files WHERE tenant = ? AND run_id = ?"
	args := []any{t.name, runID}
	if role != "" {
		q += " AND role = ?"
		args = append(args, role)
	}
	rows, err := t.db.QueryContext(ctx, q+" ORDER BY role, path", args...)
	if err != nil {
		return nil, fmt.Errorf("store: files of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
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
	if len(out) == 0 {
		if err := t.exists(ctx, runID); err != nil {
			return nil, fmt.Errorf("store: files of %s: %w", runID, err)
		}
	}
	return out, nil
}

// exists reports store.ErrNotFound for a run that is not the tenant's.
func (t *tenant) exists(ctx context.Context, runID string) error {
	var one int
	err := t.db.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE tenant = ? AND id = ?", t.name, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return err
}
