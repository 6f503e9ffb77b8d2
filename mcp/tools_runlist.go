package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunListInput is run_list's input.
type RunListInput struct {
	Status string `json:"status,omitempty" jsonschema:"only runs with this status: running, awaiting_approval, succeeded, failed, cancelled or interrupted"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many runs, newest first: 1 to 100 (default 20)"`
}

// RunSummary is one run as run_list lists it.
type RunSummary struct {
	Run       string `json:"run"`
	URI       string `json:"uri"`
	Status    string `json:"status"`
	Outcome   string `json:"outcome,omitempty"`
	Task      string `json:"task"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	Attempts  int    `json:"attempts"`
	Tokens    int64  `json:"tokens"`
}

// RunList is run_list's result.
type RunList struct {
	Runs []RunSummary `json:"runs"`
}

// runStatuses are the statuses run_list filters by.
var runStatuses = []store.Status{store.StatusRunning, store.StatusAwaitingApproval, store.StatusSucceeded,
	store.StatusFailed, store.StatusCancelled, store.StatusInterrupted}

const (
	defaultRunListLimit = 20
	maxRunListLimit     = 100
)

func (t *tenant) addRunListTool() {
	sdk.AddTool(t.server, &sdk.Tool{
		Name:  "run_list",
		Title: "List agent runs",
		Description: "List the recent agent runs (ask), newest first: id, status, outcome, task, when, attempts and tokens; " +
			"filter by status (awaiting_approval finds the runs waiting for run_decide). run_get reads one in full.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.runList)
}

func (t *tenant) runList(ctx context.Context, _ *sdk.CallToolRequest, in RunListInput) (*sdk.CallToolResult, *RunList, error) {
	f := store.Filter{Limit: in.Limit}
	switch {
	case in.Limit == 0:
		f.Limit = defaultRunListLimit
	case in.Limit < 0 || in.Limit > maxRunListLimit:
		return nil, nil, fmt.Errorf("limit %d: want 1 to %d", in.Limit, maxRunListLimit)
	}
	if in.Status != "" {
		s := store.Status(strings.ToLower(strings.TrimSpace(in.Status)))
		known := false
		for _, k := range runStatuses {
			known = known || s == k
		}
		if !known {
			return nil, nil, fmt.Errorf("status %q: want one of %v", in.Status, runStatuses)
		}
		f.Status = s
	}
	st, err := t.records(ctx)
	if err != nil {
		return nil, nil, err
	}
	runs, err := st.ListRuns(ctx, f)
	if err != nil {
		return nil, nil, fmt.Errorf("run_list: %w", err)
	}
	out := &RunList{Runs: []RunSummary{}}
	var b strings.Builder
	for _, r := range runs {
		s := RunSummary{Run: r.ID, URI: runURI(r.ID), Status: string(r.Shown()), Outcome: r.Outcome, Task: r.Task,
			CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: r.UpdatedAt.UTC().Format(time.RFC3339),
			Attempts: r.Scorecard.Attempts, Tokens: r.Scorecard.Tokens()}
		out.Runs = append(out.Runs, s)
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", s.Run, s.Status, s.CreatedAt, clip(s.Task, 80))
	}
	if len(runs) == 0 {
		b.WriteString("no runs")
		if f.Status != "" {
			b.WriteString(" with status " + string(f.Status))
		}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}}, out, nil
}
