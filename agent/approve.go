package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	ar := ApprovalRequest{RunID: r.run.ID, Language: p.Language, Code: p.Code, Decision: *p.Decision}
	var v Verdict
	var note string
	var err error
	if na, ok := r.cfg.Approver.(NotingApprover); ok {
		v, note, err = na.ApproveNoted(ctx, ar)
	} else {
		v, err = r.cfg.Approver.Approve(ctx, ar)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(), nil
		}
		return transition{pause: true}, nil
	}
	if v == Defer {
		return transition{pause: true}, nil
	}
	t := r.decided(v, "terminal", note)
	if v == Reject {
		return r.sendBack(t, "at the terminal", note), nil
	}
	return t, nil
}

// KindRejected is the reason of a retry after a person rejected the code.
const KindRejected Kind = "rejected"

// sendBack is where a person's rejection t records leads: back to the
// model, as the result of its code (the tool result of its call), with
// the reviewer's note and the policy's concern, to rewrite the code
// within the retry budget. With the budget spent, the run ends rejected
// (by whom: "at the terminal", "by alice").
func (r *runner) sendBack(t transition, by, note string) transition {
	if r.st.Retries >= r.rc.MaxRetries {
		return r.rejected(t, endRejected, by)
	}
	p := r.st.Pending
	r.st.Retries++
	r.st.Score.Retries++
	obs := "The code was not run: the person reviewing it rejected it (" + by + ")"
	if note = strings.TrimSpace(note); note != "" {
		obs += ", noting: " + note
	} else {
		obs += "."
	}
	if p.Decision != nil && p.Decision.Explanation != "" {
		obs += "\nWhat the policy flagged: " + p.Decision.Explanation
	}
	obs += "\n\n" + rewriteInstruction(r.rc, r.st.Retries, r.rc.MaxRetries)
	feedback := r.feedback(p, obs)
	r.st.Messages = append(r.st.Messages, feedback...)
	r.st.Pending = nil
	t.steps = append(t.steps, r.step(StepRetry, r.st.Attempt, fmt.Sprintf("retry %d of %d: %s", r.st.Retries, r.rc.MaxRetries, KindRejected),
		&Retry{Number: r.st.Retries, Max: r.rc.MaxRetries, Reason: KindRejected, Feedback: obs}))
	t.next = phaseGenerate
	return t
}

// rewriteInstruction asks the model for code without what was rejected.
func rewriteInstruction(rc runConfig, retry, max int) string {
	s := fmt.Sprintf("Rewrite the code so that it does not need what was rejected (retry %d of %d, %d left). ", retry, max, max-retry)
	switch {
	case rc.Format == FormatFenced:
		return s + "Reply with the rewritten code in one fenced code block."
	case rc.Mode == ModeSteps:
		return s + "Call run_code with the rewritten cell."
	}
	return s + "Call run_code with the complete rewritten program."
}

func (r *runner) pendingApproval() *PendingApproval {
	p := r.st.Pending
	return &PendingApproval{Language: p.Language, Code: p.Code, Explanation: p.Decision.Explanation,
		Findings: p.Decision.Causes, Step: r.run.Steps, At: time.Now()}
}

// decided records a decision about the pending code: Approve and Always
// move on to execution; after Reject the caller sends the rejection back
// to the model (sendBack) or ends the run (rejected).
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
