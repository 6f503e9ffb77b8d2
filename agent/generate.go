package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coderun/coderun/llm"
)

// The generate phase: the conversation goes to the model, whose reply is
// code to review (a run_code call, or a fenced block), or a malformed call
// or a reply without code to send back — or, in steps mode after some
// cells, the model's sign that it is done.

func (r *runner) generate(ctx context.Context) (transition, error) {
	if t, spent := r.budgetSpent(); spent {
		return t, nil
	}
	req := llm.Request{Messages: r.st.Messages}
	if r.rc.Format == FormatTool {
		req.Tools = []llm.Tool{runCodeTool(r.rc.Mode)}
	}
	resp, callErr, mc, deadline := r.chat(ctx, "generate", req, r.st.Sent)
	r.st.Sent = len(req.Messages)
	callStep := r.step(StepModelCall, r.st.Attempt+1, modelCallSummary(mc), mc)
	if callErr != nil && !errors.Is(callErr, llm.ErrMalformedToolCall) {
		return r.modelFailed(ctx, callErr, deadline, callStep), nil
	}
	r.st.Messages = append(r.st.Messages, resp.Message())

	if r.rc.Format == FormatTool {
		if callErr != nil {
			return r.malformed(resp, callErr, callStep), nil
		}
		if len(resp.ToolCalls) > 0 {
			first := resp.ToolCalls[0]
			args, err := first.RunCode()
			if err != nil {
				return r.malformed(resp, err, callStep), nil
			}
			r.st.Skipped = nil
			for _, c := range resp.ToolCalls[1:] {
				r.st.Skipped = append(r.st.Skipped, c.ID)
			}
			return r.takeCode(callStep, &pendingCode{Language: args.Language, Code: args.Code,
				CallID: first.ID, Source: "tool_call", Intent: strings.TrimSpace(resp.Text)}), nil
		}
	} else if code, ok := llm.SelectCode(llm.ExtractCode(resp.Text, llm.Python)); ok {
		return r.takeCode(callStep, &pendingCode{Language: code.Language, Code: code.Code,
			Source: "fenced", Intent: proseOf(resp.Text)}), nil
	}

	// A reply without code.
	if r.rc.Mode == ModeSteps && len(r.st.Cells) > 0 {
		return to(phaseInterpret, callStep), nil
	}
	v := verdict{Class: ClassRetryable, Kind: KindNoCode, Message: "the reply held no code to run",
		Why: "the model answered without running code; an answer must rest on computed values"}
	if resp.StopReason == llm.StopMaxTokens {
		v.Kind, v.Message, v.Why = KindTruncatedReply, "the reply was cut at the token limit", "the reply was cut before any complete code"
	}
	// retryOrFail adds the one instruction: what to send.
	return r.retryOrFail(v, []llm.Message{llm.User(noCodeFeedback + ".")}, callStep), nil
}

// chat calls the model with the run's budgets, and builds the record of the
// call, whose messages are those of req after the first prior (which
// earlier calls of the same conversation recorded). deadline reports that
// the run's time budget cut the call.
func (r *runner) chat(ctx context.Context, purpose string, req llm.Request, prior int) (*llm.Response, error, *ModelCall, bool) {
	bctx, cancel := r.budgetCtx(ctx)
	defer cancel()
	cctx, span := r.tr.chat(bctx, r.run.ID, purpose)
	start := time.Now()
	resp, err := r.cfg.Model.Chat(cctx, req)
	elapsed := time.Since(start)
	endChat(span, resp, err)
	mc := &ModelCall{Purpose: purpose, Model: r.run.Model, Prior: prior, Messages: slices.Clone(req.Messages[prior:]),
		LatencyMS: elapsed.Milliseconds()}
	for _, t := range req.Tools {
		mc.Tools = append(mc.Tools, t.Name)
	}
	r.st.Score.ModelCalls++
	r.st.Score.ModelMS += elapsed.Milliseconds()
	if resp != nil {
		mc.ResponseModel, mc.Text, mc.ToolCalls = resp.Model, resp.Text, resp.ToolCalls
		mc.StopReason, mc.Usage, mc.Attempts = string(resp.StopReason), resp.Usage, resp.Attempts
		mc.LatencyMS = max(mc.LatencyMS, resp.Latency.Milliseconds())
		r.st.Score.InputTokens += resp.Usage.InputTokens
		r.st.Score.OutputTokens += resp.Usage.OutputTokens
		if resp.Attempts > 1 {
			r.st.Score.ProviderRetries += resp.Attempts - 1
		}
	}
	var le *llm.Error
	if errors.As(err, &le) && le.Attempts > 1 {
		mc.Attempts = le.Attempts
		r.st.Score.ProviderRetries += le.Attempts - 1
	}
	if err != nil {
		mc.Error = err.Error()
	}
	deadline := err != nil && ctx.Err() == nil && bctx.Err() != nil
	return resp, err, mc, deadline
}

func modelCallSummary(mc *ModelCall) string {
	s := fmt.Sprintf("%s: %d+%d tokens, %s", mc.Purpose, mc.Usage.InputTokens, mc.Usage.OutputTokens,
		(time.Duration(mc.LatencyMS) * time.Millisecond).String())
	if mc.Attempts > 1 {
		s += fmt.Sprintf(", %d HTTP attempts", mc.Attempts)
	}
	if mc.Error != "" {
		s += ": " + oneLine(mc.Error, 120)
	}
	return s
}

// modelFailed ends the run after a model call that failed for good.
func (r *runner) modelFailed(ctx context.Context, err error, deadline bool, callStep pendingStep) transition {
	switch {
	case ctx.Err() != nil:
		return r.cancel(callStep)
	case deadline:
		return r.endBy(endModelTimeBudget, endFacts{budget: r.maxWall().String()}, callStep)
	case r.st.Phase == phaseInterpret:
		return r.interpretFailed(err, callStep)
	}
	return r.endBy(endProviderError, endFacts{v: verdict{Kind: Kind(errorType(err))}, detail: err.Error()}, callStep)
}

// malformed feeds a malformed tool call back to the model.
func (r *runner) malformed(resp *llm.Response, err error, callStep pendingStep) transition {
	bad := map[string]string{}
	var msgs []string
	for _, e := range llm.ToolCallErrors(err) {
		bad[e.ID] = e.Err.Error()
		msgs = append(msgs, e.Err.Error())
	}
	var tce *llm.ToolCallError
	if len(msgs) == 0 && errors.As(err, &tce) {
		bad[tce.ID] = tce.Err.Error()
		msgs = append(msgs, tce.Err.Error())
	}
	if len(msgs) == 0 {
		msgs = append(msgs, err.Error())
	}
	var feedback []llm.Message
	for _, c := range resp.ToolCalls {
		if m, ok := bad[c.ID]; ok {
			feedback = append(feedback, llm.ToolResult(c.ID, "Not run: the call was malformed: "+m+
				". Call run_code again with a JSON object of the form {\"language\": \"python\", \"code\": \"...\"}.", true))
		} else {
			feedback = append(feedback, llm.ToolResult(c.ID, "Not run: another call of this turn was malformed; make one call per turn.", true))
		}
	}
	v := verdict{Class: ClassRetryable, Kind: KindMalformedToolCall, Message: strings.Join(msgs, "; "),
		Why: "the model called run_code with arguments that do not fit it"}
	return r.retryOrFail(v, feedback, callStep)
}

// takeCode makes p the pending code and moves on to its review.
func (r *runner) takeCode(callStep pendingStep, p *pendingCode) transition {
	r.st.Pending = p
	code := &CodeRecord{Language: p.Language, Code: p.Code, Source: p.Source, CallID: p.CallID, Intent: p.Intent}
	return to(phaseReview, callStep, r.step(StepCode, r.st.Attempt+1,
		fmt.Sprintf("%s code, %d lines", p.Language, strings.Count(strings.TrimRight(p.Code, "\n"), "\n")+1), code))
}

// proseOf returns a reply's text outside its code blocks.
func proseOf(text string) string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			in = !in
			continue
		}
		if !in {
			out = append(out, l)
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// interpretFailed is where the failure of the call that writes the answer
// leads: the code worked and its output is recorded, so the run does not
// end; it is left, owned by no process, at the interpretation step, and
// [Agent.Resume] writes the answer from the recorded output. The result
// carries the failure report of this stretch; the run shows as
// interrupted ([RunStanding]: the interpretation failed).
func (r *runner) interpretFailed(err error, callStep pendingStep) transition {
	kind := Kind(errorType(err))
	r.st.Score.AddError(string(ClassInfrastructure), string(kind))
	c := Classification{Class: ClassInfrastructure, Kind: kind, Message: oneLine(err.Error(), 300),
		Why: "the model's API failed while writing the answer; the code's output is kept and the run can be resumed from the interpretation step"}
	summary := endings[endProviderError].summary(endFacts{detail: err.Error()}) +
		" The code ran and its output is kept: coderun runs resume " + r.run.ID + " writes the answer from it."
	r.final.failure = r.report(OutcomeProviderError, summary)
	return transition{pause: true, steps: []pendingStep{callStep,
		r.step(StepClassification, r.st.Attempt, "infrastructure: "+string(kind)+" (the run can be resumed)", &c)}}
}
