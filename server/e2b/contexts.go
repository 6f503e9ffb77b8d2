package e2b

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// defaultContext is the sandbox's default context of a language, made on
// first use (Python's is the sandbox's own).
func (s *Service) defaultContext(ctx context.Context, b *box, lang string) (*codeContext, int, error) {
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
func (s *Service) newContext(ctx context.Context, b *box, lang, cwd string) (*codeContext, int, error) {
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
	cfg.Sandbox = b.view
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
	c := &codeContext{id: sess.ID(), lang: lang, cwd: sandboxPath(rel), sess: sess, release: release}
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
// session starts in the workspace, /work: the directory /home/user links
// to, so Python's os.getcwd() says /work; bash's pwd says the path it
// went through).
func (c *codeContext) enterCwd(ctx context.Context) error {
	if c.sess.Language() == sandbox.Bash {
		return silentCell(ctx, c.sess, "cd "+shellQuote(c.cwd))
	}
	if c.cwd == Workdir {
		return nil
	}
	return runHelper(ctx, c.sess, helperCall{op: "chdir", args: map[string]string{"path": c.cwd}}, nil)
}

func (s *Service) dropContext(b *box, c *codeContext) {
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

func (c *codeContext) json() contextJSON { return contextJSON{ID: c.id, Language: c.lang, Cwd: c.cwd} }

func (s *Service) createContext(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	var req struct {
		Language *string `json:"language"`
		Cwd      *string `json:"cwd"`
	}
	if err := readJSON(w, r, &req); err != nil {
		writeText(w, readStatus(err), err.Error())
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
