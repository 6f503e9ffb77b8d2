package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/coderun/coderun/store"
)

func (t *tenant) openReview(ctx context.Context, tx *sql.Tx, runID string, r store.NewReview, now time.Time) error {
	if r.Kind == "" {
		return errors.New("open review: no kind")
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO reviews (tenant, run_id, kind, reason, created_at, status) VALUES (?,?,?,?,?,?)`,
		t.name, runID, r.Kind, r.Reason, formatTime(now), store.ReviewOpen)
	if err != nil {
		return fmt.Errorf("open review: %w", err)
	}
	return nil
}

func (t *tenant) closeReviews(ctx context.Context, tx *sql.Tx, runID string, c store.CloseReviews, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE reviews SET status = ?, closed_at = ?, resolution = ?, note = ?
		WHERE tenant = ? AND run_id = ? AND kind = ? AND status = ?`,
		store.ReviewClosed, formatTime(now), c.Resolution, c.Note, t.name, runID, c.Kind, store.ReviewOpen)
	if err != nil {
		return fmt.Errorf("close reviews: %w", err)
	}
	return nil
}

const reviewColumns = "id, tenant, run_id, kind, reason, created_at, status, closed_at, resolution, note"

func scanReview(sc rowScanner) (store.ReviewItem, error) {
	var r store.ReviewItem
	var created, closed string
	err := sc.Scan(&r.ID, &r.Tenant, &r.RunID, &r.Kind, &r.Reason, &created, &r.Status, &closed, &r.Resolution, &r.Note)
	r.CreatedAt, r.ClosedAt = parseTime(created), parseTime(closed)
	return r, err
}

func (t *tenant) Reviews(ctx context.Context, runID string, all bool) ([]store.ReviewItem, error) {
	q := "SELECT " + reviewColumns + " FROM reviews WHERE tenant = ?"
	args := []any{t.name}
	if !all {
		q += " AND status = ?"
		args = append(args, store.ReviewOpen)
	}
	if runID != "" {
		q += " AND run_id = ?"
		args = append(args, runID)
	}
	rows, err := t.db.QueryContext(ctx, q+" ORDER BY created_at, id", args...)
	if err != nil {
		return nil, fmt.Errorf("store: reviews: %w", err)
	}
	defer rows.Close()
	var out []store.ReviewItem
	for rows.Next() {
		r, err := scanReview(rows)
		if err != nil {
			return nil, fmt.Errorf("store: reviews: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reviews: %w", err)
	}
	return out, nil
}

func (t *tenant) CloseReview(ctx context.Context, id int64, resolution, note string) error {
	return t.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanReview(tx.QueryRowContext(ctx, "SELECT "+reviewColumns+" FROM reviews WHERE tenant = ? AND id = ?", t.name, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: review %d: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: review %d: %w", id, err)
		}
		if r.Status != store.ReviewOpen {
			return fmt.Errorf("store: review %d is already closed (%s)", id, r.Resolution)
		}
		_, err = tx.ExecContext(ctx, `UPDATE reviews SET status = ?, closed_at = ?, resolution = ?, note = ? WHERE tenant = ? AND id = ?`,
			store.ReviewClosed, formatTime(t.now()), resolution, note, t.name, id)
		if err != nil {
			return fmt.Errorf("store: close review %d: %w", id, err)
		}
		return nil
	})
}
