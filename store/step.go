package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Step is one recorded step of a run. Data holds the payload of its
// kind, as JSON the store does not look into: decode it with
// [Step.Decode] into the type the kind names.
type Step struct {
	// Seq numbers the run's steps from 1.
	Seq int       `json:"seq"`
	At  time.Time `json:"at"`
	// Kind says what happened and which payload Data holds.
	Kind StepKind `json:"kind"`
	// Attempt is the attempt (single mode) or cell (steps mode) the step
	// belongs to, from 1; 0 for steps outside any attempt.
	Attempt int `json:"attempt,omitempty"`
	// Summary is one line for a person.
	Summary string          `json:"summary"`
	Data    json.RawMessage `json:"data"`
}

// StepKind names a kind of step, and so the type of its payload: the
// kinds are the agent's (package agent), the store only keeps them.
type StepKind string

// NewStep returns a step of kind with data encoded as JSON.
func NewStep(kind StepKind, attempt int, summary string, data any) (Step, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Step{}, fmt.Errorf("store: encode %s step: %w", kind, err)
	}
	return Step{Kind: kind, Attempt: attempt, Summary: summary, Data: b}, nil
}

// Decode decodes the step's payload into v.
func (s Step) Decode(v any) error {
	if err := json.Unmarshal(s.Data, v); err != nil {
		return fmt.Errorf("store: decode %s step %d: %w", s.Kind, s.Seq, err)
	}
	return nil
}
