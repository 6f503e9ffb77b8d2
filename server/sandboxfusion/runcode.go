package sandboxfusion

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

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
	res, err := h.opts.Runtime.Run(r.Context(), req)
	release()
	if err != nil {
		resp.Status, resp.Message = StatusSandboxError, fmt.Sprintf("coderun could not run the code: %v", err)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	h.answer(resp, res, &in, req.Files)
	writeJSON(w, http.StatusOK, resp)
}

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
	if _, err := timeout("compile_timeout", in.CompileTimeout); err != nil {
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

// answer fills resp from what the sandbox did.
func (h *Handler) answer(resp *RunCodeResponse, res *sandbox.Result, in *RunCodeRequest, inputs []sandbox.File) {
	resp.RunResult = commandResult(res)
	if resp.RunResult.Status == CommandError {
		resp.Status, resp.Message = StatusSandboxError, *resp.RunResult.Stderr
		return
	}
	if resp.RunResult.Status == CommandTimeLimitExceeded || *resp.RunResult.ReturnCode != 0 {
		resp.Status = StatusFailed
	}
	if err := fetch(resp.Files, in.FetchFiles, res, inputs); err != nil {
		resp.Status, resp.Message = StatusSandboxError, err.Error()
	}
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
// or changed, else the input placed before it (a sandbox's result does not
// tell removals: an input the program removed still comes back). A path
// that is not there is left out, as SandboxFusion leaves it out; one
// larger than the bound of a fetched file is an error saying so.
func fetch(files map[string]string, paths []string, res *sandbox.Result, inputs []sandbox.File) error {
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
				files[name] = base64.StdEncoding.EncodeToString(f.Content)
			}
		}
		if found {
			continue
		}
		for _, f := range inputs {
			if f.Path == p {
				files[name] = base64.StdEncoding.EncodeToString(f.Content)
			}
		}
	}
	return nil
}
