package sandboxfusion

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// SandboxFusion's default for all the cells of a /run_jupyter request.
const defaultTotalTimeout = 45 * time.Second

// runJupyter serves POST /run_jupyter: the cells run one after another in
// one fresh Python session, each whatever the previous one did (as
// SandboxFusion runs them), within cell_timeout each and total_timeout
// together. Past the total, the answer is Failed with the driver's
// TimeLimitExceeded and no cells, as SandboxFusion answers it.
func (h *Handler) runJupyter(w http.ResponseWriter, r *http.Request) {
	var in RunJupyterRequest
	if err := decode(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	cfg, cellTimeout, total, err := h.jupyterConfig(&in)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	resp := &RunJupyterResponse{Status: StatusSuccess, Cells: []CellRunResult{}, Files: map[string]string{}}
	if h.opts.PodName != "" {
		resp.ExecutorPodName = ptr(h.opts.PodName)
	}
	sandboxError := func(err error) {
		resp.Status, resp.Message = StatusSandboxError, err.Error()
		writeJSON(w, http.StatusOK, resp)
	}
	if h.opts.Sessions == nil {
		sandboxError(errors.New("this server runs no sessions: /run_jupyter is not served"))
		return
	}
	release, err := h.admit(r.Context())
	if err != nil {
		sandboxError(err)
		return
	}
	defer release()
	tenant, _ := server.TenantFrom(r.Context())
	if h.opts.ReserveSession != nil {
		// The session below is one of the tenant's sessions open at once.
		unreserve, err := h.opts.ReserveSession(r.Context(), tenant)
		if err != nil {
			sandboxError(err)
			return
		}
		defer unreserve()
	}
	sessions, err := h.opts.Sessions.Tenant(tenant)
	if err != nil {
		sandboxError(err)
		return
	}
	s, err := sessions.Create(r.Context(), cfg)
	if err != nil {
		sandboxError(fmt.Errorf("start the kernel: %w", err))
		return
	}
	defer s.Close()

	start := time.Now()
	cells, timedOut, err := runCells(r.Context(), s, in.Cells, cellTimeout, start.Add(total))
	if err != nil {
		sandboxError(err)
		return
	}
	resp.Driver = &CommandRunResult{Status: CommandFinished, ExecutionTime: seconds(time.Since(start).Seconds()),
		ReturnCode: ptr(0), Stdout: ptr(""), Stderr: ptr("")}
	if timedOut {
		resp.Status = StatusFailed
		resp.Driver.Status, resp.Driver.ReturnCode = CommandTimeLimitExceeded, nil
		writeJSON(w, http.StatusOK, resp)
		return
	}
	resp.Cells = cells
	budget, fetched := fetchBudget(s.Config().Limits), int64(0)
	for _, name := range in.FetchFiles {
		p, err := sandbox.CleanPath(name)
		if err != nil {
			continue
		}
		data, truncated, err := s.Download(p, h.opts.MaxFileBytes)
		if err != nil {
			continue // not there (or not a regular file): left out
		}
		if truncated {
			sandboxError(fmt.Errorf("fetch_files: %s is larger than the server returns of a file (%d bytes)", name, h.opts.MaxFileBytes))
			return
		}
		if fetched += int64(len(data)); fetched > budget {
			sandboxError(errFetchBudget(budget))
			return
		}
		resp.Files[name] = base64.StdEncoding.EncodeToString(data)
	}
	writeJSON(w, http.StatusOK, resp)
}

// jupyterConfig reads a /run_jupyter request: the session's
// configuration, each cell's timeout (0: none) and the total's.
func (h *Handler) jupyterConfig(in *RunJupyterRequest) (session.Config, time.Duration, time.Duration, error) {
	var cfg session.Config
	if in.Cells == nil {
		return cfg, 0, 0, invalid("missing", "cells", "Field required", nil)
	}
	if in.Kernel != nil && *in.Kernel != "python3" {
		return cfg, 0, 0, invalid("literal_error", "kernel", "Input should be 'python3'", *in.Kernel)
	}
	var cellTimeout time.Duration
	if in.CellTimeout != nil && *in.CellTimeout != 0 {
		d, err := timeout("cell_timeout", in.CellTimeout)
		if err != nil {
			return cfg, 0, 0, err
		}
		cellTimeout = d
	}
	total := defaultTotalTimeout
	if in.TotalTimeout != nil {
		d, err := timeout("total_timeout", in.TotalTimeout)
		if err != nil {
			return cfg, 0, 0, err
		}
		total = d
	}
	files, err := inputFiles(in.Files)
	if err != nil {
		return cfg, 0, 0, err
	}
	cfg = h.opts.Session
	cfg.Language = sandbox.Python
	cfg.Files = files
	if in.MemoryLimitMB != nil && *in.MemoryLimitMB > 0 {
		cfg.Limits.Memory = int64(*in.MemoryLimitMB) << 20
	}
	return cfg, cellTimeout, total, nil
}

// runCells runs the cells in s, each within cellTimeout (0: none) and all
// before deadline; timedOut says the deadline came first.
func runCells(ctx context.Context, s *session.Session, cells []string, cellTimeout time.Duration, deadline time.Time) (out []CellRunResult, timedOut bool, err error) {
	for _, code := range cells {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, true, nil
		}
		limit := left
		if cellTimeout > 0 && cellTimeout < left {
			limit = cellTimeout
		}
		c, err := s.Execute(ctx, session.Exec{Code: code, Timeout: limit})
		if err != nil {
			return nil, false, fmt.Errorf("run a cell: %w", err)
		}
		if c.Status == session.StatusTimeout && limit == left {
			return nil, true, nil
		}
		out = append(out, cellResult(c))
	}
	return out, false, nil
}

// cellResult is a cell as SandboxFusion's driver reports it: its streams
// joined, the MIME bundles of its results and displays, and its errors.
func cellResult(c *session.Cell) CellRunResult {
	res := CellRunResult{Display: []map[string]any{}, Error: []map[string]any{}}
	for _, o := range c.Outputs {
		switch o.Type {
		case jupyter.TypeStream:
			if o.Name == "stderr" {
				res.Stderr += o.Text
			} else {
				res.Stdout += o.Text
			}
		case jupyter.TypeExecuteResult, jupyter.TypeDisplayData:
			res.Display = append(res.Display, map[string]any(o.Data))
		case jupyter.TypeError:
			tb := o.Traceback
			if tb == nil {
				tb = []string{}
			}
			res.Error = append(res.Error, map[string]any{"ename": o.Ename, "evalue": o.Evalue, "traceback": tb})
		}
	}
	return res
}
