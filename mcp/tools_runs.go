package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// AskInput is ask's input.
type AskInput struct {
	Task  string      `json:"task" jsonschema:"the task in plain words, e.g. 'Which region grew fastest? (sales.csv)'"`
	Files []InputFile `json:"files,omitempty" jsonschema:"input files placed in the run's workspace; the model sees their shape, never their data"`
	Mode  string      `json:"mode,omitempty" jsonschema:"single (one program, retried until it works; the default) or steps (cells in a persistent session)"`
}

// RunInput names a run.
type RunInput struct {
	Run string `json:"run" jsonschema:"the run's id (or a unique prefix of at least 4 characters)"`
}

// DecideInput is run_decide's input.
type DecideInput struct {
	Run      string `json:"run" jsonschema:"the id of the run awaiting approval"`
	Decision string `json:"decision" jsonschema:"approve, reject, or always (approve this and code flagged by the same rules for the rest of the run)"`
	Note     string `json:"note,omitempty" jsonschema:"why; a rejection's note goes back to the model"`
}

// PendingCode is code a run awaits a person's approval for.
type PendingCode struct {
	Language    string   `json:"language"`
	Code        string   `json:"code"`
	Explanation string   `json:"explanation"`
	Findings    []string `json:"findings,omitempty"`
}

// Failure is the honest report of a run without an answer.
type Failure struct {
	Outcome       string `json:"outcome"`
	Summary       string `json:"summary"`
	Error         string `json:"error,omitempty"`
	LastCode      string `json:"last_code,omitempty"`
	PartialOutput string `json:"partial_output,omitempty"`
}

// RunResult is an agent run as the run tools return it.
type RunResult struct {
	Run string `json:"run"`
	URI string `json:"uri"`
	// Status is running, awaiting_approval, succeeded, failed, cancelled
	// or interrupted.
	Status  string `json:"status"`
	Outcome string `json:"outcome,omitempty"`
	Task    string `json:"task"`
	Answer  string `json:"answer,omitempty"`
	// Unsupported lists values the answer quotes that the output does not
	// show: an answer with any is not to be relied on.
	Unsupported []string     `json:"unsupported,omitempty"`
	Failure     *Failure     `json:"failure,omitempty"`
	Pending     *PendingCode `json:"pending,omitempty"`
	Files       []FileRef    `json:"files,omitempty"`
	Attempts    int          `json:"attempts"`
	Tokens      int64        `json:"tokens"`
}

func (t *tenant) addRunTools() {
	if t.svc.opts.Agents != nil {
		sdk.AddTool(t.server, &sdk.Tool{
			Name:  "ask",
			Title: "Have coderun's agent do a task",
			Description: "Hand a task to coderun's agent: a model writes code, the policy reviews it, it runs in a sandbox, " +
				"errors go back to the model, and the answer is written from the real output (or an honest failure report). " +
				"Code the policy flags is put to you for approval when this client supports it; otherwise the run pauses " +
				"(status awaiting_approval) until run_decide. Returns the answer, the files and plots the run produced, " +
				"and the run's id for run_get.",
			Annotations: &sdk.ToolAnnotations{OpenWorldHint: new(true)},
		}, t.ask)
	}
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "run_get",
		Title:       "Read an agent run",
		Description: "Read where an agent run stands: its status, answer or failure report, the code it awaits approval for, and the files and plots it produced.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.runGet)
	t.addRunListTool()
	if t.svc.opts.Agents != nil {
		sdk.AddTool(t.server, &sdk.Tool{
			Name:  "run_decide",
			Title: "Approve or reject a run's pending code",
			Description: "Decide about the code an agent run awaits approval for (status awaiting_approval), then resume the run: " +
				"approve lets it run; reject tells the model (with the note), which may rewrite it.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)},
		}, t.runDecide)
	}
}

func (t *tenant) ask(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, *RunResult, error) {
	if strings.TrimSpace(in.Task) == "" {
		return nil, nil, errors.New("the task is empty")
	}
	var mode agent.Mode
	if in.Mode != "" {
		m, err := agent.ParseMode(in.Mode)
		if err != nil {
			return nil, nil, err
		}
		mode = m
	}
	var files []sandbox.File
	for _, f := range in.Files {
		b, err := f.bytes()
		if err != nil {
			return nil, nil, err
		}
		files = append(files, sandbox.File{Path: f.Path, Content: b})
	}
	st, err := t.records(ctx)
	if err != nil {
		return nil, nil, err
	}
	release, err := t.startExecution()
	if err != nil {
		return nil, nil, err
	}
	defer release()
	p, stop := newProgress(ctx, req, "ask")
	defer stop()
	ag, err := t.svc.opts.Agents(st, approver(req), mode, p.observe)
	if err != nil {
		return nil, nil, fmt.Errorf("ask: %w", err)
	}
	res, err := ag.Run(ctx, agent.Task{Prompt: in.Task, Files: files})
	if err != nil {
		return nil, nil, fmt.Errorf("ask: %w", err)
	}
	return t.runResult(context.WithoutCancel(ctx), st, res.RunID)
}

func (t *tenant) runGet(ctx context.Context, _ *sdk.CallToolRequest, in RunInput) (*sdk.CallToolResult, *RunResult, error) {
	st, err := t.records(ctx)
	if err != nil {
		return nil, nil, err
	}
	return t.runResult(ctx, st, in.Run)
}

func (t *tenant) runDecide(ctx context.Context, req *sdk.CallToolRequest, in DecideInput) (*sdk.CallToolResult, *RunResult, error) {
	v, err := agent.ParseVerdict(in.Decision)
	if err != nil || v == agent.Defer {
		return nil, nil, fmt.Errorf("decision %q: want approve, reject or always", in.Decision)
	}
	st, err := t.records(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Leave to run first: a decision recorded could not be resumed here.
	release, err := t.startExecution()
	if err != nil {
		return nil, nil, err
	}
	defer release()
	res, err := agent.Decide(ctx, st, in.Run, v, "mcp client ("+clientName(req)+")", in.Note)
	if err != nil {
		return nil, nil, err
	}
	if !res.Status.Final() {
		p, stop := newProgress(ctx, req, "run")
		defer stop()
		ag, err := t.svc.opts.Agents(st, approver(req), "", p.observe)
		if err != nil {
			return nil, nil, fmt.Errorf("resume: %w", err)
		}
		if res, err = ag.Resume(ctx, res.RunID); err != nil {
			return nil, nil, fmt.Errorf("resume: %w", err)
		}
	}
	return t.runResult(context.WithoutCancel(ctx), st, res.RunID)
}

func clientName(req *sdk.CallToolRequest) string {
	if req != nil && req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			return ip.ClientInfo.Name
		}
	}
	return "unknown"
}

// runResult reads a run back from the records and renders it: text, the
// PNG files it produced as images, the others as resource links.
func (t *tenant) runResult(ctx context.Context, st store.Tenant, id string) (*sdk.CallToolResult, *RunResult, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	r := &RunResult{Run: run.ID, URI: runURI(run.ID), Status: string(run.Shown()), Outcome: run.Outcome, Task: run.Task,
		Answer: run.Answer, Attempts: run.Scorecard.Attempts, Tokens: run.Scorecard.Tokens()}
	if pa, err := agent.RunPending(run); err == nil && pa != nil && run.Status == store.StatusAwaitingApproval {
		r.Pending = &PendingCode{Language: string(pa.Language), Code: pa.Code, Explanation: pa.Explanation}
		for _, f := range pa.Findings {
			r.Pending.Findings = append(r.Pending.Findings, f.String())
		}
	}
	if f, err := agent.RunFailure(run); err == nil && f != nil {
		r.Failure = &Failure{Outcome: string(f.Outcome), Summary: f.Summary, Error: f.Error, LastCode: f.LastCode, PartialOutput: f.PartialOutput}
	}
	if run.Answer != "" {
		if a := answerOf(ctx, st, run.ID); a != nil && !a.Grounded {
			r.Unsupported = a.Unsupported
		}
	}
	files, err := st.Files(ctx, run.ID, store.RoleOutput)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]store.File{}
	var order []string
	for _, f := range files {
		if f.Kind != string(sandbox.KindFile) {
			continue
		}
		if old, ok := latest[f.Path]; !ok {
			order = append(order, f.Path)
		} else if old.Step > f.Step {
			continue
		}
		latest[f.Path] = f
	}
	var content []sdk.Content
	for _, p := range order {
		f := latest[p]
		uri := runFileURI(run.ID, p)
		r.Files = append(r.Files, FileRef{Path: p, Kind: f.Kind, Size: f.Size, URI: uri})
		mt := mimeOf(p, f.Content)
		if mt == "image/png" && !f.Truncated {
			content = append(content, &sdk.ImageContent{Data: f.Content, MIMEType: mt})
		}
		size := f.Size
		content = append(content, &sdk.ResourceLink{URI: uri, Name: p, MIMEType: mt, Size: &size})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: %s", run.ID, r.Status)
	if r.Outcome != "" {
		fmt.Fprintf(&b, " (%s)", r.Outcome)
	}
	b.WriteString("\n")
	switch {
	case r.Answer != "":
		b.WriteString(r.Answer + "\n")
		if len(r.Unsupported) > 0 {
			fmt.Fprintf(&b, "UNVERIFIED: the answer quotes %s, which the output of the code does not show; do not rely on it.\n",
				strings.Join(r.Unsupported, ", "))
		}
	case r.Pending != nil:
		fmt.Fprintf(&b, "The run awaits approval for this %s code:\n%s\n%s\n", r.Pending.Language, r.Pending.Code, r.Pending.Explanation)
		for _, f := range r.Pending.Findings {
			fmt.Fprintf(&b, "! %s\n", f)
		}
		fmt.Fprintf(&b, "Decide with run_decide (run %s, decision approve or reject).\n", run.ID)
	case r.Failure != nil:
		fmt.Fprintf(&b, "No answer (%s). %s\n", r.Failure.Outcome, r.Failure.Summary)
		if r.Failure.Error != "" {
			fmt.Fprintf(&b, "Error:\n%s\n", r.Failure.Error)
		}
		if r.Failure.PartialOutput != "" {
			fmt.Fprintf(&b, "Partial output:\n%s\n", r.Failure.PartialOutput)
		}
	}
	for _, f := range r.Files {
		fmt.Fprintf(&b, "file: %s (%d bytes) %s\n", f.Path, f.Size, f.URI)
	}
	failed := run.Status == store.StatusFailed || run.Status == store.StatusCancelled || len(r.Unsupported) > 0
	return &sdk.CallToolResult{IsError: failed,
		Content: append([]sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}, content...)}, r, nil
}

// answerOf is the run's recorded answer step, or nil.
func answerOf(ctx context.Context, st store.Tenant, runID string) *agent.Answer {
	steps, err := st.Steps(ctx, runID, agent.StepAnswer)
	if err != nil || len(steps) == 0 {
		return nil
	}
	p, err := agent.DecodeStep(steps[len(steps)-1])
	if err != nil {
		return nil
	}
	a, _ := p.(*agent.Answer)
	return a
}

// approver asks the client's user about flagged code, by elicitation,
// when the client supports it; otherwise (or when the user dismisses the
// question) the run pauses for run_decide.
func approver(req *sdk.CallToolRequest) agent.Approver { return elicitApprover{req} }

// elicitApprover asks the client's user about flagged code through
// elicitation, when the client supports it, with an optional note that is
// recorded with the decision; otherwise the run pauses for run_decide.
type elicitApprover struct{ req *sdk.CallToolRequest }

// Approve is ApproveNoted without the note.
func (a elicitApprover) Approve(ctx context.Context, ar agent.ApprovalRequest) (agent.Verdict, error) {
	v, _, err := a.ApproveNoted(ctx, ar)
	return v, err
}

// ApproveNoted asks the user and returns the decision and its note.
func (a elicitApprover) ApproveNoted(ctx context.Context, ar agent.ApprovalRequest) (agent.Verdict, string, error) {
	req := a.req
	if req == nil || req.Session == nil {
		return agent.Defer, "", nil
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return agent.Defer, "", nil
	}
	var findings strings.Builder
	for _, f := range ar.Decision.Causes {
		fmt.Fprintf(&findings, "! %s\n", f)
	}
	res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{
		Message: fmt.Sprintf("coderun's policy asks before this %s code runs (run %s):\n\n%s\n\n%s%s",
			ar.Language, ar.RunID, ar.Code, findings.String(), ar.Decision.Explanation),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{"approve", "reject", "always"},
					"description": "approve: run it; reject: tell the model, which may rewrite it; always: approve code flagged by the same rules for the rest of the run"},
				"note": map[string]any{"type": "string", "title": "Note", "maxLength": maxNote,
					"description": "optional: why; recorded with the decision, and a rejection's note goes back to the model"},
			},
			"required": []string{"decision"},
		},
	})
	switch {
	case ctx.Err() != nil:
		return "", "", ctx.Err()
	case err != nil:
		return agent.Defer, "", nil // the client could not ask: decide later with run_decide
	case res.Action == "decline":
		return agent.Reject, "", nil
	case res.Action != "accept":
		return agent.Defer, "", nil
	}
	d, _ := res.Content["decision"].(string)
	v, err := agent.ParseVerdict(d)
	if err != nil {
		return agent.Defer, "", nil
	}
	note, _ := res.Content["note"].(string)
	return v, clipNote(note), nil
}

// maxNote bounds a note given through elicitation, in bytes.
const maxNote = 2000

// clipNote trims a note and cuts it at maxNote bytes, between characters.
func clipNote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxNote {
		return s
	}
	n := maxNote
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}
