package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server.
type Options struct {
	// Keys authenticate requests. Without keys a server refuses to start,
	// unless InsecureLocal is set.
	Keys Keys
	// InsecureLocal opens the server without keys, for local tools and
	// tests: a request without a key is the DefaultTenant's (one with a
	// key is still checked, if any key is configured). It listens on
	// loopback addresses only.
	InsecureLocal bool
	// Surfaces are mounted on the server, in order.
	Surfaces []Surface
	// Tenants enforces the per-tenant request rate (the other limits are
	// the surfaces'); nil means no limits.
	Tenants *Tenants
	// MaxBody caps a request's body in bytes; past it the body reads fail
	// (a JSON body: 413). Default DefaultMaxBody.
	MaxBody int64
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers; IdleTimeout how long a kept-alive connection may
	// wait for its next request. Defaults DefaultReadHeaderTimeout and
	// DefaultIdleTimeout.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxConnections bounds the connections open at once (see
	// LimitConnections); 0: DefaultMaxConnections.
	MaxConnections int
	// MaxHeaderBytes bounds a request's headers (they are held in memory
	// whole before any handler, or the key check, sees them): past it,
	// 431. Default DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// BodyTimeout and BodyMinRate bound how slowly a client may send a
	// request's body (see BodyRules: a pause of at most BodyTimeout, and
	// at least BodyMinRate bytes/s on average after it). They bound sending
	// the request only: a cell that runs for minutes, or a stream of
	// events, is not cut by them. BodyTimeout default DefaultBodyTimeout;
	// BodyMinRate 0: no minimum (DefaultBodyMinRate is coderun serve's).
	BodyTimeout time.Duration
	BodyMinRate int64
	// WriteTimeout is the longest a client may leave the answer unread:
	// a write (or flush) of it that the client has not taken within it
	// cuts the connection (see StallGuard). It bounds each write, not the
	// answer: streams and large downloads go on while the client reads.
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Grace is how long a shutdown waits for requests in flight (running
	// cells) to finish before cutting them off. Default DefaultGrace.
	Grace time.Duration
	// Ready reports whether the server can serve (/readyz); nil: always
	// once started.
	Ready func(context.Context) error
	// Metrics are served at /metrics; nil makes new ones.
	Metrics *Metrics
	// OnShutdown are called, each in its own goroutine, as a shutdown
	// begins, while requests in flight still run: a surface whose
	// requests would not end by themselves (a stream following an agent
	// run) ends them here instead of holding the shutdown for the whole
	// grace period.
	OnShutdown []func()
	// Logger logs every request and the server's life; nil discards.
	Logger *slog.Logger
	// Info describes the API in the OpenAPI document.
	Info APIInfo
}

// Defaults of Options.
const (
	DefaultMaxBody           = 32 << 20
	DefaultGrace             = 30 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultBodyTimeout       = 30 * time.Second
	DefaultBodyMinRate       = 1 << 10
	DefaultWriteTimeout      = time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConnections    = 4096
)

// ErrShutdown is the cause with which the contexts of the requests still
// running end when a shutdown's grace period is over (see Serve): their
// handlers answer then, saying the server shut down (ShuttingDown).
var ErrShutdown = errors.New("the server is shutting down")

// ShuttingDown reports whether ctx (a request's) ended because the server
// shut down: its handler should answer 503 (an event stream: a final
// event saying so) rather than a cancelled request's answer.
func ShuttingDown(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrShutdown) }

// finalAnswer is how much of the grace period is kept for the requests
// still running at its end to answer (ErrShutdown) before their
// connections are closed.
func finalAnswer(grace time.Duration) time.Duration { return min(grace/4, 5*time.Second) }

// Server is coderun's HTTP server: it authenticates requests (setting the
// tenant, see WithTenant), enforces the tenants' request rate, caps
// request bodies, logs each request with its id, counts it in the
// metrics, and routes it to the surface mounted for it. It serves
// /healthz, /readyz, /metrics and /openapi.json itself.
type Server struct {
	opts     Options
	cop      *http.CrossOriginProtection // insecure local mode: see refuseBrowsers
	handler  http.Handler
	doc      []byte
	draining atomic.Bool
}

// New checks opts and builds the server: two surfaces claiming the same
// pattern, or documents that disagree, are errors here.
func New(opts Options) (*Server, error) {
	noKeys := opts.Keys == nil
	if ks, ok := opts.Keys.(*KeySet); ok && ks.Len() == 0 {
		noKeys = true
	}
	if noKeys && !opts.InsecureLocal {
		return nil, fmt.Errorf("%w: give API keys, or open the server on loopback for local use only (insecure local mode)", ErrNoKeys)
	}
	orDefault(&opts.MaxBody, DefaultMaxBody)
	orDefault(&opts.Grace, DefaultGrace)
	orDefault(&opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	orDefault(&opts.IdleTimeout, DefaultIdleTimeout)
	orDefault(&opts.BodyTimeout, DefaultBodyTimeout)
	orDefault(&opts.WriteTimeout, DefaultWriteTimeout)
	orDefault(&opts.MaxConnections, DefaultMaxConnections)
	orDefault(&opts.MaxHeaderBytes, DefaultMaxHeaderBytes)
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts}
	if opts.InsecureLocal {
		s.cop = http.NewCrossOriginProtection()
	}
	doc, err := s.document()
	if err != nil {
		return nil, err
	}
	s.doc = doc
	mux := http.NewServeMux()
	if err := s.mount(mux); err != nil {
		return nil, err
	}
	s.handler = StallGuard(s.outer(mux), opts.WriteTimeout)
	return s, nil
}

// orDefault sets *v to d when it is zero or negative (not set).
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Handler is the server's whole handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics are the server's metrics.
func (s *Server) Metrics() *Metrics { return s.opts.Metrics }

// mount registers the server's own routes and every surface's patterns.
func (s *Server) mount(mux *http.ServeMux) (err error) {
	// ServeMux panics on a conflicting pattern: say which surface.
	current := "server"
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("mount surface %s: %v", current, p)
		}
	}()
	own := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, tagged("server", h))
	}
	own("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	own("GET /readyz", s.ready)
	own("GET /metrics", s.opts.Metrics.Handler().ServeHTTP)
	own("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.doc)
	})
	for _, sf := range s.opts.Surfaces {
		current = sf.Name
		if sf.Name == "" || sf.Handler == nil || len(sf.Patterns) == 0 {
			return fmt.Errorf("mount surface %q: a surface needs a name, a handler and patterns", sf.Name)
		}
		h := sf.Handler
		if !sf.OwnAuth {
			h = s.authenticate(h)
		}
		h = tagged(sf.Name, h)
		for _, p := range sf.Patterns {
			mux.Handle(p, h)
		}
	}
	return nil
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		WriteError(w, http.StatusServiceUnavailable, CodeUnavailable, "shutting down")
		return
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(r.Context()); err != nil {
			WriteError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
			return
		}
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Authenticate resolves the tenant of r from the credentials it presents
// (see Auth.Request), as the server does for the surfaces it
// authenticates.
func (s *Server) Authenticate(r *http.Request) (tenant string, err error) {
	return Auth{Keys: s.opts.Keys, InsecureLocal: s.opts.InsecureLocal}.Request(r)
}

// Allow applies tenant's request rate (a surface with OwnAuth calls it
// once it has authenticated a request); a *LimitError beyond it.
func (s *Server) Allow(tenant string) error {
	if s.opts.Tenants == nil {
		return nil
	}
	return s.opts.Tenants.Allow(tenant)
}

// authenticate sets the request's tenant, or answers 401; then applies
// the tenant's request rate (429).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, err := s.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="coderun"`)
			WriteError(w, http.StatusUnauthorized, CodeAuth, err.Error())
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.tenant = tenant
		}
		if err := s.Allow(tenant); err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				WriteRetryAfter(w, le.RetryAfter, le.Error())
				return
			}
			WriteError(w, http.StatusInternalServerError, CodeInternal, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(WithTenant(r.Context(), tenant)))
	})
}

// requestInfo is what the outer middleware learns about a request from the
// handlers inside: its surface, tenant and error class.
type requestInfo struct {
	id      string
	surface string
	tenant  string
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	i, _ := ctx.Value(infoKey{}).(*requestInfo)
	return i
}

// RequestID is the id of the request ctx belongs to (the X-Request-Id the
// client sent, if usable, else a fresh one); "" outside a request.
func RequestID(ctx context.Context) string {
	if i := infoFrom(ctx); i != nil {
		return i.id
	}
	return ""
}

// tagged records which surface serves a request.
func tagged(surface string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoFrom(r.Context()); info != nil {
			info.surface = surface
		}
		h.ServeHTTP(w, r)
	})
}

// Bodies are the rules every request's body is read under.
func (s *Server) Bodies() BodyRules {
	return BodyRules{MaxBytes: s.opts.MaxBody, Timeout: s.opts.BodyTimeout, MinRate: s.opts.BodyMinRate}
}

// outer wraps every request: its id, the body's cap and deadlines, recovery from a
// handler's panic, the log line and the metrics.
func (s *Server) outer(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: requestID(r.Header.Get("X-Request-Id"))}
		w.Header().Set("X-Request-Id", info.id)
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		r = s.Bodies().guard(sw, w, r)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.opts.Logger.Error("handler panic", "request_id", info.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !sw.wrote {
					WriteError(sw, http.StatusInternalServerError, CodeInternal, "internal error (request "+info.id+")")
				}
			}
			d := time.Since(start)
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			surface := info.surface
			if surface == "" {
				surface = "none"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			class := sw.class
			if class == "" && status >= 400 {
				class = classOf(status)
			}
			s.opts.Metrics.request(surface, route, r.Method, status, class, d)
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			attrs := []slog.Attr{slog.String("request_id", info.id), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("route", route), slog.String("surface", surface),
				slog.Int("status", status), slog.Int64("bytes", sw.bytes), slog.Float64("duration_ms", float64(d.Microseconds())/1000)}
			if info.tenant != "" {
				attrs = append(attrs, slog.String("tenant", info.tenant))
			}
			if class != "" {
				attrs = append(attrs, slog.String("error", class))
			}
			s.opts.Logger.LogAttrs(r.Context(), level, "request", attrs...)
		}()
		if s.cop != nil && refuseBrowsers(sw, r, s.cop) {
			// Keyless: this machine's browsers must not drive it.
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			unmatched(mux, sw, r)
			return
		}
		mux.ServeHTTP(sw, r)
		if !sw.wrote && ShuttingDown(r.Context()) {
			// Stopped by the shutdown without answering: say so.
			WriteError(sw, http.StatusServiceUnavailable, CodeUnavailable, ErrShutdown.Error()+": the request was stopped")
		}
	})
}

// unmatched answers a request no route matches as the mux would (404,
// 405 with Allow, a redirect to the clean path) but with a JSON error body.
func unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	rec := &headerRecorder{header: http.Header{}}
	mux.ServeHTTP(rec, r)
	if rec.status >= 300 && rec.status < 400 {
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		return
	}
	if allow := rec.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	switch rec.status {
	case http.StatusMethodNotAllowed:
		WriteError(w, rec.status, CodeMethod, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow")))
	default:
		WriteError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s (see /openapi.json)", r.Method, r.URL.Path))
	}
}

// headerRecorder keeps the status and headers of an answer, and drops its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}
func (h *headerRecorder) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return len(b), nil
}

// classOf is the error class of a status no handler classified (the
// mux's 404 and 405).
func classOf(status int) string {
	switch status {
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethod
	case http.StatusUnauthorized:
		return CodeAuth
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	}
	if status >= 500 {
		return CodeInternal
	}
	return CodeBadRequest
}

// requestID is the client's id if it is short and printable, else a new one.
func requestID(given string) string {
	if given != "" && len(given) <= 128 {
		ok := true
		for _, c := range given {
			if c <= ' ' || c > '~' {
				ok = false
				break
			}
		}
		if ok {
			return given
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status, size and error class of an answer;
// it passes Flush on (Server-Sent Events) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
	class  string
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) setErrorCode(code string) { w.class = code }

// ListenAndServe listens on addr and serves until ctx is done (see Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if s.opts.InsecureLocal {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// checkLoopback refuses an address that is not a loopback one: insecure
// local mode serves this machine only.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: insecure local mode listens on a loopback address only (127.0.0.1, ::1, localhost), not %q", ErrNoKeys, addr)
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting and waits up to the grace period for requests in flight
// (running cells, streams) to finish. Near its end (the last quarter, at
// most 5 s) the requests still running have their contexts ended with
// ErrShutdown, to answer saying so; those that still have not are cut
// off at its end. It returns nil after a shutdown asked for by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.InsecureLocal {
		if err := checkLoopback(ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	base, cutOff := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cutOff(nil)
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	for _, f := range s.opts.OnShutdown {
		var once sync.Once // Shutdown is called twice, below
		hs.RegisterOnShutdown(func() { once.Do(f) })
	}
	s.opts.Logger.Info("serving", "addr", ln.Addr().String(), "insecure_local", s.opts.InsecureLocal)
	errc := make(chan error, 1)
	ln = LimitConnections(ln, s.opts.MaxConnections, func() {
		s.opts.Logger.Warn("connection refused: the server holds server.max_connections already", "max", s.opts.MaxConnections)
	})
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.opts.Logger.Info("shutting down", "grace", s.opts.Grace.String())
	last := finalAnswer(s.opts.Grace)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace-last)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.opts.Logger.Warn("grace period ending: the requests still running are stopped, to answer that the server shuts down")
		cutOff(ErrShutdown)
		fctx, fcancel := context.WithTimeout(context.Background(), last)
		err = hs.Shutdown(fctx)
		fcancel()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.opts.Logger.Warn("grace period over: cutting off the requests still running")
		err = hs.Close()
	}
	<-errc
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	s.opts.Logger.Info("stopped")
	return nil
}
