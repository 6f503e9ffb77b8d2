package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sse"
	"github.com/coderun/coderun/session"
)

// sessionRequest creates a session: POST /v1/sessions.
type sessionRequest struct {
	// Language is python (the default), bash or node.
	Language sandbox.Language  `json:"language,omitempty"`
	Limits   limitsIn          `json:"limits"`
	Files    []fileIn          `json:"files,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// IdleTimeout closes the session after this long unused; zero: the
	// server's (its maximum).
	IdleTimeout duration `json:"idle_timeout,omitempty"`
	// Runtime names the runtime whose sandbox the session runs in (linux,
	// gvisor, docker), one the server enables; empty: the server's own.
	Runtime string `json:"runtime,omitempty"`
}

// sessionInfo is a session as the API shows it.
type sessionInfo struct {
	session.Info
	IdleTimeout string `json:"idle_timeout"`
}

func (a *API) info(s *session.Session) sessionInfo {
	a.mu.Lock()
	idle := a.opts.MaxIdle
	if t := a.sessions[s.ID()]; t != nil {
		idle = t.idle
	}
	a.mu.Unlock()
	return sessionInfo{Info: s.Info(), IdleTimeout: idle.String()}
}

func (a *API) createSession(w http.ResponseWriter, r *http.Request) {
	tn, ok := tenant(w, r)
	if !ok {
		return
	}
	var in sessionRequest
	if !server.DecodeJSON(w, r, &in) {
		return
	}
	cfg, idle, err := a.sessionConfig(in)
	if err != nil {
		writeErr(w, err)
		return
	}
	// A runtime other than the server's own: its sandbox, never the pool.
	var irt sandbox.Interactive
	if rt, err := a.runtime(in.Runtime); err != nil {
		writeErr(w, err)
		return
	} else if rt != a.opts.Runtime {
		if irt, err = interactive(rt); err != nil {
			writeErr(w, err)
			return
		}
	}
	sessions, err := a.opts.Sessions.Tenant(tn)
	if err != nil {
		writeErr(w, err)
		return
	}
	release, err := a.opts.Tenants.ReserveSession(tn)
	if err != nil {
		// Sessions the Manager closed on its own may still hold places.
		a.sweep(time.Now())
		release, err = a.opts.Tenants.ReserveSession(tn)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	var s *session.Session
	if irt != nil {
		s, err = sessions.CreateOn(r.Context(), irt, cfg)
	} else {
		s, err = sessions.Create(r.Context(), cfg)
	}
	if err != nil {
		release()
		writeErr(w, err)
		return
	}
	a.mu.Lock()
	a.sessions[s.ID()] = &tracked{tenant: tn, release: release, idle: idle}
	a.mu.Unlock()
	if m := a.opts.Metrics; m != nil {
		m.SandboxStart("session", s.Info().Pooled)
	}
	w.Header().Set("Location", "/v1/sessions/"+s.ID())
	server.WriteJSON(w, http.StatusCreated, a.info(s))
}

// sessionConfig is the session's configuration: the server's defaults for
// the language, with the request's limits, files and environment over them.
func (a *API) sessionConfig(in sessionRequest) (session.Config, time.Duration, error) {
	lang := in.Language
	if lang == "" {
		lang = sandbox.Python
	}
	if !slices.Contains(language.Native(), lang) {
		return session.Config{}, 0, badInput(fmt.Sprintf("language %q has no sessions: want %s", lang, strings.Join(language.NativeNames(), ", ")))
	}
	cfg := a.opts.Session(lang)
	cfg.Language = lang
	limits, err := in.Limits.Over(cfg.Limits.WithDefaults(session.DefaultLimits))
	if err != nil {
		return session.Config{}, 0, err
	}
	if in.Limits.CPUTime == 0 {
		limits.CPUTime = cfg.Limits.CPUTime // a session's zero means no CPU limit per cell
	}
	if err := limits.Within(a.opts.MaxLimits); err != nil {
		return session.Config{}, 0, err
	}
	cfg.Limits = limits
	if cfg.Files, err = files(in.Files); err != nil {
		return session.Config{}, 0, err
	}
	if len(in.Env) > 0 {
		env := map[string]string{}
		for k, v := range cfg.Env {
			env[k] = v
		}
		for k, v := range in.Env {
			env[k] = v
		}
		cfg.Env = env
	}
	idle := time.Duration(in.IdleTimeout)
	switch {
	case idle < 0:
		return session.Config{}, 0, badInput("idle_timeout is negative")
	case idle > a.opts.MaxIdle:
		return session.Config{}, 0, badInput(fmt.Sprintf("idle_timeout %s is longer than the server's %s", idle, a.opts.MaxIdle))
	case idle == 0:
		idle = a.opts.MaxIdle
	}
	return cfg, idle, nil
}

func (a *API) listSessions(w http.ResponseWriter, r *http.Request) {
	tn, ok := tenant(w, r)
	if !ok {
		return
	}
	sessions, err := a.opts.Sessions.Tenant(tn)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := []sessionInfo{}
	for _, info := range sessions.List() {
		a.mu.Lock()
		idle := a.opts.MaxIdle
		if t := a.sessions[info.ID]; t != nil {
			idle = t.idle
		}
		a.mu.Unlock()
		out = append(out, sessionInfo{Info: info, IdleTimeout: idle.String()})
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// session finds the request's session among its tenant's; another
// tenant's answers 404 as an unknown id does.
func (a *API) session(w http.ResponseWriter, r *http.Request) (*session.Session, bool) {
	tn, ok := tenant(w, r)
	if !ok {
		return nil, false
	}
	sessions, err := a.opts.Sessions.Tenant(tn)
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	s, err := sessions.Get(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	return s, true
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.session(w, r); ok {
		server.WriteJSON(w, http.StatusOK, a.info(s))
	}
}

func (a *API) deleteSession(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	err := s.Close()
	a.untrack(s.ID())
	if err != nil && !errors.Is(err, session.ErrClosed) {
		writeErr(w, fmt.Errorf("close session %s: %w", s.ID(), err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// untrack gives the session's place back to its tenant.
func (a *API) untrack(id string) {
	a.mu.Lock()
	t := a.sessions[id]
	delete(a.sessions, id)
	a.mu.Unlock()
	if t != nil {
		t.release()
	}
}

// reap closes sessions past their own idle timeout and forgets those the
// Manager closed, until Close.
func (a *API) reap() {
	defer a.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case now := <-t.C:
			a.sweep(now)
		}
	}
}

// sweep does one round of reap.
func (a *API) sweep(now time.Time) {
	type entry struct {
		id string
		t  *tracked
	}
	a.mu.Lock()
	all := make([]entry, 0, len(a.sessions))
	for id, t := range a.sessions {
		all = append(all, entry{id, t})
	}
	a.mu.Unlock()
	for _, e := range all {
		sessions, err := a.opts.Sessions.Tenant(e.t.tenant)
		if err != nil {
			continue
		}
		s, err := sessions.Get(e.id)
		if err != nil {
			a.untrack(e.id) // evicted or closed
			continue
		}
		info := s.Info()
		if !info.Busy && now.Sub(info.LastUsed) > e.t.idle {
			a.opts.Logger.Info("session idle: closed", "session", e.id, "tenant", e.t.tenant, "idle_timeout", e.t.idle.String())
			_ = s.Close()
			a.untrack(e.id)
		}
	}
}

// executeRequest is a cell: POST /v1/sessions/{id}/execute.
type executeRequest struct {
	Code string `json:"code"`
	// Timeout overrides the session's time limit for this cell.
	Timeout duration `json:"timeout,omitempty"`
}

// execute runs a cell. With "Accept: text/event-stream" its outputs are
// sent as Server-Sent Events as they happen ("output" events), then the
// cell ("done"); otherwise the cell is answered once it has ended. A
// client that goes away interrupts its cell.
func (a *API) execute(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	var in executeRequest
	if !server.DecodeJSON(w, r, &in) {
		return
	}
	switch {
	case strings.TrimSpace(in.Code) == "":
		badRequest(w, "code is empty")
		return
	case in.Timeout < 0:
		badRequest(w, "timeout is negative")
		return
	case time.Duration(in.Timeout) > sandbox.MaxLimits.WallTime:
		badRequest(w, fmt.Sprintf("timeout %s is longer than %s", time.Duration(in.Timeout), sandbox.MaxLimits.WallTime))
		return
	case a.opts.MaxLimits.WallTime > 0 && time.Duration(in.Timeout) > a.opts.MaxLimits.WallTime:
		badRequest(w, fmt.Sprintf("timeout %s is longer than this server allows (at most %s)", time.Duration(in.Timeout), a.opts.MaxLimits.WallTime))
		return
	}
	tn, _ := server.TenantFrom(r.Context())
	release, err := a.opts.Tenants.StartExecution(tn)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer release()
	ex := session.Exec{Code: in.Code, Timeout: time.Duration(in.Timeout)}
	var stream *eventStream
	var sent streamed // the outputs sent as events
	if wantsEvents(r) {
		stream = &eventStream{w: w}
		ex.OnOutput = func(o session.Output) {
			sent.note(o)
			stream.send("output", o)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer func() {
			close(stop)
			wg.Wait() // no write after the handler returns
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(keepAliveEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					stream.keepAlive()
				}
			}
		}()
	}
	cell, err := s.Execute(r.Context(), ex)
	if server.ShuttingDown(r.Context()) {
		// The grace period of a shutdown ended with the cell, which was
		// interrupted: say so (a stream after the outputs it has).
		msg := server.ErrShutdown.Error() + ": the cell was interrupted"
		if stream != nil {
			if err == nil {
				for _, o := range sent.unsent(cell.Outputs) {
					stream.send("output", o)
				}
			}
			stream.send("error", server.Error{Code: server.CodeUnavailable, Message: msg})
			return
		}
		server.WriteError(w, http.StatusServiceUnavailable, server.CodeUnavailable, msg)
		return
	}
	if err != nil {
		if stream != nil && stream.isStarted() {
			stream.send("error", server.Error{Code: server.CodeInternal, Message: err.Error()})
			return
		}
		writeErr(w, err)
		return
	}
	if m := a.opts.Metrics; m != nil {
		m.Execution("cell", string(cell.Status), cell.Duration)
	}
	if cell.Outputs == nil {
		cell.Outputs = []session.Output{} // a list, even empty
	}
	if stream != nil {
		// The outputs the session added as the cell ended (the
		// interpreter's exit or death, a bash cell's failed last command,
		// the time limit's note) do not reach OnOutput: send them first.
		for _, o := range sent.unsent(cell.Outputs) {
			stream.send("output", o)
		}
		stream.send("done", cell)
		return
	}
	server.WriteJSON(w, http.StatusOK, cell)
}

// streamed records the outputs a cell sent as events as they arrived:
// the text of each stream and the number of errors.
type streamed struct {
	text   map[string]string
	errors int
}

func (s *streamed) note(o session.Output) {
	switch o.Type {
	case session.TypeStream:
		if s.text == nil {
			s.text = map[string]string{}
		}
		s.text[o.Name] += o.Text
	case session.TypeError:
		s.errors++
	}
}

// unsent are the outputs of the ended cell that were not sent: its errors
// past the number sent (errors are stored one each, in order), and the
// stream outputs whose text is not part of what was sent of that stream
// (the pieces sent are stored merged, the session's own notes apart).
func (s *streamed) unsent(outputs []session.Output) []session.Output {
	var out []session.Output
	errs := s.errors
	for _, o := range outputs {
		switch o.Type {
		case session.TypeError:
			if errs > 0 {
				errs--
				continue
			}
		case session.TypeStream:
			if strings.Contains(s.text[o.Name], o.Text) {
				continue
			}
		default:
			continue
		}
		out = append(out, o)
	}
	return out
}

func wantsEvents(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(strings.ToLower(mt)) == "text/event-stream" {
			return true
		}
	}
	return false
}

// eventStream writes Server-Sent Events, each flushed at once; the
// headers go with the first. The cell's outputs and the keep-alives come
// from different goroutines.
type eventStream struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool
	failed  bool
}

// keepAliveEvery is how often a stream without events says it is alive,
// so that proxies do not close it under a long, silent cell.
const keepAliveEvery = 15 * time.Second

func (e *eventStream) send(event string, v any) {
	e.write(func() error { return sse.Write(e.w, event, "", v) })
}

func (e *eventStream) keepAlive() { e.write(func() error { return sse.KeepAlive(e.w) }) }

// isStarted reports whether the stream's headers have been sent.
func (e *eventStream) isStarted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

func (e *eventStream) write(f func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed {
		return
	}
	if !e.started {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	if err := f(); err != nil {
		e.failed = true // the client went away; the request's context ends the cell
		return
	}
	if err := http.NewResponseController(e.w).Flush(); err != nil {
		e.failed = true
	}
}

func (a *API) interrupt(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.session(w, r); ok {
		s.Interrupt()
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *API) restart(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	if err := s.Restart(r.Context()); err != nil {
		writeErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, a.info(s))
}

func (a *API) cells(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.session(w, r); ok {
		cells := s.History()
		if cells == nil {
			cells = []session.Cell{}
		}
		for i := range cells {
			if cells[i].Outputs == nil {
				cells[i].Outputs = []session.Output{}
			}
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"cells": cells})
	}
}
