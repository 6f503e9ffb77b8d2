package api

import (
	"net/http"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
	"github.com/coderun/coderun/server"
)

// execRequest is a one-shot execution: POST /v1/exec.
type execRequest struct {
	Language sandbox.Language  `json:"language"`
	Code     string            `json:"code"`
	Name     string            `json:"name,omitempty"`
	Stdin    string            `json:"stdin,omitempty"`
	Files    []fileIn          `json:"files,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Limits   limitsIn          `json:"limits"`
	// FileContents asks for the content of files out, up to this many
	// bytes each (see sandbox.Request.FileContents).
	FileContents size `json:"file_contents,omitempty"`
	// CompileArgs are added to a compiled language's compiler.
	CompileArgs []string `json:"compile_args,omitempty"`
	// Runtime names the runtime to run on (linux, gvisor, docker), one the
	// server enables; empty: the server's own.
	Runtime string `json:"runtime,omitempty"`
}

// exec runs code once in a fresh sandbox and answers its sandbox.Result.
func (a *API) exec(w http.ResponseWriter, r *http.Request) {
	tn, ok := tenant(w, r)
	if !ok {
		return
	}
	var in execRequest
	if !server.DecodeJSON(w, r, &in) {
		return
	}
	req, err := in.request(a.opts.Limits)
	if err != nil {
		writeErr(w, err)
		return
	}
	rt, err := a.runtime(in.Runtime)
	if err != nil {
		writeErr(w, err)
		return
	}
	release, err := a.opts.Tenants.StartExecution(tn)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer release()
	res, err := rt.Run(r.Context(), req)
	if server.ShuttingDown(r.Context()) {
		// The grace period of a shutdown ended with the run.
		server.WriteError(w, http.StatusServiceUnavailable, server.CodeUnavailable, server.ErrShutdown.Error()+": the run was stopped")
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if m := a.opts.Metrics; m != nil {
		m.SandboxStart("run", res.Pooled)
		m.Execution("run", string(res.Reason), res.Usage.Wall)
	}
	server.WriteJSON(w, http.StatusOK, res)
}

// request is the sandbox request, validated: nothing runs when it is not.
func (in execRequest) request(defaults sandbox.Limits) (sandbox.Request, error) {
	limits, err := in.Limits.Over(defaults)
	if err != nil {
		return sandbox.Request{}, err
	}
	fs, err := files(in.Files)
	if err != nil {
		return sandbox.Request{}, err
	}
	if in.FileContents < 0 {
		return sandbox.Request{}, badInput("file_contents is negative")
	}
	lang := in.Language
	if lang == "" {
		lang = sandbox.Python
	}
	req := sandbox.Request{Language: lang, Code: in.Code, Name: in.Name, Files: fs, Env: in.Env,
		Limits: limits, FileContents: int64(in.FileContents), CompileArgs: in.CompileArgs}
	if in.Stdin != "" {
		req.Stdin = []byte(in.Stdin)
	}
	// Any language of the table: the runtime is wrapped by
	// sandbox/toolchain, which compiles and runs the ones runtimes do not
	// start themselves (a missing toolchain is refused when it runs).
	req.Limits = req.Limits.WithDefaults(defaults)
	if err := toolchain.Validate(&req); err != nil {
		return sandbox.Request{}, err
	}
	return req, nil
}
