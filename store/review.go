package store

import "time"

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
	// ID numbers the item across the store.
	ID        int64      `json:"id"`
	Tenant    string     `json:"tenant"`
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

// The statuses of a review item.
const (
	ReviewOpen   = "open"
	ReviewClosed = "closed"
)

// NewReview opens a review item.
type NewReview struct {
	Kind   ReviewKind
	Reason string
}
