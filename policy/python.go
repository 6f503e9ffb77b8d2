package policy

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// analyzerScript parses Python with the ast module and reports what it sees.
//
//go:embed analyze_python.py
var analyzerScript string

// DefaultPython is the interpreter that runs the analyser: Debian's, not
// whichever python3 comes first on PATH.
const DefaultPython = "/usr/bin/python3"

// pyPlaceholder is what the analyser writes for values only known at run time.
const pyPlaceholder = "${PYEXPR}"

// pyOutput is the analyser's JSON report.
type pyOutput struct {
	Findings []struct {
		Rule    string `json:"rule"`
		Line    int    `json:"line"`
		Col     int    `json:"col"`
		Message string `json:"message"`
	} `json:"findings"`
	Paths []struct {
		Line  int    `json:"line"`
		Col   int    `json:"col"`
		Path  string `json:"path"`
		Exact bool   `json:"exact"`
		API   string `json:"api"`
		Write bool   `json:"write"`
	} `json:"paths"`
	Shell []struct {
		Line int    `json:"line"`
		Col  int    `json:"col"`
		Code string `json:"code"`
		Via  string `json:"via"`
	} `json:"shell"`
	ShellCells []struct {
		LineOffset int    `json:"line_offset"`
		Code       string `json:"code"`
	} `json:"shell_cells"`
	SyntaxError *struct {
		Line    int    `json:"line"`
		Col     int    `json:"col"`
		Message string `json:"message"`
	} `json:"syntax_error"`
	Error string `json:"error"`
}

// errUnavailable marks failures of the analyser itself (not of the caller's
// context): they become an analysis.unavailable finding, not an error.
var errUnavailable = errors.New("python analyser unavailable")

// runPython runs the analyser on code and decodes its report.
func runPython(ctx context.Context, python string, timeout time.Duration, code string) (*pyOutput, error) {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// -I: isolated (no user site, no PYTHON* variables, no cwd on sys.path);
	// -S: no site module; -B: write no bytecode. The code is data on stdin.
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-B", "-c", analyzerScript)
	cmd.Stdin = strings.NewReader(code)
	cmd.Env = []string{"LC_ALL=C.UTF-8"}
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		if parent.Err() != nil {
			return nil, fmt.Errorf("policy: python analysis: %w", parent.Err())
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: timed out after %s", errUnavailable, timeout)
		}
		var ee *exec.Error
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%w: %s: %v", errUnavailable, python, ee.Err)
		}
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the exception line of a traceback
		}
		return nil, fmt.Errorf("%w: %s: %v: %s", errUnavailable, python, err, msg)
	}
	var out pyOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%w: unreadable report: %v", errUnavailable, err)
	}
	if out.Error != "" {
		return nil, fmt.Errorf("%w: %s", errUnavailable, out.Error)
	}
	return &out, nil
}
