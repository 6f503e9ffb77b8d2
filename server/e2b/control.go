package e2b

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// controlRoutes are E2B's control plane (E2B_API_URL): sandboxes are made,
// found, listed, kept alive and killed here.
func (s *Service) controlRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/sandboxes", s.keyAuth(s.createSandbox))
	mux.HandleFunc("POST /sandboxes", s.keyAuth(s.createSandbox))
	mux.HandleFunc("GET /v2/sandboxes", s.keyAuth(s.listSandboxes))
	mux.HandleFunc("GET /sandboxes", s.keyAuth(s.listSandboxes))
	mux.HandleFunc("GET /sandboxes/{id}", s.keyAuth(s.getSandbox))
	mux.HandleFunc("DELETE /sandboxes/{id}", s.keyAuth(s.killSandbox))
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.keyAuth(s.setSandboxTimeout))
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.keyAuth(s.connectSandbox))
	mux.HandleFunc("POST /sandboxes/{id}/refreshes", s.keyAuth(s.refreshSandbox))
	mux.HandleFunc("GET /sandboxes/{id}/metrics", s.keyAuth(s.sandboxMetrics))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("%s %s is not part of the E2B API that coderun serves", r.Method, r.URL.Path))
	})
	return mux
}

type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant string)

// keyAuth serves a control-plane call as the tenant of its API key.
func (s *Service) keyAuth(h tenantHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := s.keyTenant(r)
		if !ok {
			writeJSONError(w, http.StatusUnauthorized, "Invalid API key: coderun takes one of its API keys as E2B_API_KEY")
			return
		}
		if !s.allow(w, tenant, false) {
			return
		}
		h(w, r, tenant)
	}
}

// sandboxJSON is a sandbox as the control plane describes it: what create
// and connect answer, and what list and get answer.
type sandboxJSON struct {
	SandboxID       string            `json:"sandboxID"`
	TemplateID      string            `json:"templateID"`
	ClientID        string            `json:"clientID"`
	EnvdVersion     string            `json:"envdVersion"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	TrafficToken    string            `json:"trafficAccessToken,omitempty"`
	Domain          *string           `json:"domain"`
	Alias           string            `json:"alias,omitempty"`
	StartedAt       string            `json:"startedAt,omitempty"`
	EndAt           string            `json:"endAt,omitempty"`
	State           string            `json:"state,omitempty"`
	CPUCount        int               `json:"cpuCount,omitempty"`
	MemoryMB        int64             `json:"memoryMB,omitempty"`
	DiskSizeMB      int64             `json:"diskSizeMB,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

func (s *Service) describe(b *box, withToken, detail bool) sandboxJSON {
	out := sandboxJSON{SandboxID: b.id, TemplateID: b.template, ClientID: "coderun", EnvdVersion: EnvdVersion}
	if withToken {
		out.EnvdAccessToken, out.TrafficToken = b.token, b.traffic
	}
	if detail {
		lim := b.primary.sess.Config().Limits
		out.StartedAt = b.created.UTC().Format(time.RFC3339Nano)
		end := b.end()
		if end.IsZero() {
			end = b.created.Add(MaxTimeout) // idle eviction ends it sooner
		}
		out.EndAt = end.UTC().Format(time.RFC3339Nano)
		out.State = "running"
		out.CPUCount = 1
		out.MemoryMB = lim.Memory >> 20
		out.DiskSizeMB = lim.WorkspaceBytes >> 20
		out.Metadata = b.metadata
		if out.Metadata == nil {
			out.Metadata = map[string]string{}
		}
	}
	return out
}

// timeoutSeconds reads a timeout in seconds (E2B's unit), within MaxTimeout.
func timeoutSeconds(v *int64) (time.Duration, error) {
	if v == nil {
		return DefaultTimeout, nil
	}
	if *v < 0 {
		return 0, fmt.Errorf("timeout %d: a number of seconds, not negative", *v)
	}
	if *v == 0 {
		return DefaultTimeout, nil
	}
	if time.Duration(*v)*time.Second > MaxTimeout || *v > int64(MaxTimeout/time.Second) {
		return 0, fmt.Errorf("timeout %d s is more than the maximum, %d s", *v, int64(MaxTimeout/time.Second))
	}
	return time.Duration(*v) * time.Second, nil
}

func (s *Service) createSandbox(w http.ResponseWriter, r *http.Request, tenant string) {
	var req struct {
		TemplateID *string           `json:"templateID"`
		Timeout    *int64            `json:"timeout"`
		Metadata   map[string]string `json:"metadata"`
		EnvVars    map[string]string `json:"envVars"`
		Secure     *bool             `json:"secure"`
		AutoPause  *bool             `json:"autoPause"`
		Volumes    []any             `json:"volumeMounts"`
	}
	if err := readJSON(w, r, &req); err != nil {
		writeJSONError(w, readStatus(err), err.Error())
		return
	}
	if req.TemplateID == nil || *req.TemplateID == "" {
		writeJSONError(w, http.StatusBadRequest, `"templateID" is required`)
		return
	}
	timeout, err := timeoutSeconds(req.Timeout)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := validEnvNames(req.EnvVars); err != nil {
		writeJSONError(w, http.StatusBadRequest, "envVars: "+err.Error())
		return
	}
	if req.AutoPause != nil && *req.AutoPause {
		writeJSONError(w, http.StatusBadRequest, "autoPause: coderun does not pause sandboxes")
		return
	}
	if len(req.Volumes) > 0 {
		writeJSONError(w, http.StatusBadRequest, "volumeMounts: coderun has no volumes")
		return
	}
	b, err := s.create(r.Context(), tenant, sandboxOptions{template: *req.TemplateID, timeout: timeout,
		metadata: req.Metadata, env: req.EnvVars, token: true})
	if err != nil {
		writeCreateError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.describe(b, true, false))
}

func writeCreateError(w http.ResponseWriter, err error) {
	switch {
	case isLimit(err):
		writeLimit(w, err, false)
	case errors.Is(err, session.ErrFull):
		w.Header().Set("Retry-After", "5")
		writeJSONError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, sandbox.ErrInvalid):
		writeJSONError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSONError(w, http.StatusInternalServerError, "the sandbox could not be started: "+err.Error())
	}
}

func (s *Service) listSandboxes(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	if st := q.Get("state"); st != "" && st != "running" {
		// Only running sandboxes exist here: none is paused.
		writeJSON(w, http.StatusOK, []sandboxJSON{})
		return
	}
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: a positive number", l))
			return
		}
		limit = n
	}
	out := []sandboxJSON{}
	for _, b := range s.list(tenant) {
		if !metadataMatches(b.metadata, q.Get("metadata")) {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, s.describe(b, false, true))
	}
	writeJSON(w, http.StatusOK, out)
}

// metadataMatches applies list's metadata filter (URL-encoded key=value
// pairs, all of which must match).
func metadataMatches(md map[string]string, filter string) bool {
	if filter == "" {
		return true
	}
	want, err := parseQuery(filter)
	if err != nil {
		return false
	}
	for k, v := range want {
		if md[k] != v {
			return false
		}
	}
	return true
}

func (s *Service) getSandbox(w http.ResponseWriter, r *http.Request, tenant string) {
	b, err := s.lookup(tenant, r.PathValue("id"))
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.describe(b, true, true))
}

// sandboxMetrics answers getMetrics: not served, said so (a 404 would tell
// the SDK the sandbox is gone).
func (s *Service) sandboxMetrics(w http.ResponseWriter, r *http.Request, tenant string) {
	if _, err := s.lookup(tenant, r.PathValue("id")); err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSONError(w, http.StatusNotImplemented, "sandbox metrics are not served by coderun: the programs of its sandboxes (contexts, commands) are each bounded and measured on their own, and no one figure is kept over time")
}

func (s *Service) killSandbox(w http.ResponseWriter, r *http.Request, tenant string) {
	b, err := s.lookup(tenant, r.PathValue("id"))
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	s.kill(b)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) setSandboxTimeout(w http.ResponseWriter, r *http.Request, tenant string) {
	var req struct {
		Timeout *int64 `json:"timeout"`
	}
	if err := readJSON(w, r, &req); err != nil {
		writeJSONError(w, readStatus(err), err.Error())
		return
	}
	if req.Timeout == nil {
		writeJSONError(w, http.StatusBadRequest, `"timeout" (seconds) is required`)
		return
	}
	d, err := timeoutSeconds(req.Timeout)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	b, err := s.lookup(tenant, r.PathValue("id"))
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	b.setTimeout(d, func() { s.kill(b) })
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) refreshSandbox(w http.ResponseWriter, r *http.Request, tenant string) {
	b, err := s.lookup(tenant, r.PathValue("id"))
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	if end := b.end(); !end.IsZero() && time.Until(end) < DefaultTimeout {
		b.setTimeout(DefaultTimeout, func() { s.kill(b) })
	}
	w.WriteHeader(http.StatusNoContent)
}

// connectSandbox answers as create does for a running sandbox, and
// extends its timeout when one is given.
func (s *Service) connectSandbox(w http.ResponseWriter, r *http.Request, tenant string) {
	var req struct {
		Timeout *int64 `json:"timeout"`
	}
	if r.ContentLength != 0 {
		if err := readJSON(w, r, &req); err != nil {
			writeJSONError(w, readStatus(err), err.Error())
			return
		}
	}
	b, err := s.lookup(tenant, r.PathValue("id"))
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	if req.Timeout != nil {
		d, err := timeoutSeconds(req.Timeout)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
		if end := b.end(); end.IsZero() || time.Until(end) < d {
			b.setTimeout(d, func() { s.kill(b) })
		}
	}
	writeJSON(w, http.StatusOK, s.describe(b, true, false))
}

func parseQuery(q string) (map[string]string, error) {
	v, err := url.ParseQuery(q)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, vs := range v {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out, nil
}
