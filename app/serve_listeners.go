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

// serveListeners starts the extra listeners; stop shuts them down. One
// that cannot listen (its port taken) is logged and left out: the main
// listener serves everything they do.
func (s *Services) serveListeners(ctx context.Context, grace time.Duration) (stop func()) {
	var servers []*http.Server
	for _, l := range s.listeners {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", l.addr)
		if err != nil {
			s.Logger.Warn("extra listener not started", "listener", l.name, "addr", l.addr, "error", err.Error())
			continue
		}
		// As the main listener: bodies capped; and, keyless or not on
		// loopback, not driven by this machine's browsers (DNS rebinding,
		// cross-site requests).
		h := server.LocalOnly(http.MaxBytesHandler(l.handler, s.Config.Server.MaxBody))
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
		servers = append(servers, hs)
		s.Logger.Info("serving", "listener", l.name, "addr", ln.Addr().String())
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.Logger.Warn("extra listener ended", "listener", l.name, "error", err.Error())
			}
		}()
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		for _, hs := range servers {
			_ = hs.Shutdown(sctx)
		}
	}
}
