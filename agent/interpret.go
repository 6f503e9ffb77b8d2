package agent

import (
	"context"
	"strings"

	"github.com/coderun/coderun/llm"
)

// The interpret phase: a separate call with the task, the code and its
// real output writes the answer. The numbers the answer quotes are checked
// against the output (ground.go): an answer quoting values the output
// does not show is sent back once, then kept as unverified and queued for
// review.

func (r *runner) interpret(ctx context.Context) (transition, error) {
	if t, spent := r.budgetSpent(); spent {
		return t, nil
	}
	msgs := []llm.Message{llm.System(interpretSystem()), llm.User(interpretPrompt(r.st.Task, r.st.Inputs, r.st.Cells))}
	prior := 0
	if r.st.Unverified != "" {
		// The first interpretation call recorded the prompt.
		prior = len(msgs)
		msgs = append(msgs, llm.Assistant(r.st.Unverified), llm.User(groundingFeedback(ground(r.st.Unverified, r.outputs(), r.given()).Unsupported)))
	}
	resp, err, mc, deadline := r.chat(ctx, "interpret", llm.Request{Messages: msgs}, prior)
	callStep := r.step(StepModelCall, 0, modelCallSummary(mc), mc)
	if err != nil {
		return r.modelFailed(ctx, err, deadline, callStep), nil
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		return r.endBy(endEmptyAnswer, endFacts{}, callStep), nil
	}
	g := ground(text, r.outputs(), r.given())
	if len(g.Unsupported) > 0 && r.st.Unverified == "" {
		r.st.Unverified = text
		r.st.Score.Retries++
		v := verdict{Class: ClassRetryable, Kind: KindUngroundedAnswer, Message: "quotes " + strings.Join(g.Unsupported, ", "),
			Why: "the answer quotes values that the output does not show"}
		r.countError(v)
		c := v.record()
		return to(phaseInterpret, callStep,
			r.step(StepClassification, 0, "retryable: answer quotes "+strings.Join(g.Unsupported, ", "), &c),
			r.step(StepRetry, 0, "retry: ungrounded answer", &Retry{Number: 1, Max: 1, Reason: v.Kind,
				Feedback: groundingFeedback(g.Unsupported)})), nil
	}
	return answered(&Answer{Text: text, Grounded: len(g.Unsupported) == 0, Unsupported: g.Unsupported, Quoted: g.Quoted}, callStep), nil
}

// outputs is what grounds an answer's numbers: what the code printed
// (stdout, results) and the names of the files it wrote.
func (r *runner) outputs() []string {
	var ev []string
	for _, c := range r.st.Cells {
		ev = append(ev, c.Stdout, c.Result)
		for _, f := range c.Files {
			ev = append(ev, f.Path)
		}
	}
	return ev
}

// given is what an answer may restate beside a computed result: the task
// and the input descriptions (ground.go).
func (r *runner) given() []string {
	ev := []string{r.st.Task}
	for _, in := range r.st.Inputs {
		ev = append(ev, in.Summary)
	}
	return ev
}
