package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
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
		writeText(w, http.StatusBadRequest, err.Error())
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
	var c *context_
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
	cell, err := c.sess.Execute(ctx, session.Exec{Code: *req.Code, OnOutput: func(o session.Output) {
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
	if cell.Restarted {
		c.mu.Lock()
		c.count = 0 // a fresh interpreter counts from the start
		c.mu.Unlock()
	}
	out.write(event{"type": "end_of_execution"})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validEnvNames(env map[string]string) error {
	for k, v := range env {
		if !envName.MatchString(k) {
			return fmt.Errorf("env_vars: %q is not a variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("env_vars: the value of %s contains a NUL byte", k)
		}
	}
	return nil
}

// applyEnv sets env in the context's interpreter for one execution, and
// returns what restores the variables as they were.
func applyEnv(ctx context.Context, c *context_, env map[string]string) (func(context.Context) error, error) {
	if len(env) == 0 {
		return nil, nil
	}
	if c.sess.Language() == sandbox.Bash {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		var set, undo strings.Builder
		for _, k := range names {
			fmt.Fprintf(&set, "if [ \"${%[1]s+x}\" ]; then __cre_%[1]s_set=1; __cre_%[1]s=\"$%[1]s\"; else __cre_%[1]s_set=0; fi; export %[1]s=%[2]s\n", k, shellQuote(env[k]))
			fmt.Fprintf(&undo, "if [ \"$__cre_%[1]s_set\" = 1 ]; then export %[1]s=\"$__cre_%[1]s\"; else unset %[1]s; fi; unset __cre_%[1]s __cre_%[1]s_set\n", k)
		}
		if err := silentCell(ctx, c.sess, set.String()); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return silentCell(ctx, c.sess, undo.String()) }, nil
	}
	var res struct {
		Old map[string]*string `json:"old"`
	}
	if err := runHelper(ctx, c.sess, helperCall{op: "env", args: map[string]any{"set": env}}, &res); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return runHelper(ctx, c.sess, helperCall{op: "env", args: map[string]any{"set": res.Old}}, nil)
	}, nil
}

// silentCell runs a bash cell whose outputs nobody sees, and fails if it
// failed.
func silentCell(ctx context.Context, sess *session.Session, code string) error {
	cell, err := sess.Execute(ctx, session.Exec{Code: code, Timeout: helperTimeout})
	if err != nil {
		return err
	}
	if cell.Status != session.StatusOK {
		return fmt.Errorf("%s: %s", cell.Status, strings.TrimSpace(cell.Stderr()))
	}
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// defaultContext is the sandbox's default context of a language, made on
// first use (Python's is the sandbox's own).
func (s *Service) defaultContext(ctx context.Context, b *box, lang string) (*context_, int, error) {
	b.mu.Lock()
	id, ok := b.defaults[lang]
	c := b.contexts[id]
	b.mu.Unlock()
	if ok && c != nil {
		return c, 0, nil
	}
	c, status, err := s.newContext(ctx, b, lang, "")
	if err != nil {
		return nil, status, err
	}
	b.mu.Lock()
	if other, ok := b.contexts[b.defaults[lang]]; ok {
		// Made meanwhile by another request: keep that one.
		b.mu.Unlock()
		s.dropContext(b, c)
		return other, 0, nil
	}
	b.defaults[lang] = c.id
	b.mu.Unlock()
	return c, 0, nil
}

// newContext makes a context of the sandbox: a session of its own, in the
// sandbox's tenant.
func (s *Service) newContext(ctx context.Context, b *box, lang, cwd string) (*context_, int, error) {
	sl, err := sessionLanguage(lang)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	rel := ""
	if cwd != "" {
		if rel, err = workspacePath(cwd); err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("cwd: %w", err)
		}
	}
	sessions, err := s.opts.Manager.Tenant(b.tenant)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	release, err := s.reserveSession(b.tenant)
	if err != nil {
		return nil, http.StatusTooManyRequests, err
	}
	cfg := s.opts.Session
	cfg.Language = sl
	cfg.Env = mergeEnv(cfg.Env, b.env)
	if sl != sandbox.Python {
		cfg.Preload = nil
	}
	sess, err := sessions.Create(ctx, cfg)
	if err != nil {
		release()
		if errors.Is(err, session.ErrFull) {
			return nil, http.StatusServiceUnavailable, err
		}
		return nil, http.StatusInternalServerError, fmt.Errorf("create the context's session: %w", err)
	}
	c := &context_{id: sess.ID(), lang: lang, cwd: sandboxPath(rel), sess: sess, release: release}
	if err := c.enterCwd(ctx); err != nil {
		c.close()
		return nil, http.StatusBadRequest, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		c.close()
		return nil, http.StatusNotFound, fmt.Errorf("%w: %s", errSandboxNotFound, b.id)
	}
	b.contexts[c.id] = c
	b.mu.Unlock()
	return c, 0, nil
}

// enterCwd moves the context's interpreter to its working directory (a
// session starts in the workspace).
func (c *context_) enterCwd(ctx context.Context) error {
	if c.cwd == Workdir {
		return nil
	}
	if c.sess.Language() == sandbox.Bash {
		return silentCell(ctx, c.sess, "cd "+shellQuote(c.cwd))
	}
	return runHelper(ctx, c.sess, helperCall{op: "chdir", args: map[string]string{"path": c.cwd}}, nil)
}

func (s *Service) dropContext(b *box, c *context_) {
	b.mu.Lock()
	if b.contexts[c.id] == c {
		delete(b.contexts, c.id)
	}
	for lang, id := range b.defaults {
		if id == c.id {
			delete(b.defaults, lang)
		}
	}
	b.mu.Unlock()
	c.close()
}

type contextJSON struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (c *context_) json() contextJSON { return contextJSON{ID: c.id, Language: c.lang, Cwd: c.cwd} }

func (s *Service) createContext(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	var req struct {
		Language *string `json:"language"`
		Cwd      *string `json:"cwd"`
	}
	if err := readJSON(w, r, &req); err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	c, status, err := s.newContext(r.Context(), b, normalizeLanguage(deref(req.Language)), deref(req.Cwd))
	if err != nil {
		writeText(w, status, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.json())
}

func (s *Service) listContexts(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	out := []contextJSON{}
	for _, c := range b.contextList() {
		out = append(out, c.json())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) deleteContext(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	id := r.PathValue("id")
	c, ok := b.context(id)
	if !ok {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
		return
	}
	if c == b.primary {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("Context %s is the sandbox's default Python context, which holds its files: it cannot be removed (restart it instead)", id))
		return
	}
	s.dropContext(b, c)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) restartContext(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	id := r.PathValue("id")
	c, ok := b.context(id)
	if !ok {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
		return
	}
	if err := c.sess.Restart(r.Context()); err != nil {
		writeText(w, http.StatusInternalServerError, "restart: "+err.Error())
		return
	}
	c.mu.Lock()
	c.count = 0
	c.mu.Unlock()
	if err := c.enterCwd(r.Context()); err != nil {
		writeText(w, http.StatusInternalServerError, "restart: cwd: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
