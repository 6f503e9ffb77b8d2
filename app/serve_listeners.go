package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/coderun/coderun/server"
)

// listenerOff is the value that turns an extra listener off.
const listenerOff = "off"

// extraListener is a listener of a surface's own beside the main one.
type extraListener struct {
	name, addr string
	handler    http.Handler
}

// AddListener has the server also serve h on addr (a loopback address;
// "" or "off": not at all) while it runs.
func (s *Services) AddListener(name, addr string, h http.Handler) {
	if addr == "" || addr == listenerOff {
		return
	}
	s.listeners = append(s.listeners, extraListener{name: name, addr: addr, handler: h})
}

// checkExtraListener is the check of an extra listener's setting: a
// loopback host:port, or "off".
func checkExtraListener(v any) error {
	addr := v.(string)
	if addr == "" || addr == listenerOff {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return err
	}
	if err := loopbackOnly(addr); err != nil {
		return fmt.Errorf("%s: listen on a loopback address, or say %q", addr, listenerOff)
	}
	return nil
}

// serveListeners starts the extra listeners; once ctx is done each shuts
// down as the main listener does (server.Server.Serve): it waits up to the
// grace period for the requests in flight, ends the contexts of those
// still running near its end with server.ErrShutdown so that they answer
// saying so, then cuts off what remains. stop shuts them down (if ctx is
// not done yet) and waits for that. One that
// cannot listen (its port taken) is logged and left out: the main
// listener serves everything they do.
func (s *Services) serveListeners(ctx context.Context, grace time.Duration) (stop func()) {
	ctx, stopAll := context.WithCancel(ctx)
	var done []chan struct{}
	for _, l := range s.listeners {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", l.addr)
		if err != nil {
			s.Logger.Warn("extra listener not started", "listener", l.name, "addr", l.addr, "error", err.Error())
			continue
		}
		// As the main listener: bodies capped and read under its
		// deadlines, headers too; and, keyless or not on loopback, not
		// driven by this machine's browsers (DNS rebinding, cross-site
		// requests).
		sc := s.Config.Server
		h := server.StallGuard(server.LocalOnly(server.BodyRules{MaxBytes: sc.MaxBody, Timeout: sc.BodyTimeout, MinRate: sc.BodyMinRate}.Guard(l.handler)), sc.WriteTimeout)
		base, cutOff := context.WithCancelCause(context.WithoutCancel(ctx))
		hs := &http.Server{Handler: h, ReadHeaderTimeout: sc.ReadHeaderTimeout, IdleTimeout: sc.IdleTimeout, MaxHeaderBytes: int(sc.MaxHeaderBytes),
			BaseContext: func(net.Listener) context.Context { return base }}
		s.Logger.Info("serving", "listener", l.name, "addr", ln.Addr().String())
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := hs.Serve(server.LimitConnections(ln, sc.MaxConnections, nil)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.Logger.Warn("extra listener ended", "listener", l.name, "error", err.Error())
			}
		}()
		stopped := make(chan struct{})
		done = append(done, stopped)
		go func() {
			defer close(stopped)
			defer cutOff(nil)
			select {
			case <-ctx.Done():
			case <-served:
				return
			}
			last := min(grace/4, 5*time.Second) // as the main listener keeps
			sctx, cancel := context.WithTimeout(context.Background(), grace-last)
			err := hs.Shutdown(sctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				cutOff(server.ErrShutdown)
				fctx, fcancel := context.WithTimeout(context.Background(), last)
				err = hs.Shutdown(fctx)
				fcancel()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				_ = hs.Close()
			}
			<-served
		}()
	}
	return func() {
		stopAll()
		for _, d := range done {
			<-d
		}
	}
}
