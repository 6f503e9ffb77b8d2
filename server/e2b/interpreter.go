package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// keepaliveEvery is how often /execute writes a keepalive event while a
// cell writes nothing.
const keepaliveEvery = 5 * time.Second

// maxExecuteRequest bounds /execute's and /contexts' request bodies.
const maxExecuteRequest = sandbox.MaxCodeBytes + 1<<20

// interpreterRoutes are the code interpreter's routes (E2B's port 49999).
func (s *Service) interpreterRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"OK"`))
	})
	mux.HandleFunc("POST /execute", s.execute)
	mux.HandleFunc("POST /contexts", s.createContext)
	mux.HandleFunc("GET /contexts", s.listContexts)
	mux.HandleFunc("DELETE /contexts/{id}", s.deleteContext)
	mux.HandleFunc("POST /contexts/{id}/restart", s.restartContext)
	return mux
}

// normalizeLanguage is E2B's: lower case, trimmed, js and ts spelled out,
// empty meaning python.
func normalizeLanguage(l string) string {
	l = strings.ToLower(strings.TrimSpace(l))
	switch l {
	case "":
		return "python"
	case "js":
		return "javascript"
	case "ts":
		return "typescript"
	}
	return l
}

// sessionLanguage is the coderun language of E2B's, or an error naming the
// languages served.
func sessionLanguage(l string) (sandbox.Language, error) {
	switch l {
	case "python":
		return sandbox.Python, nil
	case "bash":
		return sandbox.Bash, nil
	}
	return "", fmt.Errorf("language %q is not supported by coderun's code interpreter (python, bash)", l)
}

// readStatus is the status of a readJSON error: 413 for a body past its
// cap, else 400.
func readStatus(err error) int {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxExecuteRequest))
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return errors.New("empty request body: a JSON object is required")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	return nil
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

type executeRequest struct {
	Code      *string           `json:"code"`
	ContextID *string           `json:"context_id"`
	Language  *string           `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// ndjson writes /execute's events, one JSON object a line, flushed.
type ndjson struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	last time.Time
}

func (n *ndjson) write(ev event) {
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(errorEvent("EncodingError", err.Error(), ""))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = n.w.Write(append(b, '\n'))
	if f, ok := n.w.(http.Flusher); ok {
		f.Flush()
	}
	n.last = time.Now()
}

// keepalive writes a keepalive event whenever nothing was written for
// keepaliveEvery, until stop is closed.
func (n *ndjson) keepalive(stop <-chan struct{}) {
	t := time.NewTicker(keepaliveEvery / 5)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			n.mu.Lock()
			idle := time.Since(n.last) >= keepaliveEvery
			n.mu.Unlock()
			if idle {
				n.write(event{"type": "keepalive"})
			}
		}
	}
}

func (s *Service) execute(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	var req executeRequest
	if err := readJSON(w, r, &req); err != nil {
		writeText(w, readStatus(err), err.Error())
		return
	}
	if req.Code == nil {
		writeText(w, http.StatusBadRequest, `"code" is required`)
		return
	}
	ctxID, lang := deref(req.ContextID), deref(req.Language)
	if ctxID != "" && lang != "" {
		writeText(w, http.StatusBadRequest, "Only one of context_id or language can be provided")
		return
	}
	if err := validEnvNames(req.EnvVars); err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	var c *codeContext
	if ctxID != "" {
		var ok bool
		if c, ok = b.context(ctxID); !ok {
			writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", ctxID))
			return
		}
	} else {
		var status int
		var err error
		if c, status, err = s.defaultContext(r.Context(), b, normalizeLanguage(lang)); err != nil {
			writeText(w, status, err.Error())
			return
		}
	}

	release, err := s.startExecution(b.tenant)
	if err != nil {
		writeLimit(w, err, false)
		return
	}
	defer release()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out := &ndjson{w: w, last: time.Now()}
	stop := make(chan struct{})
	defer close(stop)
	go out.keepalive(stop)

	ctx := r.Context() // the client going away interrupts the cell
	restore, err := applyEnv(ctx, c, req.EnvVars)
	if err != nil {
		out.write(errorEvent("EnvironmentError", "could not set env_vars: "+err.Error(), ""))
		out.write(event{"type": "end_of_execution"})
		return
	}
	// As E2B's interpreter, the count comes first (when the kernel takes
	// the code): the executions E2B ran in this context, this one included.
	c.mu.Lock()
	c.count++
	out.write(event{"type": "number_of_executions", "execution_count": c.count})
	c.mu.Unlock()
	streamedErrors := 0 // the cell's error outputs already written
	cell, err := c.sess.Execute(ctx, session.Exec{Code: *req.Code, OnOutput: func(o session.Output) {
		if o.Type == session.TypeError {
			streamedErrors++
		}
		for _, ev := range outputEvents(o, time.Now()) {
			out.write(ev)
		}
	}})
	if restore != nil {
		_ = restore(context.WithoutCancel(ctx))
	}
	if err != nil {
		name := "ExecutionError"
		if errors.Is(err, sandbox.ErrInvalid) {
			name = "ValueError"
		}
		out.write(errorEvent(name, err.Error(), ""))
		out.write(event{"type": "end_of_execution"})
		return
	}
	// The errors the session adds once the cell is over (its interpreter
	// exited or died, a bash cell's last command failed or was
	// interrupted) were not streamed: write them, so that the SDK's
	// execution.error tells of them.
	for _, o := range cell.Outputs {
		if o.Type != session.TypeError {
			continue
		}
		if streamedErrors > 0 {
			streamedErrors--
			continue
		}
		for _, ev := range outputEvents(o, time.Now()) {
			out.write(ev)
		}
	}
	if cell.Restarted {
		c.mu.Lock()
		c.count = 0 // a fresh interpreter counts from the start
		c.mu.Unlock()
	}
	if server.ShuttingDown(ctx) {
		out.write(errorEvent("ServiceUnavailable", server.ErrShutdown.Error()+": the execution was interrupted", ""))
	}
	out.write(event{"type": "end_of_execution"})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
