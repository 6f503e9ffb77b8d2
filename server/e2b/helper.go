package e2b

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/coderun/coderun/session"
)

//go:embed helper.py
var helperSource string

// helperMIME is the MIME type the helper answers in.
const helperMIME = "application/vnd.coderun.e2b+json"

// helperTimeout bounds a helper cell that is not a command.
const helperTimeout = 30 * time.Second

// isHelperBundle reports whether a display's bundle is the helper's answer.
func isHelperBundle(b session.MIMEBundle) bool {
	_, ok := b[helperMIME]
	return ok
}

// helperCode is the cell that runs the helper's op with args, in a
// namespace of its own.
func helperCode(op string, args any) (string, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("exec(%s, {'__name__': '__coderun_e2b__', 'OP': %s, 'ARGS': __import__('json').loads(%s)})",
		strconv.Quote(helperSource), strconv.Quote(op), strconv.Quote(string(a))), nil
}

// helperCall is one run of the helper in a Python session.
type helperCall struct {
	op      string
	args    any
	timeout time.Duration
	// onAnswer sees every answer as it arrives (a command's start comes
	// before its end); onStream sees the cell's stream outputs.
	onAnswer func(json.RawMessage)
	onStream func(session.Output)
}

// runHelper runs the helper in sess and decodes its last answer into
// result. An answer {"error": {...}} is returned as that *rpcError.
func runHelper(ctx context.Context, sess *session.Session, call helperCall, result any) error {
	code, err := helperCode(call.op, call.args)
	if err != nil {
		return err
	}
	var answers []json.RawMessage
	timeout := call.timeout
	if timeout == 0 {
		timeout = helperTimeout
	}
	cell, err := sess.Execute(ctx, session.Exec{Code: code, Timeout: timeout, OnOutput: func(o session.Output) {
		switch {
		case o.Type == session.TypeDisplayData && isHelperBundle(o.Data):
			raw := json.RawMessage(o.Data.Text(helperMIME))
			answers = append(answers, raw)
			if call.onAnswer != nil {
				call.onAnswer(raw)
			}
		case o.Type == session.TypeStream && call.onStream != nil:
			call.onStream(o)
		}
	}})
	if err != nil {
		return rpcErrorf(codeUnavailable, "the sandbox's interpreter: %v", err)
	}
	if len(answers) == 0 {
		msg := fmt.Sprintf("the sandbox's helper gave no answer (cell %s)", cell.Status)
		if e := cell.Error(); e != nil {
			msg += ": " + e.Ename + ": " + e.Evalue
		}
		return rpcErrorf(codeInternal, "%s", msg)
	}
	last := answers[len(answers)-1]
	var fail struct {
		Error *rpcError `json:"error"`
	}
	if err := json.Unmarshal(last, &fail); err != nil {
		return rpcErrorf(codeInternal, "the sandbox's helper answered %q: %v", last, err)
	}
	if fail.Error != nil {
		return fail.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(last, result); err != nil {
		return rpcErrorf(codeInternal, "the sandbox's helper answered %q: %v", last, err)
	}
	return nil
}
