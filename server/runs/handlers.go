package runs

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/input"
	"github.com/coderun/coderun/store"
)

// Patterns are the routes the service serves (net/http ServeMux
// patterns), all under /v1.
var Patterns = []string{
	"POST /v1/runs",
	"GET /v1/runs",
	"GET /v1/runs/{id}",
	"GET /v1/runs/{id}/steps",
	"GET /v1/runs/{id}/events",
	"GET /v1/runs/{id}/files",
	"GET /v1/runs/{id}/files/{path...}",
	"GET /v1/runs/{id}/notebook",
	"POST /v1/runs/{id}/approve",
	"POST /v1/runs/{id}/reject",
	"POST /v1/runs/{id}/cancel",
	"POST /v1/runs/{id}/resume",
	"GET /v1/review",
	"GET /v1/stats",
}

// Handler serves the routes of Patterns. Every request must carry the
// tenant the server authenticated it as (server.WithTenant).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request, store.Tenant)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			name, ok := server.TenantFrom(r.Context())
			if !ok {
				server.WriteError(w, http.StatusUnauthorized, server.CodeAuth, "the request was not authenticated")
				return
			}
			st, err := s.tenant(name)
			if err != nil {
				server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
				return
			}
			h(w, r, st)
		})
	}
	handle("POST /v1/runs", s.start)
	handle("GET /v1/runs", s.list)
	handle("GET /v1/runs/{id}", s.get)
	handle("GET /v1/runs/{id}/steps", s.steps)
	handle("GET /v1/runs/{id}/events", s.events)
	handle("GET /v1/runs/{id}/files", s.files)
	handle("GET /v1/runs/{id}/files/{path...}", s.file)
	handle("GET /v1/runs/{id}/notebook", s.notebook)
	handle("POST /v1/runs/{id}/approve", s.decide(agent.Approve))
	handle("POST /v1/runs/{id}/reject", s.decide(agent.Reject))
	handle("POST /v1/runs/{id}/cancel", s.cancel)
	handle("POST /v1/runs/{id}/resume", s.resume)
	handle("GET /v1/review", s.review)
	handle("GET /v1/stats", s.stats)
	return mux
}

// Surface is the service mounted on the server.
func (s *Service) Surface() server.Surface {
	return server.Surface{Name: "runs", Patterns: Patterns, Handler: s.Handler(), OpenAPI: Doc()}
}

// RunView is a run as the API shows it: the stored run with the status
// shown now (interrupted for a run no process drives).
type RunView struct {
	*store.Run
	Status store.Status `json:"status"`
	// Driven is set while this server drives the run.
	Driven bool `json:"driven"`
	// Standing says more of a run that waits or was interrupted: approved
	// and waiting to run, where its process stopped, what resuming does.
	Standing *agent.Standing `json:"standing,omitempty"`
}

func (s *Service) view(st store.Tenant, r *store.Run) RunView {
	v := RunView{Run: r, Status: r.Shown(), Driven: s.driven(runKey{st.Name(), r.ID})}
	if !r.Status.Final() {
		if standing, err := agent.RunStanding(r); err == nil && standing.Note != "" {
			v.Standing = &standing
		}
	}
	return v
}

// StartRequest starts a run.
type StartRequest struct {
	// Task is the task in the user's words.
	Task string `json:"task"`
	// Model is "provider:model"; empty: the server's.
	Model string `json:"model,omitempty"`
	// Mode is "single" or "steps"; Format "tool" or "fenced".
	Mode   string `json:"mode,omitempty"`
	Format string `json:"format,omitempty"`
	// Approve is "defer" (the default: the run pauses for a decision
	// through the API), "all" or "none".
	Approve string `json:"approve,omitempty"`
	// Files are the user's input files.
	Files []input.File `json:"files,omitempty"`
	// The budgets; absent fields take the server's.
	MaxRetries     *int           `json:"max_retries,omitempty"`
	TimeoutRetries *int           `json:"timeout_retries,omitempty"`
	MaxSteps       int            `json:"max_steps,omitempty"`
	MaxTokens      int64          `json:"max_tokens,omitempty"`
	MaxTime        input.Duration `json:"max_time,omitempty"`
	// Limits bound each execution.
	Limits input.Limits `json:"limits,omitzero"`
}

// settings checks a start request; the message of the error is the
// client's.
func (req *StartRequest) settings() (Settings, error) {
	set := Settings{Model: strings.TrimSpace(req.Model), MaxRetries: req.MaxRetries, TimeoutRetries: req.TimeoutRetries,
		MaxSteps: req.MaxSteps, MaxTokens: req.MaxTokens, MaxTime: time.Duration(req.MaxTime)}
	if req.Mode != "" {
		m, err := agent.ParseMode(req.Mode)
		if err != nil {
			return set, errors.New("mode: want single or steps")
		}
		set.Mode = m
	}
	switch f := agent.Format(req.Format); f {
	case "", agent.FormatTool, agent.FormatFenced:
		set.Format = f
	default:
		return set, errors.New("format: want tool or fenced")
	}
	switch req.Approve {
	case "", ApproveDefer, "ask":
		set.Approve = ApproveDefer
	case ApproveAll, ApproveNone:
		set.Approve = req.Approve
	default:
		return set, errors.New("approve: want defer, all or none")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"max_steps", int64(req.MaxSteps)}, {"max_tokens", req.MaxTokens}, {"max_time", int64(req.MaxTime)}} {
		if c.v < 0 {
			return set, fmt.Errorf("%s is negative", c.name)
		}
	}
	for name, v := range map[string]*int{"max_retries": req.MaxRetries, "timeout_retries": req.TimeoutRetries} {
		if v != nil && *v < 0 {
			return set, fmt.Errorf("%s: %d is negative", name, *v)
		}
	}
	var err error
	set.Limits, err = req.Limits.Limits()
	return set, err
}

func (s *Service) task(req *StartRequest) (agent.Task, error) {
	t := agent.Task{Prompt: strings.TrimSpace(req.Task)}
	if t.Prompt == "" {
		return t, errors.New("task: empty; say what the run should do")
	}
	var err error
	t.Files, err = input.Files(req.Files, s.opts.MaxFileBytes)
	return t, err
}

func (s *Service) start(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	var req StartRequest
	if !server.DecodeJSON(w, r, &req) {
		return
	}
	set, err := req.settings()
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
		return
	}
	task, err := s.task(&req)
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	id, err := s.drive(st.Name(), func(observe func(agent.Event)) (*agent.Agent, error) {
		return s.opts.Agents.Agent(ctx, st, set, observe)
	}, func(ctx context.Context, ag *agent.Agent) (*agent.Result, error) {
		return ag.Run(ctx, task)
	}, false)
	if err != nil {
		s.driveError(w, err)
		return
	}
	s.writeRun(w, r, st, id, http.StatusAccepted)
}

// driveError answers a failure to start driving a run.
func (s *Service) driveError(w http.ResponseWriter, err error) {
	var se *SettingsError
	switch {
	case errors.As(err, &se):
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, se.Error())
	case errors.Is(err, errTooMany):
		server.WriteRetryAfter(w, 5*time.Second, err.Error())
	case errors.Is(err, errClosed):
		server.WriteError(w, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
	case errors.Is(err, store.ErrNotOwner), errors.Is(err, store.ErrEnded):
		server.WriteError(w, http.StatusConflict, server.CodeConflict, err.Error())
	default:
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
	}
}

// lookup finds the run the path names in the tenant's records, or answers
// 404.
func lookup(w http.ResponseWriter, r *http.Request, st store.Tenant) (*store.Run, bool) {
	id := r.PathValue("id")
	run, err := st.GetRun(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, server.CodeNotFound, fmt.Sprintf("no run %q", id))
		return nil, false
	case err != nil:
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return nil, false
	}
	return run, true
}

func (s *Service) writeRun(w http.ResponseWriter, r *http.Request, st store.Tenant, id string, status int) {
	run, err := st.GetRun(r.Context(), id)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	server.WriteJSON(w, status, s.view(st, run))
}

// RunList is the answer of GET /v1/runs.
type RunList struct {
	Runs []RunView `json:"runs"`
}

func (s *Service) list(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	q := r.URL.Query()
	f := store.Filter{Status: store.Status(q.Get("status"))}
	switch f.Status {
	case "", store.StatusRunning, store.StatusAwaitingApproval, store.StatusSucceeded, store.StatusFailed,
		store.StatusCancelled, store.StatusInterrupted:
	default:
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("status %q: want running, awaiting_approval, succeeded, failed, cancelled or interrupted", f.Status))
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("limit %q: want 1 to 1000", v))
			return
		}
		limit = n
	}
	search := strings.ToLower(strings.TrimSpace(q.Get("q")))
	if search == "" {
		f.Limit = limit
	}
	runs, err := st.ListRuns(r.Context(), f)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	out := RunList{Runs: []RunView{}}
	for _, run := range runs {
		if search != "" && !matches(run, search) {
			continue
		}
		if len(out.Runs) == limit {
			break
		}
		out.Runs = append(out.Runs, s.view(st, run))
	}
	server.WriteJSON(w, http.StatusOK, out)
}

// matches reports whether a run's id, task, model, outcome or answer
// contains the lower-cased search text.
func matches(r *store.Run, search string) bool {
	for _, f := range []string{r.ID, r.Task, r.Model, r.Outcome, r.Answer} {
		if strings.Contains(strings.ToLower(f), search) {
			return true
		}
	}
	return false
}

func (s *Service) get(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	if run, ok := lookup(w, r, st); ok {
		server.WriteJSON(w, http.StatusOK, s.view(st, run))
	}
}

// StepList is the answer of GET /v1/runs/{id}/steps.
type StepList struct {
	Steps []store.Step `json:"steps"`
}

func (s *Service) steps(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	steps, err := st.Steps(r.Context(), run.ID)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	if steps == nil {
		steps = []store.Step{}
	}
	server.WriteJSON(w, http.StatusOK, StepList{Steps: steps})
}

// FileList is the answer of GET /v1/runs/{id}/files: the files without
// their contents.
type FileList struct {
	Files []store.File `json:"files"`
}

func (s *Service) files(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	role := r.URL.Query().Get("role")
	if role != "" && role != store.RoleInput && role != store.RoleOutput {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("role %q: want input or output", role))
		return
	}
	files, err := st.Files(r.Context(), run.ID, role)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	out := FileList{Files: []store.File{}}
	for _, f := range files {
		f.Content = nil
		out.Files = append(out.Files, f)
	}
	server.WriteJSON(w, http.StatusOK, out)
}

// file serves one file's content: the output of that path if there is
// one, else the input (?role= chooses).
func (s *Service) file(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	p, err := sandbox.CleanPath(r.PathValue("path"))
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
		return
	}
	role := r.URL.Query().Get("role")
	files, err := st.Files(r.Context(), run.ID, role)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	var found *store.File
	for i := range files {
		f := &files[i]
		if f.Path == p && f.Kind == "file" && (found == nil || f.Role == store.RoleOutput) {
			found = f
		}
	}
	if found == nil {
		server.WriteError(w, http.StatusNotFound, server.CodeNotFound, fmt.Sprintf("run %s has no file %q", run.ID, p))
		return
	}
	ct := mime.TypeByExtension(path.Ext(p))
	if ct == "" || strings.HasPrefix(ct, "text/html") || strings.Contains(ct, "svg") || strings.Contains(ct, "javascript") {
		// What the code wrote is not for the browser to run.
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox")
	if found.Truncated {
		w.Header().Set("X-Coderun-Truncated", "true")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(found.Content)))
	_, _ = w.Write(found.Content)
}

func (s *Service) notebook(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	nb, err := agent.Notebook(r.Context(), st, run.ID)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-ipynb+json")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "run-"+run.ID+".ipynb"))
	_, _ = w.Write(nb)
}

// Decision approves or rejects the code a run waits on.
type Decision struct {
	// Note is the reviewer's note; on a rejection it goes to the model.
	Note string `json:"note,omitempty"`
	// By names who decided; empty: "api".
	By string `json:"by,omitempty"`
	// Always approves, for the rest of the run, code flagged by the same
	// rules (approve only).
	Always bool `json:"always,omitempty"`
}

// decide records a decision about the code a run waits on and resumes
// the run, which then runs the code or goes back to the model.
func (s *Service) decide(v agent.Verdict) func(http.ResponseWriter, *http.Request, store.Tenant) {
	return func(w http.ResponseWriter, r *http.Request, st store.Tenant) {
		var d Decision
		if r.ContentLength != 0 && !server.DecodeJSON(w, r, &d) {
			return
		}
		if d.Always && v != agent.Approve {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, "always: only an approval can be for always")
			return
		}
		run, ok := lookup(w, r, st)
		if !ok {
			return
		}
		if run.Status != store.StatusAwaitingApproval {
			server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("run %s is %s, not awaiting approval", run.ID, run.Shown()))
			return
		}
		verdict := v
		if d.Always {
			verdict = agent.Always
		}
		by := strings.TrimSpace(d.By)
		if by == "" {
			by = "api"
		}
		res, err := agent.Decide(r.Context(), st, run.ID, verdict, by, strings.TrimSpace(d.Note))
		if err != nil {
			s.driveError(w, fmt.Errorf("%w", err))
			return
		}
		if !res.Status.Final() {
			if _, err := s.resumeRun(r.Context(), st, run.ID, false); err != nil {
				s.driveError(w, fmt.Errorf("the decision is recorded, but the run could not go on now (resume it with POST /v1/runs/%s/resume): %w", run.ID, err))
				return
			}
		}
		s.writeRun(w, r, st, run.ID, http.StatusOK)
	}
}

// resumeRun drives a stored run again; cancel ends it at once (a paused
// run cancelled).
func (s *Service) resumeRun(ctx context.Context, st store.Tenant, id string, cancel bool) (string, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	set := Settings{Model: run.Model, Mode: agent.Mode(run.Mode), Approve: ApproveDefer}
	return s.drive(st.Name(), func(observe func(agent.Event)) (*agent.Agent, error) {
		return s.opts.Agents.Agent(ctx, st, set, observe)
	}, func(ctx context.Context, ag *agent.Agent) (*agent.Result, error) {
		return ag.Resume(ctx, run.ID)
	}, cancel)
}

// cancel cancels a run: one this server drives at once; a paused or
// interrupted one by taking it up only to end it.
func (s *Service) cancel(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	switch {
	case s.cancelDriven(runKey{st.Name(), run.ID}):
	case run.Status.Final():
		server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("run %s has already ended (%s)", run.ID, run.Status))
		return
	case run.Shown() == store.StatusRunning:
		server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("run %s is driven by another process", run.ID))
		return
	default:
		if _, err := s.resumeRun(r.Context(), st, run.ID, true); err != nil {
			s.driveError(w, err)
			return
		}
	}
	s.writeRun(w, r, st, run.ID, http.StatusAccepted)
}

// resume takes up an interrupted run (its process stopped, or the server
// shut down while driving it).
func (s *Service) resume(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	if shown := run.Shown(); shown != store.StatusInterrupted {
		server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("run %s is %s: only an interrupted run can be resumed (approve or reject one awaiting approval)", run.ID, shown))
		return
	}
	if _, err := s.resumeRun(r.Context(), st, run.ID, false); err != nil {
		s.driveError(w, err)
		return
	}
	s.writeRun(w, r, st, run.ID, http.StatusAccepted)
}

// ReviewList is the answer of GET /v1/review.
type ReviewList struct {
	Items []store.ReviewItem `json:"items"`
}

func (s *Service) review(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	q := r.URL.Query()
	all := false
	if v := q.Get("all"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("all %q: want true or false", v))
			return
		}
		all = b
	}
	items, err := st.Reviews(r.Context(), q.Get("run"), all)
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
		return
	}
	if items == nil {
		items = []store.ReviewItem{}
	}
	server.WriteJSON(w, http.StatusOK, ReviewList{Items: items})
}
