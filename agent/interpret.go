package agent

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/coderun/coderun/llm"
)

// The interpret phase: a separate call with the task, the code and its
// real output writes a structured verdict (parseInterpretation): the
// answer, or that the output does not answer the task and why — a
// retryable outcome whose reason goes back to the model that writes the
// code (retry.go), within the retry budget. The numbers the answer quotes are checked
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
	iv := parseInterpretation(resp.Text)
	if !iv.answers {
		// The output does not answer the task: back to the model that
		// writes the code, with the reason, within the retry budget.
		r.st.Unverified = ""
		v := verdict{Class: ClassRetryable, Kind: KindNotAnswered, Message: oneLine(iv.reason, 300),
			Why: "the interpretation found that the output does not answer the task"}
		return r.retryOrFail(v, []llm.Message{llm.User(notAnsweredFeedback(iv.reason))}, callStep), nil
	}
	text := iv.answer
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

// interpretation is the verdict of the interpretation call: whether the
// output answers the task, the answer, or the reason it does not.
type interpretation struct {
	answers bool
	answer  string
	reason  string
}

// notAnswerRE recognises a plain-text reply that says the output does not
// answer the task (the fallback for a model that does not write the JSON
// object it is asked for).
var notAnswerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\W*(?:the\s+)?(?:code(?:'s)?\s+)?output\s+(?:of\s+the\s+code\s+)?(?:does\s+not|doesn't|do\s+not|cannot|can't|fails\s+to)\s+(?:answer|show|contain|include)|^\W*(?:not\s+answered|no\s+answer)\b|^\W*(?:I\s+)?(?:cannot|can't|can\s+not)\s+answer\b`)
})

// parseInterpretation reads the interpretation call's reply: the JSON
// object it is asked for ({"answers": bool, "answer": ..., "reason": ...},
// bare or in a code fence, perhaps with prose around it), or, failing
// that, plain text, which is the answer unless it opens by saying the
// output does not answer the task.
func parseInterpretation(reply string) interpretation {
	text := strings.TrimSpace(reply)
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		var obj struct {
			Answers *bool   `json:"answers"`
			Answer  *string `json:"answer"`
			Reason  string  `json:"reason"`
		}
		if json.Unmarshal([]byte(text[i:j+1]), &obj) == nil && (obj.Answers != nil || obj.Answer != nil) {
			iv := interpretation{answers: obj.Answers == nil || *obj.Answers, reason: strings.TrimSpace(obj.Reason)}
			if obj.Answer != nil {
				iv.answer = strings.TrimSpace(*obj.Answer)
			}
			if !iv.answers && iv.reason == "" {
				iv.reason = iv.answer
			}
			if !iv.answers && iv.reason == "" {
				iv.reason = "the interpretation gave no reason"
			}
			return iv
		}
	}
	if notAnswerRE().MatchString(text) {
		return interpretation{reason: text}
	}
	return interpretation{answers: true, answer: text}
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
