package sandboxfusion

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// SandboxFusion's defaults for a field a request leaves out.
const (
	defaultTimeout = 10 * time.Second // compile_timeout, run_timeout
)

// runCode serves POST /run_code.
func (h *Handler) runCode(w http.ResponseWriter, r *http.Request) {
	var in RunCodeRequest
	if err := decode(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	req, err := h.request(&in)
	resp := &RunCodeResponse{Status: StatusSuccess, Files: map[string]string{}}
	if h.opts.PodName != "" {
		resp.ExecutorPodName = ptr(h.opts.PodName)
	}
	var v *validationError
	switch {
	case errors.As(err, &v):
		writeRequestError(w, err)
		return
	case err != nil:
		// A language coderun does not run: SandboxFusion's answer for a
		// run that could not be made.
		resp.Status, resp.Message = StatusSandboxError, err.Error()
		writeJSON(w, http.StatusOK, resp)
		return
	}
	release, err := h.admit(r.Context())
	if err != nil {
		resp.Status, resp.Message = StatusSandboxError, err.Error()
		writeJSON(w, http.StatusOK, resp)
		return
	}
	res, err := h.run(r.Context(), req)
	release()
	if err != nil {
		resp.Status, resp.Message = StatusSandboxError, fmt.Sprintf("coderun could not run the code: %v", err)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	h.answer(resp, res, &in, req.Files)
	writeJSON(w, http.StatusOK, resp)
}

// setupAttempts is how many times a run whose sandbox could not be set up
// is tried: its code did not run, so trying again has no effect but to
// answer, and SandboxFusion's clients score a SandboxError as a failed
// sample.
const setupAttempts = 3

// run runs req, again when its sandbox (or its compile step's) could not
// be set up.
func (h *Handler) run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := h.opts.Runtime.Run(ctx, req)
		if err != nil || attempt == setupAttempts || ctx.Err() != nil || !setupFailed(res) {
			return res, err
		}
	}
}

// setupFailed reports whether res is a sandbox that could not be set up,
// for the run or for its compile step: nothing of the code ran.
func setupFailed(res *sandbox.Result) bool {
	return res.Reason == sandbox.ReasonSetupError || (res.Compile != nil && res.Compile.Reason == sandbox.ReasonSetupError)
}

// Request is the sandbox request a /run_code body becomes on this
// handler (with its limits), or why the body would be refused; the
// benchmark runs it in-process beside the same body over HTTP.
func (h *Handler) Request(in *RunCodeRequest) (sandbox.Request, error) { return h.request(in) }

// request turns a /run_code request into a sandbox request.
func (h *Handler) request(in *RunCodeRequest) (sandbox.Request, error) {
	if in.Code == nil {
		return sandbox.Request{}, invalid("missing", "code", "Field required", nil)
	}
	name := "python"
	if in.Language != nil {
		name = *in.Language
	}
	runTimeout, err := timeout("run_timeout", in.RunTimeout)
	if err != nil {
		return sandbox.Request{}, err
	}
	compileTimeout, err := timeout("compile_timeout", in.CompileTimeout)
	if err != nil {
		return sandbox.Request{}, err
	}
	limits := h.opts.Limits
	limits.WallTime = runTimeout
	// The wall time is the limit SandboxFusion has: CPU time is bounded
	// only so far as to never end a run first.
	limits.CPUTime = min(sandbox.MaxLimits.CPUTime, runTimeout*time.Duration(max(2, runtime.NumCPU())))
	if in.MemoryLimitMB != nil {
		mb := *in.MemoryLimitMB
		if mb != math.Trunc(mb) {
			return sandbox.Request{}, invalid("int_from_float", "memory_limit_MB", "Input should be a valid integer, got a number with a fractional part", mb)
		}
		if mb > 0 {
			limits.Memory = int64(mb) << 20
		}
	}
	files, err := inputFiles(in.Files)
	if err != nil {
		return sandbox.Request{}, err
	}
	lang, err := resolveLanguage(name)
	if err != nil {
		return sandbox.Request{}, err
	}
	req := sandbox.Request{Language: lang, Code: *in.Code, Files: files, Limits: limits}
	if spec, ok := language.Lookup(lang); ok && spec.Compiled() {
		// compile_timeout bounds the compile step; its other limits are
		// the compiler's defaults (it needs more memory than most
		// programs it makes).
		req.CompileLimits = sandbox.Limits{WallTime: compileTimeout,
			CPUTime: min(sandbox.MaxLimits.CPUTime, compileTimeout*time.Duration(max(2, runtime.NumCPU())))}
	}
	if in.Stdin != nil {
		req.Stdin = []byte(*in.Stdin)
	}
	if len(in.FetchFiles) > 0 {
		req.FileContents = h.opts.MaxFileBytes
	}
	return req, nil
}

// timeout reads a timeout in seconds: absent is SandboxFusion's default.
func timeout(field string, s *float64) (time.Duration, error) {
	if s == nil {
		return defaultTimeout, nil
	}
	d := time.Duration(*s * float64(time.Second))
	switch {
	case *s <= 0 || math.IsNaN(*s):
		return 0, invalid("greater_than", field, "Input should be greater than 0", *s)
	case *s > sandbox.MaxLimits.WallTime.Seconds():
		return 0, invalid("less_than_equal", field, fmt.Sprintf("Input should be less than or equal to %g (coderun's longest run)", sandbox.MaxLimits.WallTime.Seconds()), *s)
	}
	return max(d, time.Millisecond), nil
}

// answer fills resp from what the sandbox did: the compile step's result
// (compiled languages), the run's (none when compiling did not make a
// program), and the status SandboxFusion derives from them.
func (h *Handler) answer(resp *RunCodeResponse, res *sandbox.Result, in *RunCodeRequest, inputs []sandbox.File) {
	var steps []*CommandRunResult
	if res.Compile != nil {
		resp.CompileResult = commandResult(res.Compile)
		steps = append(steps, resp.CompileResult)
	}
	switch {
	case res.Reason != sandbox.ReasonCompileError:
		resp.RunResult = commandResult(res)
		steps = append(steps, resp.RunResult)
	case res.Compile == nil: // a compile error without the compiler's result
		resp.CompileResult = &CommandRunResult{Status: CommandError, Stderr: ptr(res.Summary())}
		steps = append(steps, resp.CompileResult)
	}
	resp.Status, resp.Message = runStatus(steps)
	if resp.Status == StatusSandboxError {
		return
	}
	if err := fetch(resp.Files, in.FetchFiles, res, inputs, fetchBudget(h.opts.Limits)); err != nil {
		resp.Status, resp.Message = StatusSandboxError, err.Error()
	}
}

// runStatus is SandboxFusion's status of an answer from its steps: a step
// in Error makes it a SandboxError (the message is that step's stderr);
// else a time limit or a non-zero return code makes it Failed.
func runStatus(steps []*CommandRunResult) (RunStatus, string) {
	for _, s := range steps {
		if s.Status == CommandError {
			return StatusSandboxError, *s.Stderr
		}
	}
	for _, s := range steps {
		if s.Status == CommandTimeLimitExceeded || (s.ReturnCode != nil && *s.ReturnCode != 0) {
			return StatusFailed, ""
		}
	}
	return StatusSuccess, ""
}

// commandResult is one step's result in SandboxFusion's terms: a time or
// CPU limit is TimeLimitExceeded (no return code, the output so far); a
// sandbox that could not be set up, or a run stopped from outside, is an
// Error; anything else Finished, with the exit status, or the negative
// signal number for a program a signal ended (-9 for one the sandbox
// killed past its memory or output limit).
func commandResult(res *sandbox.Result) *CommandRunResult {
	c := &CommandRunResult{Status: CommandFinished, ExecutionTime: seconds(res.Usage.Wall.Seconds()),
		Stdout: ptr(res.Stdout), Stderr: ptr(res.Stderr)}
	switch res.Reason {
	case sandbox.ReasonTimeout, sandbox.ReasonCPULimit:
		c.Status = CommandTimeLimitExceeded
		return c
	case sandbox.ReasonSetupError, sandbox.ReasonKilled:
		msg := res.Summary()
		if res.Reason == sandbox.ReasonKilled {
			msg = "the run was stopped before it ended (the request was cancelled or the server is shutting down)"
		}
		return &CommandRunResult{Status: CommandError, Stderr: ptr(msg)}
	}
	code := res.ExitCode
	switch n := unix.SignalNum(res.Signal); {
	case n != 0:
		code = -int(n)
	case res.Reason == sandbox.ReasonMemoryLimit, res.Reason == sandbox.ReasonOutputLimit:
		code = -int(unix.SIGKILL) // the sandbox killed it
	}
	c.ReturnCode = &code
	return c
}

// fetch puts the files asked for into files, base64: what the run created
// or changed, else the input placed before it unless the run removed it. A
// path that is not there is left out, as SandboxFusion leaves it out; one
// larger than the bound of a fetched file is an error saying so.
func fetch(files map[string]string, paths []string, res *sandbox.Result, inputs []sandbox.File, budget int64) error {
	var total int64
	add := func(name string, content []byte) error {
		if total += int64(len(content)); total > budget {
			return errFetchBudget(budget)
		}
		files[name] = base64.StdEncoding.EncodeToString(content)
		return nil
	}
	for _, name := range paths {
		p, err := sandbox.CleanPath(name)
		if err != nil {
			continue // outside the workspace: not there
		}
		found := false
		for _, f := range res.Files {
			if f.Path != p {
				continue
			}
			found = true
			if f.SameFileAs != "" { // a hard link: the content is at its first name
				for _, g := range res.Files {
					if g.Path == f.SameFileAs {
						f.Content, f.ContentTruncated = g.Content, g.ContentTruncated
					}
				}
			}
			if f.Kind == sandbox.KindFile {
				if f.ContentTruncated {
					return fmt.Errorf("fetch_files: %s is %d bytes, more than the server returns of a file (%d)", name, f.Size, len(f.Content))
				}
				if err := add(name, f.Content); err != nil {
					return err
				}
			}
		}
		if found || slices.Contains(res.Removed, p) {
			continue
		}
		for _, f := range inputs {
			if f.Path == p {
				if err := add(name, f.Content); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fetchBudget is the most that fetch_files hands back together from a
// workspace of limits': its size, all it could honestly hold. A file named
// many ways ("a", "./a", "a/", its hard links) would otherwise be copied
// into the answer once per name, a request body of names making the
// server build far more than any workspace holds.
func fetchBudget(limits sandbox.Limits) int64 {
	if limits.WorkspaceBytes > 0 {
		return limits.WorkspaceBytes
	}
	return sandbox.DefaultLimits.WorkspaceBytes
}

func errFetchBudget(budget int64) error {
	return fmt.Errorf("fetch_files: the files asked for come to more than %s together, the workspace's size: name each file once", sandbox.FormatBytes(budget))
}
