package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/store"
)

// The end of a run: budgets that end it, and finish, which the driver
// calls for a transition that ends the run — with an answer, or with an
// honest failure report that goes to the review queue.

// end is how a run ends: with an answer, or without one, by one of the
// [endings].
type end struct {
	answer *Answer
	how    ending
	facts  endFacts
}

// endBy is a transition that ends the run without an answer, by e, after
// steps.
func (r *runner) endBy(e ending, f endFacts, steps ...pendingStep) transition {
	f.limits = r.rc.Limits
	return transition{steps: steps, end: &end{how: e, facts: f}}
}

// answered is a transition that ends the run with ans, after steps.
func answered(ans *Answer, steps ...pendingStep) transition {
	return transition{steps: steps, end: &end{answer: ans}}
}

// cancel ends the run as cancelled, after steps.
func (r *runner) cancel(steps ...pendingStep) transition {
	return r.endBy(endCancelled, endFacts{}, steps...)
}

type finalResult struct {
	answer  *Answer
	failure *FailureReport
}

// finish completes a transition that ends the run: the outcome, the
// steps that say how it ended (classification, answer or failure report),
// the run's new status, and its item in the review queue.
func (r *runner) finish(t transition) (transition, error) {
	e := t.end
	u := &t.update
	u.Release, u.ClearPending = true, true
	if e.answer != nil {
		outcome := OutcomeAnswered
		u.Status, u.Answer = store.StatusSucceeded, e.answer.Text
		if !e.answer.Grounded {
			outcome = OutcomeUnverified
			u.Review = &store.NewReview{Kind: store.ReviewUnverified,
				Reason: "the answer quotes " + strings.Join(e.answer.Unsupported, ", ") + ", which the output does not show"}
		}
		u.Outcome = string(outcome)
		r.st.Score.Outcome = string(outcome)
		r.st.Phase = phaseDone
		r.final.answer = e.answer
		t.steps = append(t.steps, r.step(StepAnswer, 0, "answer: "+oneLine(e.answer.Text, 100), e.answer))
		return t, nil
	}
	rule, ok := endings[e.how]
	if !ok {
		return t, fmt.Errorf("agent: run %s: unknown ending %q", r.run.ID, e.how)
	}
	e.facts.errors = r.errorTally()
	summary := rule.summary(e.facts)
	if !rule.own {
		class, kind := rule.class, rule.kind
		if class == "" {
			class = e.facts.v.Class
		}
		if kind == "" {
			kind = e.facts.v.Kind
		}
		r.st.Score.AddError(string(class), string(kind))
		c := Classification{Class: class, Kind: kind, Why: summary}
		t.steps = append(t.steps, r.step(StepClassification, r.st.Attempt, string(class)+": "+string(kind), &c))
	}
	outcome := rule.outcome
	rep := r.report(outcome, summary)
	if e.how != endRetries && e.how != endStuck {
		// What ended the run is this ending's own cause (a budget, a
		// limit, the policy, the model's API), not an error of the code
		// that an earlier retry may have fixed.
		rep.Error, rep.Occurrences = endCause(e.how, rule, e.facts), 0
		if e.facts.v.Kind == "" && r.st.LastSig != "" && r.st.LastError != "" {
			// The last attempt's error was not fixed when the run ended.
			rep.Error += "; the last attempt failed with " + r.st.LastError
		}
	}
	r.st.Score.Outcome = string(outcome)
	r.st.Phase = phaseDone
	r.final.failure = rep
	repJSON, err := json.Marshal(rep)
	if err != nil {
		return t, fmt.Errorf("agent: failure report: %w", err)
	}
	u.Outcome, u.Failure = string(outcome), repJSON
	u.Status = store.StatusFailed
	if outcome == OutcomeCancelled {
		u.Status = store.StatusCancelled
	} else {
		u.Review = &store.NewReview{Kind: store.ReviewFailure, Reason: string(outcome) + ": " + oneLine(summary, 300)}
	}
	if r.run.Status == store.StatusAwaitingApproval && u.CloseReviews == nil {
		u.CloseReviews = &store.CloseReviews{Kind: store.ReviewApproval, Resolution: string(outcome)}
	}
	t.steps = append(t.steps, r.step(StepFailure, r.st.Attempt, "no answer: "+string(outcome), rep))
	return t, nil
}

// ---- budgets ----

func (r *runner) maxWall() time.Duration { return time.Duration(r.rc.MaxWallMS) * time.Millisecond }

// budgetCtx bounds ctx by the time left in the run's budget.
func (r *runner) budgetCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.rc.MaxWallMS <= 0 {
		return context.WithCancel(ctx)
	}
	left := r.maxWall() - time.Duration(r.st.ActiveMS)*time.Millisecond - time.Since(r.segment)
	return context.WithTimeout(ctx, max(left, time.Millisecond))
}

// budgetSpent ends the run when its token or time budget is spent: before
// a model call (tokens are spent there).
func (r *runner) budgetSpent() (transition, bool) {
	if r.rc.MaxTokens > 0 && r.st.Score.Tokens() >= r.rc.MaxTokens {
		return r.endBy(endTokenBudget, endFacts{used: fmt.Sprint(r.st.Score.Tokens()), budget: fmt.Sprint(r.rc.MaxTokens)}), true
	}
	return r.timeSpent()
}

// timeSpent ends the run when its time budget is spent.
func (r *runner) timeSpent() (transition, bool) {
	if r.rc.MaxWallMS > 0 && time.Duration(r.st.ActiveMS)*time.Millisecond+time.Since(r.segment) >= r.maxWall() {
		return r.endBy(endTimeBudget, endFacts{budget: r.maxWall().String()}), true
	}
	return transition{}, false
}

// ---- the failure report ----

// report writes the honest failure report from the checkpoint: what the
// code was trying to do, the error that kept occurring and the partial
// output of the last attempt.
func (r *runner) report(outcome Outcome, summary string) *FailureReport {
	rep := &FailureReport{Outcome: outcome, Summary: summary, Attempts: r.st.Score.Attempts}
	var code, intent string
	var lang language.Language
	if last := r.st.Last; last != nil {
		code, lang, intent = last.Code, last.Language, last.Intent
		out := strings.TrimRight(tail(last.Stdout, 20, 2000), "\n")
		if e := tail(last.Stderr, 6, 800); e != "" {
			if out != "" {
				out += "\n"
			}
			out += "[stderr]\n" + e
		}
		rep.PartialOutput = out
	}
	if p := r.st.Pending; p != nil {
		code, lang, intent = p.Code, p.Language, p.Intent
	}
	rep.Language, rep.LastCode = lang, code
	rep.Intent = intentOf(intent, lang, code, r.st.Task)
	// The error that occurred most often; of equals, the last one.
	best, n := "", 0
	for e, c := range r.st.ErrorCounts {
		if c > n || c == n && e == r.st.LastError {
			best, n = e, c
		}
	}
	rep.Error, rep.Occurrences = best, n
	return rep
}

// errorTally says how many errors of the code the run met and how many of
// them differ: "4 errors, all different", "3 errors, 2 different".
func (r *runner) errorTally() string {
	total := 0
	for _, c := range r.st.ErrorCounts {
		total += c
	}
	switch d := len(r.st.ErrorCounts); {
	case total == 0:
		return ""
	case total == 1:
		return "1 error"
	case d == total:
		return fmt.Sprintf("%d errors, all different", total)
	case d == 1:
		return fmt.Sprintf("%d errors, all the same", total)
	default:
		return fmt.Sprintf("%d errors, %d different", total, d)
	}
}

// endCause names what ended a run that did not end on a repeated error of
// the code: the verdict at hand ("timeout: …"), or the ending's kind and
// the budget it spent ("token_budget: 240 tokens used, budget 200").
func endCause(how ending, rule endRule, f endFacts) string {
	if f.v.Kind != "" {
		return oneLine(f.v.errorLine(), 300)
	}
	kind := string(rule.kind)
	if kind == "" {
		kind = string(rule.outcome)
	}
	switch {
	case f.used != "" && f.budget != "":
		return fmt.Sprintf("%s: %s used, budget %s", kind, f.used, f.budget)
	case f.budget != "":
		return fmt.Sprintf("%s: budget %s", kind, f.budget)
	case f.detail != "" && how == endProviderError:
		return kind + ": " + oneLine(f.detail, 300)
	}
	return kind
}

// intentOf says what the code was trying to do: the model's own words, or
// the code's leading comment, or the task.
func intentOf(said string, lang language.Language, code, task string) string {
	if s := strings.TrimSpace(said); s != "" {
		return oneLine(s, 400)
	}
	var comments []string
	for _, l := range strings.Split(code, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#!") {
			continue
		}
		if c, ok := strings.CutPrefix(t, "#"); ok && lang != llm.Node {
			comments = append(comments, strings.TrimSpace(c))
			continue
		}
		if c, ok := strings.CutPrefix(t, "//"); ok && lang == llm.Node {
			comments = append(comments, strings.TrimSpace(c))
			continue
		}
		if t == "" && len(comments) == 0 {
			continue
		}
		break
	}
	if len(comments) > 0 {
		return oneLine(strings.Join(comments, " "), 400)
	}
	if code == "" {
		return ""
	}
	return "(the model gave no explanation) code written for the task: " + oneLine(task, 300)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
