package agent

import (
	"slices"
	"testing"
)

// Every row of the one table of endings names a known outcome, a known
// class (or the verdict's) and one of the agent's kinds (or the verdict's);
// every ending has a row, and every outcome but an answer has an ending.
func TestEndingsUseKnownValues(t *testing.T) {
	all := []ending{endTimeout, endCPULimit, endMemoryLimit, endMemoryError, endOutputLimit,
		endSetupError, endExecutorSetup, endExecutorError, endStopped, endCodeTimeBudget,
		endModelTimeBudget, endTimeBudget, endTokenBudget, endStepBudget, endProviderError,
		endEmptyAnswer, endDenied, endRejectedByMode, endRejected, endStuck, endRetries, endCancelled}
	kinds := []Kind{KindTimeout, KindCPULimit, KindMemoryLimit, KindOutputLimit, KindTimeBudget,
		KindTokenBudget, KindStepBudget, KindExitStatus, KindSignal, KindNoOutput, KindCancelled,
		KindKilled, KindSetupError, KindExecutorError, KindInvalidRequest, KindNoCode,
		KindTruncatedReply, KindMalformedToolCall, KindUngroundedAnswer, KindEmptyAnswer, KindNotAnswered,
		KindPolicyDenied, KindStuck}
	if len(endings) != len(all) {
		t.Errorf("%d endings in the table, %d known", len(endings), len(all))
	}
	reached := map[Outcome]bool{}
	for _, e := range all {
		rule, ok := endings[e]
		if !ok {
			t.Errorf("ending %q has no row", e)
			continue
		}
		reached[rule.outcome] = true
		if !slices.Contains(Outcomes(), rule.outcome) {
			t.Errorf("ending %q: unknown outcome %q", e, rule.outcome)
		}
		if rule.class != "" && !slices.Contains(Classes(), rule.class) {
			t.Errorf("ending %q: unknown class %q", e, rule.class)
		}
		if rule.kind != "" && !slices.Contains(kinds, rule.kind) {
			t.Errorf("ending %q: kind %q is none of the agent's", e, rule.kind)
		}
		if rule.summary == nil {
			t.Errorf("ending %q has no summary", e)
		}
	}
	for _, o := range Outcomes() {
		if o == OutcomeAnswered || o == OutcomeUnverified {
			if reached[o] {
				t.Errorf("outcome %q, an answer, ends a run without one", o)
			}
			continue
		}
		if !reached[o] {
			t.Errorf("outcome %q is the outcome of no ending", o)
		}
	}
	// The outcomes and classes are distinct names.
	for _, list := range [][]string{strs(Outcomes()), strs(Classes())} {
		seen := map[string]bool{}
		for _, s := range list {
			if s == "" || seen[s] {
				t.Errorf("%q is empty or listed twice", s)
			}
			seen[s] = true
		}
	}
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
