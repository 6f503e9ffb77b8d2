package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ReviewKind says why a run is in the review queue.
type ReviewKind string

// The kinds of review item.
const (
	// ReviewApproval: code waits for a person's approval.
	ReviewApproval ReviewKind = "approval"
	// ReviewFailure: the run ended without an answer.
	ReviewFailure ReviewKind = "failure"
	// ReviewUnverified: the answer quotes values not found in the output.
	ReviewUnverified ReviewKind = "unverified_answer"
)

// ReviewItem is an entry of the review queue: a run a person should look at.
type ReviewItem struct {
	ID        int64      `json:"id"`
	RunID     string     `json:"run_id"`
	Kind      ReviewKind `json:"kind"`
	Reason    string     `json:"reason"`
	CreatedAt time.Time  `json:"created_at"`
	// Status is "open" or "closed".
	Status   string    `json:"status"`
	ClosedAt time.Time `json:"closed_at,omitzero"`
	// Resolution says how it was closed ("approved", "rejected",
	// "resolved", ...).
	Resolution string `json:"resolution,omitempty"`
	Note       string `json:"note,omitempty"`
}

// NewReview opens a review item.
type NewReview struct {
	Kind   ReviewKind
	Reason string
}

func openReview(ctx context.Context, tx *sql.Tx, runID string, r NewReview, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO reviews (run_id, kind, reason, created_at, status) VALUES (?,?,?,?, 'open')`,
		runID, r.Kind, r.Reason, formatTime(now))
	if err != nil {
		return fmt.Errorf("open review: %w", err)
	}
	return nil
}

func closeReviews(ctx context.Context, tx *sql.Tx, runID string, c CloseReviews, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE reviews SET status = 'closed', closed_at = ?, resolution = ?, note = ?
		WHERE run_id = ? AND kind = ? AND status = 'open'`, formatTime(now), c.Resolution, c.Note, runID, c.Kind)
	if err != nil {
		return fmt.Errorf("close reviews: %w", err)
	}
	return nil
}

const reviewColumns = "id, run_id, kind, reason, created_at, status, closed_at, resolution, note"

func scanReview(sc rowScanner) (ReviewItem, error) {
	var r ReviewItem
	var created, closed string
	err := sc.Scan(&r.ID, &r.RunID, &r.Kind, &r.Reason, &created, &r.Status, &closed, &r.Resolution, &r.Note)
	r.CreatedAt, r.ClosedAt = parseTime(created), parseTime(closed)
	return r, err
}

// Reviews lists review items, oldest first: the open ones, or all with all
// set; runID, if not empty, keeps one run's.
func (s *Store) Reviews(ctx context.Context, runID string, all bool) ([]ReviewItem, error) {
	q := "SELECT " + reviewColumns + " FROM reviews WHERE 1=1"
	var args []any
	if !all {
		q += " AND status = 'open'"
	}
	if runID != "" {
		q += " AND run_id = ?"
		args = append(args, runID)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY created_at, id", args...)
	if err != nil {
		return nil, fmt.Errorf("store: reviews: %w", err)
	}
	defer rows.Close()
	var out []ReviewItem
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

// CloseReview closes one review item by id with a resolution and a note.
// Approval items are closed by the agent when it records the decision, not
// here.
func (s *Store) CloseReview(ctx context.Context, id int64, resolution, note string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanReview(tx.QueryRowContext(ctx, "SELECT "+reviewColumns+" FROM reviews WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: review %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: review %d: %w", id, err)
		}
		if r.Status != "open" {
			return fmt.Errorf("store: review %d is already closed (%s)", id, r.Resolution)
		}
		_, err = tx.ExecContext(ctx, `UPDATE reviews SET status = 'closed', closed_at = ?, resolution = ?, note = ? WHERE id = ?`,
			formatTime(s.now()), resolution, note, id)
		if err != nil {
			return fmt.Errorf("store: close review %d: %w", id, err)
		}
		return nil
	})
}
