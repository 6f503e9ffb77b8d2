package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/coderun/coderun/policy"
)

// The review phase: the pre-flight policy reviews the pending code on the
// trusted side. It allows (on to execution), asks a person (on to
// approval), or denies (the run ends). Code the policy cannot analyse is
// decided on as the policy's "unavailable" rule says.

func (r *runner) review(ctx context.Context) (transition, error) {
	p := r.st.Pending
	var d policy.Decision
	var err error
	switch p.Language {
	case policy.Python, policy.Shell:
		d, err = r.cfg.Reviewer.Review(ctx, p.Language, p.Code)
	default:
		err = fmt.Errorf("the policy cannot analyse %s code", p.Language)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(), nil
		}
		first, _, _ := strings.Cut(strings.TrimSpace(p.Code), "\n")
		pol := r.cfg.Reviewer.Policy
		if pol == nil {
			pol = policy.DefaultPolicy()
		}
		d = pol.Decide([]policy.Finding{{Rule: policy.RuleUnavailable, Severity: policy.Medium, Line: 1,
			Snippet: oneLine(first, 80), Message: err.Error()}})
	}
	p.Decision = &d
	rv := r.step(StepReview, r.st.Attempt+1, "policy: "+string(d.Action)+reviewCauses(d), &Review{Decision: d})
	switch d.Action {
	case policy.Deny:
		v := verdict{Class: ClassFatal, Kind: KindPolicyDenied, Message: d.Explanation,
			Why: "the policy denied the code; a retry could only reproduce the risk"}
		r.countError(v)
		c := v.record()
		return r.endBy(endDenied, endFacts{v: v, detail: d.Explanation}, rv,
			r.step(StepClassification, r.st.Attempt+1, "fatal: denied by policy", &c)), nil
	case policy.Ask:
		return to(phaseApprove, rv), nil
	}
	return to(phaseExecute, rv), nil
}

func reviewCauses(d policy.Decision) string {
	if len(d.Causes) == 0 {
		return ""
	}
	rules := causeRules(d)
	return " (" + strings.Join(rules, ", ") + ")"
}

func causeRules(d policy.Decision) []string {
	var rules []string
	for _, f := range d.Causes {
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
	}
	return rules
}
