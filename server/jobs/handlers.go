package jobs

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/input"
	"github.com/coderun/coderun/server/sse"
	"github.com/coderun/coderun/store"
)

// Patterns are the routes the service serves, all under /v1.
var Patterns = []string{
	"POST /v1/jobs",
	"GET /v1/jobs",
	"GET /v1/jobs/{id}",
	"GET /v1/jobs/{id}/events",
	"GET /v1/jobs/{id}/verdicts",
	"GET /v1/jobs/{id}/summary",
	"POST /v1/jobs/{id}/cancel",
	"POST /v1/jobs/{id}/resume",
}

// Handler serves the routes of Patterns. Every request must carry the
// tenant the server authenticated it as (server.WithTenant).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request, string)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := server.TenantFrom(r.Context())
			if !ok {
				server.WriteError(w, http.StatusUnauthorized, server.CodeAuth, "the request was not authenticated")
				return
			}
			h(w, r, tenant)
		})
	}
	withJob := func(h func(http.ResponseWriter, *http.Request, *job)) func(http.ResponseWriter, *http.Request, string) {
		return func(w http.ResponseWriter, r *http.Request, tenant string) {
			j, err := s.get(r.Context(), tenant, r.PathValue("id"))
			if err != nil {
				writeErr(w, r.PathValue("id"), err)
				return
			}
			h(w, r, j)
		}
	}
	handle("POST /v1/jobs", s.create)
	handle("GET /v1/jobs", s.listJobs)
	handle("GET /v1/jobs/{id}", withJob(func(w http.ResponseWriter, _ *http.Request, j *job) { server.WriteJSON(w, http.StatusOK, j.view()) }))
	handle("GET /v1/jobs/{id}/events", withJob(s.events))
	handle("GET /v1/jobs/{id}/verdicts", withJob(s.verdicts))
	handle("GET /v1/jobs/{id}/summary", withJob(func(w http.ResponseWriter, _ *http.Request, j *job) {
		server.WriteJSON(w, http.StatusOK, j.view().Summary)
	}))
	handle("POST /v1/jobs/{id}/cancel", withJob(s.cancelJob))
	handle("POST /v1/jobs/{id}/resume", s.resumeJob)
	return mux
}

// Surface is the service mounted on the server.
func (s *Service) Surface() server.Surface {
	return server.Surface{Name: "jobs", Patterns: Patterns, Handler: s.Handler(), OpenAPI: Doc()}
}

// Request submits a batch.
type Request struct {
	// Problems is the JSON Lines text of the problems, as `coderun eval`
	// reads them: HumanEval, MBPP or generic {id, code, test} lines.
	Problems string `json:"problems"`
	// Samples, when set, is the JSON Lines text of a model's completions
	// ({task_id, completion}), run against their problems' tests instead
	// of the reference solutions.
	Samples string `json:"samples,omitempty"`
	// Format forces the problems' shape: auto (the default), humaneval,
	// mbpp or generic.
	Format string `json:"format,omitempty"`
	// MBPPChallenge adds MBPP's challenge tests.
	MBPPChallenge bool `json:"mbpp_challenge,omitempty"`
	// Strict refuses the whole batch for one bad line (400, naming it);
	// otherwise bad lines are skipped and listed in the job.
	Strict bool `json:"strict,omitempty"`
	// K are the k of pass@k; empty: eval.DefaultK.
	K []int `json:"k,omitempty"`
	// Concurrency bounds the items run at once (at most the server's).
	Concurrency int `json:"concurrency,omitempty"`
	// Limits bound each item; zero fields take the server's.
	Limits input.Limits `json:"limits,omitzero"`
}

// items reads a request's batch.
func (req *Request) items() ([]eval.Item, []Skipped, error) {
	format, err := eval.ParseFormat(req.Format)
	if err != nil {
		return nil, nil, fmt.Errorf("format: %w", err)
	}
	var skipped []Skipped
	input := "problems"
	bad := func(e *eval.LineError) error {
		if req.Strict {
			return fmt.Errorf("%s line %d: %w (strict: nothing was run)", input, e.Line, e.Err)
		}
		skipped = append(skipped, Skipped{Input: input, Line: e.Line, Error: e.Err.Error()})
		return nil
	}
	problems, err := eval.ReadProblems(strings.NewReader(req.Problems), eval.ReadOptions{Format: format, MBPPChallenge: req.MBPPChallenge}, bad)
	if err != nil {
		return nil, nil, err
	}
	if len(problems) == 0 {
		return nil, skipped, errors.New("problems: no problem to run" + why(skipped, "problems"))
	}
	var items []eval.Item
	if req.Samples == "" {
		items, err = eval.References(problems, bad)
	} else {
		input = "samples"
		items, err = eval.ReadSamples(strings.NewReader(req.Samples), "", problems, bad)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(items) == 0 {
		return nil, skipped, errors.New("nothing to run: no item could be made of the lines given" + why(skipped, input))
	}
	return items, skipped, nil
}

// why tells of the lines of input that were skipped, for the answer to a
// batch of which nothing could be run: the first one's error, and how
// many more there were ("" if none was skipped).
func why(skipped []Skipped, input string) string {
	var first *Skipped
	n := 0
	for i := range skipped {
		if skipped[i].Input != input {
			continue
		}
		if first == nil {
			first = &skipped[i]
		}
		n++
	}
	if first == nil {
		return ""
	}
	s := fmt.Sprintf(": %s line %d: %s", input, first.Line, first.Error)
	switch n {
	case 1:
	case 2:
		s += " (and 1 more line skipped)"
	default:
		s += fmt.Sprintf(" (and %d more lines skipped)", n-1)
	}
	return s
}

func (s *Service) create(w http.ResponseWriter, r *http.Request, tenant string) {
	var req Request
	if !server.DecodeJSON(w, r, &req) {
		return
	}
	for _, k := range req.K {
		if k < 1 {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("k: %d is not a positive number of samples", k))
			return
		}
	}
	if req.Concurrency < 0 {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, "concurrency is negative")
		return
	}
	limits, err := req.Limits.Limits()
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
		return
	}
	if err := limits.WithDefaults(s.opts.Limits).WithDefaults(sandbox.DefaultLimits).Validate(); err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, "limits: "+err.Error())
		return
	}
	items, skipped, err := req.items()
	if err != nil {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
		return
	}
	j, err := s.submit(r.Context(), tenant, &req, items, skipped)
	if err != nil {
		writeErr(w, "", err)
		return
	}
	server.WriteJSON(w, http.StatusAccepted, j.view())
}

// writeErr answers a service error: 429 for a tenant running its most
// jobs, 503 once the server shuts down, 404 for an unknown job, 409 for a
// job that is not in the state asked of it, else 500.
func writeErr(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, errTooMany):
		server.WriteRetryAfter(w, 5*time.Second, err.Error())
	case errors.Is(err, errClosed):
		server.WriteError(w, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
	case errors.Is(err, store.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, server.CodeNotFound, fmt.Sprintf("no job %q", id))
	case errors.Is(err, errConflict):
		server.WriteError(w, http.StatusConflict, server.CodeConflict, strings.TrimPrefix(err.Error(), errConflict.Error()+": "))
	default:
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
	}
}

// resumeJob runs an interrupted job's items that have no verdict yet.
func (s *Service) resumeJob(w http.ResponseWriter, r *http.Request, tenant string) {
	j, err := s.resume(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		writeErr(w, r.PathValue("id"), err)
		return
	}
	server.WriteJSON(w, http.StatusAccepted, j.view())
}

// List is the answer of GET /v1/jobs.
type List struct {
	Jobs []View `json:"jobs"`
}

func (s *Service) listJobs(w http.ResponseWriter, r *http.Request, tenant string) {
	out := List{Jobs: []View{}}
	list, err := s.list(r.Context(), tenant)
	if err != nil {
		writeErr(w, "", err)
		return
	}
	for _, j := range list {
		out.Jobs = append(out.Jobs, j.view())
	}
	server.WriteJSON(w, http.StatusOK, out)
}

// Verdicts is the answer of GET /v1/jobs/{id}/verdicts: the verdicts in
// the order they were made, from the one after ?after=N.
type Verdicts struct {
	Verdicts []eval.Verdict `json:"verdicts"`
}

func (s *Service) verdicts(w http.ResponseWriter, r *http.Request, j *job) {
	after, ok := afterParam(w, r.URL.Query().Get("after"))
	if !ok {
		return
	}
	server.WriteJSON(w, http.StatusOK, Verdicts{Verdicts: j.verdictsAfter(after)})
}

func afterParam(w http.ResponseWriter, v string) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("after %q: want a number of verdicts", v))
		return 0, false
	}
	return n, true
}

func (s *Service) cancelJob(w http.ResponseWriter, r *http.Request, j *job) {
	switch st := j.current(); {
	case st == StatusInterrupted:
		// Nobody runs it: it ends here, its verdicts kept.
		if err := s.cancelInterrupted(r.Context(), j); err != nil {
			writeErr(w, j.id, err)
			return
		}
		if j, err := s.get(r.Context(), j.tenant, j.id); err == nil {
			server.WriteJSON(w, http.StatusAccepted, j.view())
			return
		}
	case st != StatusRunning:
		server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("job %s has already ended (%s)", j.id, st))
		return
	case !j.live:
		server.WriteError(w, http.StatusConflict, server.CodeConflict, fmt.Sprintf("job %s is run by another server: cancel it there", j.id))
		return
	}
	j.cancel()
	server.WriteJSON(w, http.StatusAccepted, j.view())
}

// events streams a job's progress as Server-Sent Events: each verdict as
// it is made (event "verdict", id its number from 1), then the job
// (event "progress") after each batch of verdicts, and event "end" with
// the job once it has ended. Last-Event-ID (or ?after=N) skips the
// verdicts a reconnecting client has.
func (s *Service) events(w http.ResponseWriter, r *http.Request, j *job) {
	after, ok := afterParam(w, r.URL.Query().Get("after"))
	if !ok {
		return
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, ok = afterParam(w, v); !ok {
			return
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, "streaming is not supported here")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	var poll <-chan time.Time // a job another server runs: read again
	if !j.live {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		poll = t.C
	}
	for {
		changed := j.watch()
		for _, v := range j.verdictsAfter(after) {
			after++
			if err := sse.Write(w, "verdict", strconv.Itoa(after), v); err != nil {
				return
			}
		}
		view := j.view()
		name := "progress"
		if view.Status != StatusRunning && view.Done <= after {
			name = "end"
		}
		if err := sse.Write(w, name, "", view); err != nil {
			return
		}
		flusher.Flush()
		if name == "end" {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-poll:
			if k, err := s.get(r.Context(), j.tenant, j.id); err == nil {
				j = k
			}
		case <-beat.C:
			if err := sse.KeepAlive(w); err != nil {
				return
			}
		}
	}
}
