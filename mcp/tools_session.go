package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/session"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionRunInput is session_run's input.
type SessionRunInput struct {
	Session        string  `json:"session" jsonschema:"the session's name, e.g. analysis: created on first use"`
	Code           string  `json:"code" jsonschema:"the cell's code"`
	Language       string  `json:"language,omitempty" jsonschema:"{languages}; only when the session is created"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"this cell's time limit in seconds (default: the server's); past it the cell is interrupted and the state kept"`
}

// SessionInput names a session.
type SessionInput struct {
	Session string `json:"session" jsonschema:"the session's name"`
}

// SessionCreateInput is session_create's input.
type SessionCreateInput struct {
	Session  string `json:"session" jsonschema:"a name for the session: 1 to 64 letters, digits, '.', '_' or '-'"`
	Language string `json:"language,omitempty" jsonschema:"{languages}"`
}

// SessionList is session_list's result.
type SessionList struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionDone is the result of session_restart and session_close.
type SessionDone struct {
	Session string `json:"session"`
	ID      string `json:"id"`
	Done    string `json:"done"`
}

func (t *tenant) addSessionTools() {
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "session_run",
		Title:       "Run a cell in a session",
		InputSchema: inputSchema[SessionRunInput](sessionLanguages()),
		Description: "Run code in a named session, like a notebook cell: variables, imports and files persist between calls " +
			"(the session is created on first use). Returns stdout, stderr, the value of the last expression, and plots " +
			"(matplotlib figures) as PNG images. An exception is an error result with the traceback, and the session " +
			"keeps its state; so does a cell stopped at its time limit. Cancelling the call interrupts the cell.",
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: new(false)},
	}, t.sessionRun)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "session_create",
		Title:       "Create a session",
		Description: "Create a named session (" + sessionLanguages() + ") explicitly; session_run also creates one on first use. An open session of that name is returned as it is.",
		InputSchema: inputSchema[SessionCreateInput](sessionLanguages()),
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.sessionCreate)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "session_list",
		Title:       "List sessions",
		Description: "List the open sessions: name, id, language, cells run, whether one is running a cell, last use.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.sessionList)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "session_restart",
		Title:       "Restart a session",
		Description: "Restart a session's interpreter: variables and imports are gone, files in the workspace are kept.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, t.sessionRestart)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "session_close",
		Title:       "Close a session",
		Description: "Close a session: its interpreter stops and its workspace and files are removed.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.sessionClose)
}

func (t *tenant) sessionRun(ctx context.Context, req *sdk.CallToolRequest, in SessionRunInput) (*sdk.CallToolResult, *CellResult, error) {
	lang, err := parseLanguage(in.Language, "")
	if err != nil {
		return nil, nil, err
	}
	if in.TimeoutSeconds < 0 {
		return nil, nil, errors.New("timeout_seconds must be positive")
	}
	o, err := t.open(ctx, in.Session, lang, true)
	if err != nil {
		return nil, nil, err
	}
	release, err := t.startExecution()
	if err != nil {
		return nil, nil, err
	}
	defer release()
	p, stop := newProgress(ctx, req, "cell")
	defer stop()
	c, err := o.s.Execute(ctx, session.Exec{Code: in.Code, Timeout: time.Duration(in.TimeoutSeconds * float64(time.Second)),
		OnOutput: func(out session.Output) { p.send(ctx, outputLine(out)) }})
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	res, out := cellContent(o, c)
	return res, out, nil
}

// outputLine is an output as a progress message.
func outputLine(o session.Output) string {
	switch o.Type {
	case session.TypeStream:
		return o.Name + ": " + o.Text
	case session.TypeError:
		return "error: " + o.Ename + ": " + o.Evalue
	case session.TypeDisplayData, session.TypeExecuteResult:
		return o.Type + " (" + strings.Join(o.Data.Types(), ", ") + ")"
	}
	return o.Type
}

func (t *tenant) sessionCreate(ctx context.Context, _ *sdk.CallToolRequest, in SessionCreateInput) (*sdk.CallToolResult, *SessionInfo, error) {
	lang, err := parseLanguage(in.Language, "")
	if err != nil {
		return nil, nil, err
	}
	o, err := t.open(ctx, in.Session, lang, true)
	if err != nil {
		return nil, nil, err
	}
	info := sessionInfo(o.name, o.s.Info())
	what := "created"
	if !o.created {
		what = "already open"
	}
	text := fmt.Sprintf("session %q (%s, id %s): %s", o.name, info.Language, info.ID, what)
	if info.Interpreter != "" {
		text += "; " + info.Interpreter
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, &info, nil
}

func (t *tenant) sessionList(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, *SessionList, error) {
	l := &SessionList{Sessions: t.list()}
	if len(l.Sessions) == 0 {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no open sessions"}}}, l, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: jsonText(l)}}}, l, nil
}

func (t *tenant) sessionRestart(ctx context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, *SessionDone, error) {
	o, err := t.open(ctx, in.Session, "", false)
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	if err := o.s.Restart(ctx); err != nil {
		return nil, nil, fmt.Errorf("session %q: restart: %w", in.Session, err)
	}
	d := &SessionDone{Session: in.Session, ID: o.s.ID(), Done: "restarted"}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
		Text: fmt.Sprintf("session %q restarted: variables and imports are gone, files are kept", in.Session)}}}, d, nil
}

func (t *tenant) sessionClose(_ context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, *SessionDone, error) {
	s, err := t.find(in.Session)
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	t.forget(in.Session)
	defer t.releaseSession(s.ID())
	if err := s.Close(); err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	d := &SessionDone{Session: in.Session, ID: s.ID(), Done: "closed"}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("session %q closed", in.Session)}}}, d, nil
}
