package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/coderun/coderun/store"
)

// The approve phase: code the policy asks about is approved by an earlier
// "always" of the run, by the approval mode (all or none), or by a person.
// Before a person is asked, the run is recorded as awaiting approval (one
// transition, back to this phase); then the Approver decides, or, without
// one, the run pauses until [Decide] records a decision and [Agent.Resume]
// takes it up.

func (r *runner) approve(ctx context.Context) (transition, error) {
	p := r.st.Pending
	rules := causeRules(*p.Decision)
	covered := len(rules) > 0
	for _, rule := range rules {
		if !slices.Contains(r.st.Always, rule) {
			covered = false
		}
	}
	switch {
	case covered:
		return r.decided(Approve, "always (approved earlier in this run)", ""), nil
	case r.cfg.Approval == ApproveAll:
		return r.decided(Approve, "flag (--approve all)", ""), nil
	case r.cfg.Approval == ApproveNone:
		return r.rejected(r.decided(Reject, "non-interactive default (--approve none)", ""), endRejectedByMode, ""), nil
	}
	if r.run.Status != store.StatusAwaitingApproval {
		pa, err := json.Marshal(r.pendingApproval())
		if err != nil {
			return transition{}, fmt.Errorf("agent: pending approval: %w", err)
		}
		t := to(phaseApprove, r.step(StepApproval, r.st.Attempt+1, "awaiting approval"+reviewCauses(*p.Decision),
			&Approval{Decision: "pending", By: "policy", Rules: rules}))
		t.update = store.Update{Status: store.StatusAwaitingApproval, Pending: pa,
			Review: &store.NewReview{Kind: store.ReviewApproval, Reason: p.Decision.Explanation}}
		return t, nil
	}
	if r.cfg.Approver == nil {
		return transition{pause: true}, nil
	}
	v, err := r.cfg.Approver.Approve(ctx, ApprovalRequest{RunID: r.run.ID, Language: p.Language, Code: p.Code, Decision: *p.Decision})
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(), nil
		}
		return transition{pause: true}, nil
	}
	if v == Defer {
		return transition{pause: true}, nil
	}
	t := r.decided(v, "terminal", "")
	if v == Reject {
		return r.rejected(t, endRejected, "at the terminal"), nil
	}
	return t, nil
}

func (r *runner) pendingApproval() *PendingApproval {
	p := r.st.Pending
	return &PendingApproval{Language: p.Language, Code: p.Code, Explanation: p.Decision.Explanation,
		Findings: p.Decision.Causes, Step: r.run.Steps, At: time.Now()}
}

// decided records a decision about the pending code: Approve and Always
// move on to execution; after Reject the caller ends the run (rejected).
func (r *runner) decided(v Verdict, by, note string) transition {
	p := r.st.Pending
	rules := causeRules(*p.Decision)
	a := &Approval{By: by, Rules: rules, Note: note}
	resolution := "approved"
	var next phase
	switch v {
	case Approve, Always:
		a.Decision = "approved"
		a.Always = v == Always
		p.Approved = true
		r.st.Score.Approvals++
		if v == Always {
			for _, rule := range rules {
				if !slices.Contains(r.st.Always, rule) {
					r.st.Always = append(r.st.Always, rule)
				}
			}
		}
		next = phaseExecute
	default:
		a.Decision = "rejected"
		resolution = "rejected"
		r.st.Score.Rejections++
	}
	t := to(next, r.step(StepApproval, r.st.Attempt+1, a.Decision+" by "+by, a))
	t.update.ClearPending = true
	if r.run.Status == store.StatusAwaitingApproval {
		t.update.Status = store.StatusRunning
		t.update.CloseReviews = &store.CloseReviews{Kind: store.ReviewApproval, Resolution: resolution, Note: note}
	}
	return t
}

// rejected ends the run after the rejection t records: by e, by whom
// (for endRejected).
func (r *runner) rejected(t transition, e ending, by string) transition {
	end := r.endBy(e, endFacts{detail: by, explanation: r.st.Pending.Decision.Explanation}, t.steps...)
	end.update = t.update
	return end
}
