package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// The loop is a state machine whose state is checkpointed with every
// stored step, so that any process can pick it up where it stopped.

type phase string

const (
	phaseGenerate  phase = "generate"  // ask the model for code
	phaseReview    phase = "review"    // pre-flight policy review of the pending code
	phaseApprove   phase = "approve"   // the policy asked: wait for a decision
	phaseExecute   phase = "execute"   // run the pending code
	phaseInterpret phase = "interpret" // write the answer from the output
	phaseDone      phase = "done"
)

// state is the agent's checkpoint.
type state struct {
	Phase  phase             `json:"phase"`
	Task   string            `json:"task"`
	Inputs []store.InputFile `json:"inputs,omitempty"`
	// Messages is the generation conversation so far. It is not part of
	// the checkpoint: each message is stored once, in the step of the
	// model call that first sent it (ModelCall.Messages), and only the
	// messages no call has sent yet (Unsent) are checkpointed; a resumed
	// run puts the conversation together again (conversation).
	Messages []llm.Message `json:"-"`
	// Sent counts the messages of Messages that model-call steps hold;
	// Unsent, written at each checkpoint, the rest.
	Sent   int           `json:"sent"`
	Unsent []llm.Message `json:"unsent,omitempty"`
	// LegacyMessages is the whole conversation as checkpoints held it
	// before it was stored once: read from old runs, never written.
	LegacyMessages []llm.Message `json:"messages,omitempty"`
	// Pending is the code between generation and execution.
	Pending *pendingCode `json:"pending,omitempty"`
	// Skipped are ids of further tool calls of the last turn, answered
	// "not run" after the pending call's result.
	Skipped []string `json:"skipped,omitempty"`
	// Always are policy rules a person approved for the rest of the run.
	Always []string `json:"always,omitempty"`
	// Attempt counts executions started.
	Attempt int `json:"attempt"`
	// Retries counts returns to the model with feedback on the code.
	Retries int `json:"retries"`
	// LastSig is the signature of the last error, "" after a success.
	LastSig string `json:"last_sig,omitempty"`
	// Cells are the successful executions, the evidence of the answer.
	Cells []cell `json:"cells,omitempty"`
	// Last is the last execution, for the failure report.
	Last *cell `json:"last,omitempty"`
	// ErrorCounts counts error lines, for "the error that kept occurring".
	ErrorCounts map[string]int `json:"error_counts,omitempty"`
	LastError   string         `json:"last_error,omitempty"`
	// Unverified is the answer that failed the grounding check, sent back
	// once.
	Unverified string          `json:"unverified,omitempty"`
	Score      store.Scorecard `json:"score"`
	ActiveMS   int64           `json:"active_ms"`
}

type pendingCode struct {
	Language string           `json:"language"`
	Code     string           `json:"code"`
	CallID   string           `json:"call_id,omitempty"`
	Source   string           `json:"source"`
	Intent   string           `json:"intent,omitempty"`
	Decision *policy.Decision `json:"decision,omitempty"`
	Approved bool             `json:"approved,omitempty"`
}

type cell struct {
	Attempt  int        `json:"attempt"`
	Language string     `json:"language"`
	Code     string     `json:"code"`
	Intent   string     `json:"intent,omitempty"`
	Stdout   string     `json:"stdout,omitempty"`
	Stderr   string     `json:"stderr,omitempty"`
	Result   string     `json:"result,omitempty"` // execute_result text
	Files    []FileMeta `json:"files,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func newState(rc runConfig, task string, inputs []store.InputFile) *state {
	return &state{
		Phase:  phaseGenerate,
		Task:   task,
		Inputs: inputs,
		Messages: []llm.Message{
			llm.System(systemPrompt(rc)),
			llm.User(taskPrompt(task, inputs)),
		},
	}
}

// conversation puts a resumed run's generation conversation together
// again: from the messages its generation calls recorded (each call holds
// those it sent first, after the Prior earlier ones), then the messages
// no call has sent yet. A checkpoint written before the conversation was
// stored once holds the whole conversation itself.
func (st *state) conversation(calls []store.Step) error {
	var conv []llm.Message
	for _, s := range calls {
		var mc ModelCall
		if err := s.Decode(&mc); err != nil {
			return err
		}
		if mc.Purpose != "generate" {
			continue
		}
		if mc.Prior > len(conv) {
			return fmt.Errorf("model call %d follows %d messages, but %d were recorded before it", s.Seq, mc.Prior, len(conv))
		}
		conv = append(conv[:mc.Prior], mc.Messages...)
	}
	if st.LegacyMessages != nil {
		// Calls recorded the conversation whole, then: the last one's
		// messages were sent, the rest of the checkpoint's were not.
		if len(conv) > len(st.LegacyMessages) {
			return fmt.Errorf("the model calls recorded %d messages, the checkpoint holds %d", len(conv), len(st.LegacyMessages))
		}
		st.Messages, st.Sent, st.LegacyMessages = st.LegacyMessages, len(conv), nil
		return nil
	}
	if len(conv) != st.Sent {
		return fmt.Errorf("the model calls recorded %d messages, the checkpoint counts %d", len(conv), st.Sent)
	}
	st.Messages = append(conv, st.Unsent...)
	st.Unsent = nil
	return nil
}

// errPaused stops the loop: the run waits for a decision.
var errPaused = errors.New("paused for approval")

type runner struct {
	cfg     Config
	store   Store
	run     *store.Run
	rc      runConfig
	st      *state
	owner   store.Owner
	tr      tracer
	exec    Executor
	resumed bool
	segment time.Time // start of the active stretch not yet added to ActiveMS
	final   finalResult
}

func (a *Agent) newRunner(run *store.Run, rc runConfig, st *state, owner store.Owner) *runner {
	return &runner{cfg: a.cfg, store: a.cfg.Store, run: run, rc: rc, st: st, owner: owner,
		tr: newTracer(a.cfg.Tracer, run.Model), segment: time.Now()}
}

// pendingStep is a step about to be recorded, with its payload.
type pendingStep struct {
	s       store.Step
	payload any
	err     error
}

func (r *runner) step(kind store.StepKind, attempt int, summary string, payload any) pendingStep {
	s, err := store.NewStep(kind, attempt, summary, payload)
	return pendingStep{s: s, payload: payload, err: err}
}

func (r *runner) record(ctx context.Context, steps ...pendingStep) error {
	return r.commit(ctx, store.Update{}, steps...)
}

// commit stores steps together with the checkpoint and the scorecard, and
// tells the observer. It runs even when ctx is done: a cancelled run still
// records how it ended.
func (r *runner) commit(ctx context.Context, u store.Update, steps ...pendingStep) error {
	now := time.Now()
	r.st.ActiveMS += now.Sub(r.segment).Milliseconds()
	r.segment = now
	r.st.Score.WallMS = r.st.ActiveMS
	for _, s := range steps {
		if s.err != nil {
			return fmt.Errorf("agent: %w", s.err)
		}
		u.Steps = append(u.Steps, s.s)
	}
	if r.st.Sent > len(r.st.Messages) {
		return fmt.Errorf("agent: checkpoint: %d messages sent of a conversation of %d", r.st.Sent, len(r.st.Messages))
	}
	r.st.Unsent = r.st.Messages[r.st.Sent:]
	state, err := json.Marshal(r.st)
	if err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	u.State = state
	r.st.Unsent = nil
	score := r.st.Score
	u.Scorecard = &score
	stored, err := r.store.Record(context.WithoutCancel(ctx), r.run.ID, r.owner, u)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if n := len(stored); n > 0 {
		r.run.Steps = stored[n-1].Seq
	}
	if u.Status != "" {
		r.run.Status = u.Status
	}
	if u.Release {
		r.run.Owner = ""
	}
	if r.cfg.Observer != nil {
		for i, s := range stored {
			r.cfg.Observer(Event{RunID: r.run.ID, Step: s, Payload: steps[i].payload})
		}
	}
	return nil
}

// drive runs the state machine until the run ends or pauses.
func (r *runner) drive(ctx context.Context, span trace.Span) (*Result, error) {
	// The lease stays this process's while it drives the run, however long
	// a model call, an execution or a person takes.
	defer store.KeepAlive(ctx, r.store, r.run.ID, r.owner, r.run.LeaseUntil)()
	defer func() {
		if r.exec != nil {
			r.exec.Close()
		}
	}()
	for r.st.Phase != phaseDone {
		var err error
		if ctx.Err() != nil {
			err = r.cancel(ctx)
		} else {
			switch r.st.Phase {
			case phaseGenerate:
				err = r.generate(ctx)
			case phaseReview:
				err = r.review(ctx)
			case phaseApprove:
				err = r.approve(ctx)
			case phaseExecute:
				err = r.execute(ctx)
			case phaseInterpret:
				err = r.interpret(ctx)
			default:
				err = fmt.Errorf("agent: run %s: unknown phase %q", r.run.ID, r.st.Phase)
			}
		}
		if errors.Is(err, errPaused) {
			span.SetAttributes(attribute.String("coderun.status", string(store.StatusAwaitingApproval)))
			return r.result(), nil
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
	}
	res := r.result()
	span.SetAttributes(attribute.String("coderun.status", string(res.Status)),
		attribute.String("coderun.outcome", res.Outcome),
		attribute.Int("coderun.attempts", res.Scorecard.Attempts),
		attribute.Int("coderun.retries", res.Scorecard.Retries))
	if res.Status == store.StatusFailed {
		span.SetAttributes(attribute.String("error.type", res.Outcome))
		span.SetStatus(codes.Error, res.Outcome)
	}
	return res, nil
}

func (r *runner) result() *Result {
	res := &Result{RunID: r.run.ID, Status: r.run.Status, Outcome: r.st.Score.Outcome, Scorecard: r.st.Score}
	if r.run.Status == store.StatusAwaitingApproval && r.st.Pending != nil && r.st.Pending.Decision != nil {
		res.Pending = r.pendingApproval()
	}
	if r.final.answer != nil {
		res.Answer = r.final.answer
	}
	res.Failure = r.final.failure
	return res
}

// ---- generation ----

func (r *runner) generate(ctx context.Context) error {
	if done, err := r.checkBudgets(ctx); done || err != nil {
		return err
	}
	req := llm.Request{Messages: r.st.Messages}
	if r.rc.Format == FormatTool {
		req.Tools = []llm.Tool{llm.RunCodeTool()}
	}
	resp, callErr, mc, deadline := r.chat(ctx, "generate", req, r.st.Sent)
	r.st.Sent = len(req.Messages)
	callStep := r.step(StepModelCall, r.st.Attempt+1, modelCallSummary(mc), mc)
	if callErr != nil && !errors.Is(callErr, llm.ErrMalformedToolCall) {
		return r.modelFailed(ctx, callErr, deadline, callStep)
	}
	r.st.Messages = append(r.st.Messages, resp.Message())

	if r.rc.Format == FormatTool {
		if callErr != nil {
			return r.malformed(ctx, resp, callErr, callStep)
		}
		if len(resp.ToolCalls) > 0 {
			first := resp.ToolCalls[0]
			args, err := first.RunCode()
			if err != nil {
				return r.malformed(ctx, resp, err, callStep)
			}
			r.st.Skipped = nil
			for _, c := range resp.ToolCalls[1:] {
				r.st.Skipped = append(r.st.Skipped, c.ID)
			}
			return r.takeCode(ctx, callStep, &pendingCode{Language: args.Language, Code: args.Code,
				CallID: first.ID, Source: "tool_call", Intent: strings.TrimSpace(resp.Text)})
		}
	} else if code, ok := llm.SelectCode(llm.ExtractCode(resp.Text, llm.Python)); ok {
		return r.takeCode(ctx, callStep, &pendingCode{Language: code.Language, Code: code.Code,
			Source: "fenced", Intent: proseOf(resp.Text)})
	}

	// A reply without code.
	if r.rc.Mode == ModeSteps && len(r.st.Cells) > 0 {
		r.st.Phase = phaseInterpret
		return r.record(ctx, callStep)
	}
	v := verdict{Class: ClassRetryable, Kind: "no_code", Message: "the reply held no code to run",
		Why: "the model answered without running code; an answer must rest on computed values"}
	if resp.StopReason == llm.StopMaxTokens {
		v.Kind, v.Message, v.Why = "truncated_reply", "the reply was cut at the token limit", "the reply was cut before any complete code"
	}
	instr := "Call run_code with a complete program."
	if r.rc.Format == FormatFenced {
		instr = "Reply with the program in one fenced code block."
	}
	feedback := llm.User(noCodeFeedback + ". " + instr)
	return r.retryOrFail(ctx, v, []pendingStep{callStep}, []llm.Message{feedback})
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
func (r *runner) modelFailed(ctx context.Context, err error, deadline bool, callStep pendingStep) error {
	switch {
	case ctx.Err() != nil:
		return r.cancel(ctx, callStep)
	case deadline:
		return r.failWith(ctx, OutcomeTimeBudget, ClassFatal, "time_budget",
			fmt.Sprintf("The run used up its time budget of %s while waiting for the model.", r.maxWall()), callStep)
	}
	kind := errorType(err)
	return r.failWith(ctx, OutcomeProviderError, ClassInfrastructure, kind,
		"The model's API failed and its retries were used up: "+err.Error(), callStep)
}

// malformed feeds a malformed tool call back to the model.
func (r *runner) malformed(ctx context.Context, resp *llm.Response, err error, callStep pendingStep) error {
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
	v := verdict{Class: ClassRetryable, Kind: "malformed_tool_call", Message: strings.Join(msgs, "; "),
		Why: "the model called run_code with arguments that do not fit it"}
	return r.retryOrFail(ctx, v, []pendingStep{callStep}, feedback)
}

func (r *runner) takeCode(ctx context.Context, callStep pendingStep, p *pendingCode) error {
	r.st.Pending = p
	r.st.Phase = phaseReview
	code := &CodeRecord{Language: p.Language, Code: p.Code, Source: p.Source, CallID: p.CallID, Intent: p.Intent}
	return r.record(ctx, callStep, r.step(StepCode, r.st.Attempt+1,
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

// ---- retries ----

// retryOrFail handles a retryable error: stuck if it repeats the last one,
// retries exhausted if the budget is spent, else back to the model with
// feedback.
func (r *runner) retryOrFail(ctx context.Context, v verdict, steps []pendingStep, feedback []llm.Message) error {
	r.countError(v)
	sig := v.signature()
	if sig == r.st.LastSig {
		c := v.record()
		c.Class, c.Kind = string(ClassFatal), "stuck"
		c.Message = v.errorLine()
		c.Why = "the same error occurred twice in a row: the model is not making progress, and a retry would repeat it"
		steps = append(steps, r.step(StepClassification, r.st.Attempt, "fatal: stuck on "+oneLine(v.errorLine(), 100), &c))
		return r.fail(ctx, OutcomeStuck, fmt.Sprintf("The run was stopped because the same error occurred twice in a row (%s): "+
			"the model was not making progress.", oneLine(v.errorLine(), 200)), steps...)
	}
	r.st.LastSig = sig
	c := v.record()
	steps = append(steps, r.step(StepClassification, r.st.Attempt, fmt.Sprintf("%s: %s", v.Class, oneLine(v.errorLine(), 120)), &c))
	if r.st.Retries >= r.rc.MaxRetries {
		return r.fail(ctx, OutcomeRetriesExhausted, fmt.Sprintf("Every attempt failed and the %d retries allowed were used up; the last error was %s.",
			r.rc.MaxRetries, oneLine(v.errorLine(), 200)), steps...)
	}
	r.st.Retries++
	r.st.Score.Retries++
	instr := retryInstruction(r.rc, r.st.Retries, r.rc.MaxRetries)
	// The instruction goes into the last feedback message.
	if n := len(feedback); n > 0 {
		feedback[n-1].Content += "\n\n" + instr
	}
	r.st.Messages = append(r.st.Messages, feedback...)
	r.st.Pending = nil
	r.st.Phase = phaseGenerate
	var text []string
	for _, m := range feedback {
		text = append(text, m.Content)
	}
	steps = append(steps, r.step(StepRetry, r.st.Attempt, fmt.Sprintf("retry %d of %d: %s", r.st.Retries, r.rc.MaxRetries, v.Kind),
		&Retry{Number: r.st.Retries, Max: r.rc.MaxRetries, Reason: v.Kind, Feedback: strings.Join(text, "\n---\n")}))
	return r.record(ctx, steps...)
}

func (r *runner) countError(v verdict) {
	r.st.Score.AddError(string(v.Class), v.Kind)
	if r.st.ErrorCounts == nil {
		r.st.ErrorCounts = map[string]int{}
	}
	line := oneLine(v.errorLine(), 300)
	r.st.ErrorCounts[line]++
	r.st.LastError = line
}

// ---- review and approval ----

func (r *runner) review(ctx context.Context) error {
	p := r.st.Pending
	var d policy.Decision
	var err error
	switch p.Language {
	case llm.Python:
		d, err = r.cfg.Reviewer.Review(ctx, policy.Python, p.Code)
	case llm.Bash:
		d, err = r.cfg.Reviewer.Review(ctx, policy.Shell, p.Code)
	default:
		err = fmt.Errorf("the policy cannot analyse %s code", p.Language)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(ctx)
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
		v := verdict{Class: ClassFatal, Kind: "policy_denied", Message: d.Explanation,
			Why: "the policy denied the code; a retry could only reproduce the risk"}
		r.countError(v)
		c := v.record()
		return r.fail(ctx, OutcomeDenied, d.Explanation, rv,
			r.step(StepClassification, r.st.Attempt+1, "fatal: denied by policy", &c))
	case policy.Ask:
		r.st.Phase = phaseApprove
	default:
		r.st.Phase = phaseExecute
	}
	return r.record(ctx, rv)
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

func (r *runner) pendingApproval() *PendingApproval {
	p := r.st.Pending
	return &PendingApproval{Language: p.Language, Code: p.Code, Explanation: p.Decision.Explanation,
		Findings: p.Decision.Causes, Step: r.run.Steps, At: time.Now()}
}

func (r *runner) approve(ctx context.Context) error {
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
		return r.applyVerdict(ctx, Approve, "always (approved earlier in this run)", "")
	case r.cfg.Approval == ApproveAll:
		return r.applyVerdict(ctx, Approve, "flag (--approve all)", "")
	case r.cfg.Approval == ApproveNone:
		if err := r.applyVerdict(ctx, Reject, "non-interactive default (--approve none)", ""); err != nil {
			return err
		}
		return r.fail(ctx, OutcomeRejected, "The code needs a person's approval and none was given: non-interactive runs reject "+
			"such code unless it is approved by flag (--approve all) or allowed by the policy. "+p.Decision.Explanation)
	}
	if r.run.Status != store.StatusAwaitingApproval {
		pa, err := json.Marshal(r.pendingApproval())
		if err != nil {
			return fmt.Errorf("agent: pending approval: %w", err)
		}
		err = r.commit(ctx, store.Update{Status: store.StatusAwaitingApproval, Pending: pa,
			Review: &store.NewReview{Kind: store.ReviewApproval, Reason: p.Decision.Explanation}},
			r.step(StepApproval, r.st.Attempt+1, "awaiting approval"+reviewCauses(*p.Decision),
				&Approval{Decision: "pending", By: "policy", Rules: rules}))
		if err != nil {
			return err
		}
	}
	if r.cfg.Approver == nil {
		return r.pause(ctx)
	}
	v, err := r.cfg.Approver.Approve(ctx, ApprovalRequest{RunID: r.run.ID, Language: p.Language, Code: p.Code, Decision: *p.Decision})
	if err != nil {
		if ctx.Err() != nil {
			return r.cancel(ctx)
		}
		return r.pause(ctx)
	}
	if v == Defer {
		return r.pause(ctx)
	}
	if err := r.applyVerdict(ctx, v, "terminal", ""); err != nil {
		return err
	}
	if v == Reject {
		return r.fail(ctx, OutcomeRejected, "The code was rejected at the terminal; it did not run. "+p.Decision.Explanation)
	}
	return nil
}

// pause leaves the run awaiting approval, owned by no process.
func (r *runner) pause(ctx context.Context) error {
	if err := r.commit(ctx, store.Update{Release: true}); err != nil {
		return err
	}
	return errPaused
}

// applyVerdict records a decision about the pending code. Approve and
// Always move on to execution; Reject leaves the ending to the caller.
func (r *runner) applyVerdict(ctx context.Context, v Verdict, by, note string) error {
	p := r.st.Pending
	rules := causeRules(*p.Decision)
	a := &Approval{By: by, Rules: rules, Note: note}
	resolution := "approved"
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
		r.st.Phase = phaseExecute
	default:
		a.Decision = "rejected"
		resolution = "rejected"
		r.st.Score.Rejections++
	}
	u := store.Update{ClearPending: true}
	if r.run.Status == store.StatusAwaitingApproval {
		u.Status = store.StatusRunning
		u.CloseReviews = &store.CloseReviews{Kind: store.ReviewApproval, Resolution: resolution, Note: note}
	}
	return r.commit(ctx, u, r.step(StepApproval, r.st.Attempt+1, a.Decision+" by "+by, a))
}

// ---- execution ----

func (r *runner) execute(ctx context.Context) error {
	if done, err := r.checkTime(ctx); done || err != nil {
		return err
	}
	if r.rc.Mode == ModeSteps && r.st.Attempt >= r.rc.MaxSteps {
		return r.failWith(ctx, OutcomeStepBudget, ClassFatal, "step_budget",
			fmt.Sprintf("The step budget of %d cells was used up before the task was done.", r.rc.MaxSteps))
	}
	if err := r.ensureExecutor(ctx); err != nil {
		if ctx.Err() != nil {
			return r.cancel(ctx)
		}
		return r.failWith(ctx, OutcomeSetupError, ClassInfrastructure, "setup_error",
			"The sandbox for the code could not be set up: "+err.Error())
	}
	p := r.st.Pending
	r.st.Attempt++
	attempt := r.st.Attempt
	bctx, cancel := r.budgetCtx(ctx)
	defer cancel()
	ectx, span := r.tr.executeTool(bctx, p.CallID, p.Language, attempt)
	ex, err := r.exec.Execute(ectx, Code{Language: p.Language, Code: p.Code})
	if err != nil {
		endExecute(span, nil, verdict{}, err)
		if ctx.Err() != nil {
			return r.cancel(ctx)
		}
		if errors.Is(err, sandbox.ErrInvalid) {
			v := verdict{Class: ClassRetryable, Kind: "invalid_request", Message: err.Error(), Why: "the sandbox refused the code as given"}
			return r.retryOrFail(ctx, v, nil, r.feedback(p, observationOf(v)))
		}
		return r.failWith(ctx, OutcomeExecutorError, ClassInfrastructure, "executor_error", "The code could not be run: "+err.Error())
	}
	v := classify(&ex.Record, ctx.Err() != nil)
	if v.Class == ClassCancelled && ctx.Err() == nil && bctx.Err() != nil {
		v = verdict{Class: ClassFatal, Kind: "time_budget", Why: "the run's time budget ran out while the code ran"}
	}
	endExecute(span, ex, v, nil)
	r.st.Score.Attempts++
	r.st.Score.ExecMS += ex.Record.DurationMS

	c := &cell{Attempt: attempt, Language: p.Language, Code: p.Code, Intent: p.Intent, Stdout: ex.Record.Stdout,
		Stderr: ex.Record.Stderr, Files: ex.Record.Files}
	for _, o := range ex.Record.Outputs {
		if o.OutputType == "execute_result" {
			if t, ok := o.Data["text/plain"].(string); ok {
				c.Result += t + "\n"
			}
		}
	}
	if v.Class != ClassSuccess {
		c.Error = v.errorLine()
	}
	r.st.Last = c
	exStep := r.step(StepExecution, attempt, executionSummary(&ex.Record), &ex.Record)
	files := ex.Files

	// Single mode wants something to interpret: a program that printed
	// nothing and wrote nothing gets one more try.
	if v.Class == ClassSuccess && r.rc.Mode == ModeSingle && strings.TrimSpace(c.Stdout) == "" && c.Result == "" && len(c.Files) == 0 {
		v = verdict{Class: ClassRetryable, Kind: "no_output", Message: "the program printed nothing",
			Why: "the program ran but printed no result, so there is nothing to rest an answer on"}
		c.Error = v.errorLine()
	}

	switch v.Class {
	case ClassSuccess:
		r.st.LastSig = ""
		r.st.Cells = append(r.st.Cells, *c)
		r.st.Messages = append(r.st.Messages, r.feedback(p, observation(&ex.Record, v, ex.Record.Files))...)
		r.st.Pending = nil
		if r.rc.Mode == ModeSteps {
			r.st.Phase = phaseGenerate
		} else {
			r.st.Phase = phaseInterpret
		}
		cl := v.record()
		return r.commit(ctx, store.Update{Files: files}, exStep, r.step(StepClassification, attempt, "success", &cl))
	case ClassRetryable:
		if err := r.commit(ctx, store.Update{Files: files}, exStep); err != nil {
			return err
		}
		return r.retryOrFail(ctx, v, nil, r.feedback(p, observation(&ex.Record, v, ex.Record.Files)))
	case ClassCancelled:
		if err := r.commit(ctx, store.Update{Files: files}, exStep); err != nil {
			return err
		}
		return r.cancel(ctx)
	}
	// Fatal or infrastructure.
	if err := r.commit(ctx, store.Update{Files: files}, exStep); err != nil {
		return err
	}
	outcome := map[string]string{"timeout": OutcomeTimeout, "cpu_limit": OutcomeCPULimit, "memory_limit": OutcomeMemoryLimit,
		"MemoryError": OutcomeMemoryLimit, "output_limit": OutcomeOutputLimit, "time_budget": OutcomeTimeBudget,
		"setup_error": OutcomeSetupError}[v.Kind]
	if outcome == "" {
		outcome = OutcomeExecutorError
	}
	summary := fmt.Sprintf("The code was stopped: %s (%s). Retrying would hit the same limit, so the run stopped.", v.Why, v.errorLine())
	switch v.Kind {
	case "timeout":
		summary = fmt.Sprintf("The code ran past its wall-time limit of %s and was stopped. Retrying would hit the same limit, so the run stopped.", r.rc.Limits.WallTime)
	case "cpu_limit":
		summary = fmt.Sprintf("The code used up its CPU-time limit of %s and was stopped. Retrying would hit the same limit, so the run stopped.", r.rc.Limits.CPUTime)
	case "memory_limit", "MemoryError":
		summary = fmt.Sprintf("The code went over its memory limit of %s and was stopped. Retrying would hit the same limit, so the run stopped.", sandbox.FormatBytes(r.rc.Limits.Memory))
	case "output_limit":
		summary = fmt.Sprintf("The code printed more than the output limit of %s per stream and was stopped. Retrying would hit the same limit, so the run stopped.", sandbox.FormatBytes(r.rc.Limits.OutputBytes))
	case "setup_error":
		summary = "The sandbox could not be set up, so the code did not run: " + v.Message
	}
	return r.failWith(ctx, outcome, v.Class, v.Kind, summary)
}

func observationOf(v verdict) string {
	return "The code was not run: " + v.errorLine()
}

// feedback is the message(s) that tell the model what its code did: the
// tool result for a tool call (and "not run" for the other calls of the
// turn), or a user message quoting the code for a fenced block.
func (r *runner) feedback(p *pendingCode, obs string) []llm.Message {
	if p.Source == "tool_call" {
		failed := !strings.HasPrefix(obs, "The code ran successfully")
		msgs := []llm.Message{llm.ToolResult(p.CallID, obs, failed)}
		for _, id := range r.st.Skipped {
			msgs = append(msgs, llm.ToolResult(id, "Not run: run one program per turn.", true))
		}
		r.st.Skipped = nil
		return msgs
	}
	return []llm.Message{llm.User(fmt.Sprintf("You wrote:\n```%s\n%s\n```\n%s", p.Language, strings.TrimRight(p.Code, "\n"), obs))}
}

func executionSummary(ex *ExecutionRecord) string {
	s := string(ex.Reason)
	if ex.Reason == sandbox.ReasonExited {
		s = fmt.Sprintf("exit %d", ex.ExitCode)
		if ex.Signal != "" {
			s = "killed by " + ex.Signal
		}
	}
	s += fmt.Sprintf(" in %s", (time.Duration(ex.DurationMS) * time.Millisecond).String())
	if n := len(ex.Files); n > 0 {
		s += fmt.Sprintf(", %d files", n)
	}
	return s
}

// ensureExecutor opens the executor with the run's workspace: the inputs
// and the files earlier executions produced. A persistent executor opened
// for a resumed run replays the successful cells to rebuild the session.
func (r *runner) ensureExecutor(ctx context.Context) error {
	if r.exec != nil {
		return nil
	}
	stored, err := r.store.Files(ctx, r.run.ID, "")
	if err != nil {
		return err
	}
	var inputs, outputs []store.File
	for _, f := range stored {
		if f.Role == store.RoleInput {
			inputs = append(inputs, f)
		} else {
			outputs = append(outputs, f)
		}
	}
	ws := Workspace{Files: append(workspaceFiles(inputs), workspaceFiles(outputs)...), Limits: r.rc.Limits, MaxFileBytes: r.rc.MaxFileBytes}
	ex, err := r.cfg.Backend.Open(ctx, ws)
	if err != nil {
		return err
	}
	r.exec = ex
	if !ex.Persistent() || len(r.st.Cells) == 0 {
		return nil
	}
	failed := 0
	for _, c := range r.st.Cells {
		res, err := ex.Execute(ctx, Code{Language: c.Language, Code: c.Code})
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if v := classify(&res.Record, ctx.Err() != nil); v.Class != ClassSuccess {
			failed++
		}
	}
	note := fmt.Sprintf("the session was rebuilt by running the %d successful cells again", len(r.st.Cells))
	if failed > 0 {
		note += fmt.Sprintf("; %d of them failed this time", failed)
	}
	return r.record(ctx, r.step(StepResume, r.st.Attempt, "session rebuilt", &Resume{From: "replay", Phase: string(r.st.Phase), Note: note}))
}

// ---- interpretation ----

func (r *runner) interpret(ctx context.Context) error {
	if done, err := r.checkBudgets(ctx); done || err != nil {
		return err
	}
	msgs := []llm.Message{llm.System(interpretSystem()), llm.User(interpretPrompt(r.st.Task, r.st.Inputs, r.st.Cells))}
	prior := 0
	if r.st.Unverified != "" {
		// The first interpretation call recorded the prompt.
		prior = len(msgs)
		msgs = append(msgs, llm.Assistant(r.st.Unverified), llm.User(groundingFeedback(ground(r.st.Unverified, r.evidence()...).Unsupported)))
	}
	resp, err, mc, deadline := r.chat(ctx, "interpret", llm.Request{Messages: msgs}, prior)
	callStep := r.step(StepModelCall, 0, modelCallSummary(mc), mc)
	if err != nil {
		return r.modelFailed(ctx, err, deadline, callStep)
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		return r.failWith(ctx, OutcomeProviderError, ClassInfrastructure, "empty_answer",
			"The code ran, but the model wrote no answer from its output.", callStep)
	}
	g := ground(text, r.evidence()...)
	if len(g.Unsupported) > 0 && r.st.Unverified == "" {
		r.st.Unverified = text
		r.st.Score.Retries++
		v := verdict{Class: ClassRetryable, Kind: "ungrounded_answer", Message: "quotes " + strings.Join(g.Unsupported, ", "),
			Why: "the answer quotes values that the output does not show"}
		r.countError(v)
		c := v.record()
		return r.record(ctx, callStep,
			r.step(StepClassification, 0, "retryable: answer quotes "+strings.Join(g.Unsupported, ", "), &c),
			r.step(StepRetry, 0, "retry: ungrounded answer", &Retry{Number: 1, Max: 1, Reason: v.Kind,
				Feedback: groundingFeedback(g.Unsupported)}))
	}
	ans := &Answer{Text: text, Grounded: len(g.Unsupported) == 0, Unsupported: g.Unsupported, Quoted: g.Quoted}
	outcome := OutcomeAnswered
	u := store.Update{Status: store.StatusSucceeded, Answer: text, Release: true, ClearPending: true}
	if !ans.Grounded {
		outcome = OutcomeUnverified
		u.Review = &store.NewReview{Kind: store.ReviewUnverified,
			Reason: "the answer quotes " + strings.Join(g.Unsupported, ", ") + ", which the output does not show"}
	}
	u.Outcome = outcome
	r.st.Score.Outcome = outcome
	r.st.Phase = phaseDone
	r.final.answer = ans
	return r.commit(ctx, u, callStep, r.step(StepAnswer, 0, "answer: "+oneLine(text, 100), ans))
}

// evidence is what an answer may quote: the outputs, the code, the task
// and the input descriptions.
func (r *runner) evidence() []string {
	ev := []string{r.st.Task}
	for _, in := range r.st.Inputs {
		ev = append(ev, in.Summary)
	}
	for _, c := range r.st.Cells {
		ev = append(ev, c.Stdout, c.Result, c.Code)
		for _, f := range c.Files {
			ev = append(ev, f.Path)
		}
	}
	return ev
}

// ---- budgets, failure, cancellation ----

func (r *runner) maxWall() time.Duration { return time.Duration(r.rc.MaxWallMS) * time.Millisecond }

// budgetCtx bounds ctx by the time left in the run's budget.
func (r *runner) budgetCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.rc.MaxWallMS <= 0 {
		return context.WithCancel(ctx)
	}
	left := r.maxWall() - time.Duration(r.st.ActiveMS)*time.Millisecond - time.Since(r.segment)
	return context.WithTimeout(ctx, max(left, time.Millisecond))
}

// checkBudgets ends the run when its token or time budget is spent: before
// a model call (tokens are spent there).
func (r *runner) checkBudgets(ctx context.Context) (bool, error) {
	if r.rc.MaxTokens > 0 && r.st.Score.Tokens() >= r.rc.MaxTokens {
		return true, r.failWith(ctx, OutcomeTokenBudget, ClassFatal, "token_budget",
			fmt.Sprintf("The run used %d tokens, its budget of %d, before the task was done.", r.st.Score.Tokens(), r.rc.MaxTokens))
	}
	return r.checkTime(ctx)
}

// checkTime ends the run when its time budget is spent.
func (r *runner) checkTime(ctx context.Context) (bool, error) {
	if r.rc.MaxWallMS > 0 && time.Duration(r.st.ActiveMS)*time.Millisecond+time.Since(r.segment) >= r.maxWall() {
		return true, r.failWith(ctx, OutcomeTimeBudget, ClassFatal, "time_budget",
			fmt.Sprintf("The run used up its time budget of %s before the task was done.", r.maxWall()))
	}
	return false, nil
}

// failWith records a classification of class and kind, then fails.
func (r *runner) failWith(ctx context.Context, outcome string, class Class, kind, summary string, steps ...pendingStep) error {
	r.st.Score.AddError(string(class), kind)
	c := Classification{Class: string(class), Kind: kind, Why: summary}
	steps = append(steps, r.step(StepClassification, r.st.Attempt, string(class)+": "+kind, &c))
	return r.fail(ctx, outcome, summary, steps...)
}

type finalResult struct {
	answer  *Answer
	failure *FailureReport
}

// fail ends the run without an answer, with an honest report, and puts it
// in the review queue.
func (r *runner) fail(ctx context.Context, outcome, summary string, steps ...pendingStep) error {
	rep := r.report(outcome, summary)
	r.st.Score.Outcome = outcome
	r.st.Phase = phaseDone
	r.final.failure = rep
	status := store.StatusFailed
	repJSON, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("agent: failure report: %w", err)
	}
	u := store.Update{Outcome: outcome, Failure: repJSON, Release: true, ClearPending: true}
	if outcome == OutcomeCancelled {
		status = store.StatusCancelled
	} else {
		u.Review = &store.NewReview{Kind: store.ReviewFailure, Reason: outcome + ": " + oneLine(summary, 300)}
	}
	if r.run.Status == store.StatusAwaitingApproval {
		u.CloseReviews = &store.CloseReviews{Kind: store.ReviewApproval, Resolution: outcome}
	}
	u.Status = status
	steps = append(steps, r.step(StepFailure, r.st.Attempt, "no answer: "+outcome, rep))
	return r.commit(ctx, u, steps...)
}

func (r *runner) cancel(ctx context.Context, steps ...pendingStep) error {
	return r.fail(ctx, OutcomeCancelled, "The run was cancelled before it finished.", steps...)
}

// report writes the honest failure report from the checkpoint: what the
// code was trying to do, the error that kept occurring and the partial
// output of the last attempt.
func (r *runner) report(outcome, summary string) *FailureReport {
	rep := &FailureReport{Outcome: outcome, Summary: summary, Attempts: r.st.Score.Attempts}
	var code, lang, intent string
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
	best, n := "", 0
	for e, c := range r.st.ErrorCounts {
		if c > n || c == n && e == r.st.LastError {
			best, n = e, c
		}
	}
	rep.Error, rep.Occurrences = best, n
	return rep
}

// intentOf says what the code was trying to do: the model's own words, or
// the code's leading comment, or the task.
func intentOf(said, lang, code, task string) string {
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
