package agent

import (
	"fmt"
	"strings"

	"github.com/coderun/coderun/llm"
)

// DefaultTimeoutRetries is how many times the model may rewrite code that
// ran past its wall-time limit, told the limit, before a timeout ends the
// run.
const DefaultTimeoutRetries = 1

// retryOrFail is where a retryable error leads, after steps: the run is
// stuck if the error repeats the last one, its retries are exhausted if
// the budget is spent, else it goes back to the model with feedback.
func (r *runner) retryOrFail(v verdict, feedback []llm.Message, steps ...pendingStep) transition {
	if v.Kind == KindTimeout {
		// A timeout is retried TimeoutRetries times (whatever the
		// errors before it; two in a row are not "stuck"), then ends the
		// run as a timeout.
		n := r.st.Score.ErrorKinds[string(KindTimeout)]
		if n >= r.rc.TimeoutRetries {
			v.Class = ClassFatal
			return r.endBy(endTimeout, endFacts{v: v, used: fmt.Sprint(n + 1), budget: fmt.Sprint(r.rc.TimeoutRetries)}, steps...)
		}
		r.st.LastSig = ""
	}
	r.countError(v)
	sig := v.signature()
	if sig == r.st.LastSig {
		c := v.record()
		c.Class, c.Kind = ClassFatal, KindStuck
		c.Message = v.errorLine()
		c.Why = "the same error occurred twice in a row: the model is not making progress, and a retry would repeat it"
		steps = append(steps, r.step(StepClassification, r.st.Attempt, "fatal: stuck on "+oneLine(v.errorLine(), 100), &c))
		return r.endBy(endStuck, endFacts{v: v}, steps...)
	}
	r.st.LastSig = sig
	c := v.record()
	steps = append(steps, r.step(StepClassification, r.st.Attempt, fmt.Sprintf("%s: %s", v.Class, oneLine(v.errorLine(), 120)), &c))
	if r.st.Retries >= r.rc.MaxRetries {
		return r.endBy(endRetries, endFacts{v: v, budget: fmt.Sprint(r.rc.MaxRetries)}, steps...)
	}
	r.st.Retries++
	r.st.Score.Retries++
	instr := retryInstruction(r.rc, v.Kind, r.st.Retries, r.rc.MaxRetries)
	if v.Kind == KindTimeout {
		instr = timeoutInstruction(r.rc.Limits.WallTime) + " " + instr
	}
	// The instruction goes into the last feedback message.
	if n := len(feedback); n > 0 {
		feedback[n-1].Content += "\n\n" + instr
	}
	r.st.Messages = append(r.st.Messages, feedback...)
	r.st.Pending = nil
	var text []string
	for _, m := range feedback {
		text = append(text, m.Content)
	}
	steps = append(steps, r.step(StepRetry, r.st.Attempt, fmt.Sprintf("retry %d of %d: %s", r.st.Retries, r.rc.MaxRetries, v.Kind),
		&Retry{Number: r.st.Retries, Max: r.rc.MaxRetries, Reason: v.Kind, Feedback: strings.Join(text, "\n---\n")}))
	return to(phaseGenerate, steps...)
}

// countError counts a retryable or fatal error of the code in the
// scorecard and for the failure report.
func (r *runner) countError(v verdict) {
	r.st.Score.AddError(string(v.Class), string(v.Kind))
	if r.st.ErrorCounts == nil {
		r.st.ErrorCounts = map[string]int{}
	}
	line := oneLine(v.errorLine(), 300)
	r.st.ErrorCounts[line]++
	r.st.LastError = line
}
