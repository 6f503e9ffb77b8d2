package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// BodyRules say how a request's body may be sent: how large it may be and
// how slowly. A client that trickles a body (a byte now and then, to hold
// a connection and a handler for as long as it likes) is cut off.
type BodyRules struct {
	// MaxBytes caps a body; past it reads fail with *http.MaxBytesError
	// (and the connection is closed after the answer). A handler that
	// streams a body somewhere bounded of its own (a file upload into a
	// workspace) raises it with RaiseBodyLimit. 0: no cap.
	MaxBytes int64
	// Timeout is the longest a body may go without a byte arriving, from
	// the end of the request's headers on; past it the read fails with an
	// error wrapping ErrSlowBody. 0: no bound.
	Timeout time.Duration
	// MinRate is the fewest bytes per second a body must average once its
	// first Timeout is over: a body that has sent N bytes while the server
	// waited T for them may take until T = Timeout + N/MinRate for its
	// next byte (and no longer than Timeout); past it, as for Timeout.
	// Only the time the server waits in a read counts (not a handler's
	// own before it reads). 0: no bound but Timeout.
	MinRate int64
}

// ErrSlowBody is wrapped by the error a guarded body's read fails with
// when the client sends it slower than the BodyRules allow.
var ErrSlowBody = errors.New("the request body is sent too slowly")

// Guard wraps h: each request's body follows the rules. The deadlines are
// the connection's read deadlines (http.ResponseController), set before
// each read of the body and cleared once it has been read to its end, so
// that what follows (a cell streamed for minutes, Server-Sent Events) is
// not bounded by them: they bound sending the request, never answering it.
func (b BodyRules) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, b.guard(w, w, r))
	})
}

// guard sets r's body to a guarded one: capped through capW (the writer
// the handler writes to, so that a body past the cap closes the
// connection), its deadlines set through rawW's connection.
func (b BodyRules) guard(capW, rawW http.ResponseWriter, r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	g := &guardedBody{rules: b, src: r.Body, capW: capW, rc: http.NewResponseController(rawW), start: time.Now(), limit: b.MaxBytes}
	if b.Timeout > 0 {
		// Also while no handler reads: the server's own reading of what
		// a handler left of the body is bounded too.
		_ = g.rc.SetReadDeadline(g.start.Add(b.Timeout))
	}
	r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, g))
	r.Body = g
	return r
}

type bodyKey struct{}

// RaiseBodyLimit lets the body of r be up to n bytes instead of the
// server's cap (see BodyRules.MaxBytes), for a handler that streams it
// into something with its own bound (a file into a workspace of n bytes);
// the deadlines still apply. It must be called before the body is read;
// it reports whether the cap was raised (false: read already, or not a
// body the server guards).
func RaiseBodyLimit(r *http.Request, n int64) bool {
	g, ok := r.Context().Value(bodyKey{}).(*guardedBody)
	if !ok {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.capped != nil {
		return false
	}
	g.limit = n
	return true
}

// guardedBody is a request body read under BodyRules.
type guardedBody struct {
	rules BodyRules
	src   io.ReadCloser
	capW  http.ResponseWriter
	rc    *http.ResponseController
	start time.Time

	mu     sync.Mutex
	limit  int64
	capped io.ReadCloser // made on the first read, with the limit then
	read   int64
	waited time.Duration // blocked in reads of the body
	ended  bool
}

func (g *guardedBody) Read(p []byte) (int, error) {
	g.mu.Lock()
	if g.capped == nil {
		var src io.ReadCloser = deadlined{g}
		if g.limit > 0 {
			src = http.MaxBytesReader(g.capW, src, g.limit)
		}
		g.capped = src
	}
	c := g.capped
	g.mu.Unlock()
	return c.Read(p)
}

func (g *guardedBody) Close() error { return g.src.Close() }

// deadlined reads the body under the deadlines.
type deadlined struct{ g *guardedBody }

func (d deadlined) Read(p []byte) (int, error) {
	g := d.g
	if g.ended {
		return 0, io.EOF
	}
	t := g.rules.Timeout
	var began time.Time
	if t > 0 {
		// The time the client is waited for, not the server's own (a
		// handler that waits its turn before it reads is not the
		// client's slowness).
		began = time.Now()
		wait := t
		if rate := g.rules.MinRate; rate > 0 {
			wait = min(wait, t+time.Duration(float64(g.read)/float64(rate)*float64(time.Second))-g.waited)
		}
		if wait <= 0 {
			_ = g.rc.SetReadDeadline(began) // nor may the server read on
			return 0, d.slow()
		}
		_ = g.rc.SetReadDeadline(began.Add(wait))
	}
	n, err := g.src.Read(p)
	g.read += int64(n)
	if t > 0 {
		g.waited += time.Since(began)
	}
	switch {
	case err == io.EOF:
		g.ended = true
		if t > 0 {
			// Read whole: what follows is the answer's, unbounded here
			// (the server watches the connection for the client going
			// away, and a deadline passing would read as that; net/http
			// clears it too as it starts watching).
			_ = g.rc.SetReadDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, d.slow()
	}
	return n, err
}

func (d deadlined) slow() error {
	g := d.g
	el := g.waited.Round(time.Millisecond)
	if g.rules.MinRate > 0 {
		return fmt.Errorf("%w: %d bytes in %s of waiting for them (a body may pause at most %s, and must average %d bytes/s after that)", ErrSlowBody, g.read, el, g.rules.Timeout, g.rules.MinRate)
	}
	return fmt.Errorf("%w: %d bytes in %s of waiting for them (a body may pause at most %s)", ErrSlowBody, g.read, el, g.rules.Timeout)
}

func (d deadlined) Close() error { return d.g.src.Close() }

// StallGuard wraps h: each write of its answer (and each flush) must be
// taken by the client within timeout, or the connection is cut (and with
// it the request's context, as for a client that went away: a streamed
// cell is interrupted). A client that asks for a stream and never reads
// it would otherwise hold the handler, and what it streams (a cell, a
// command: its output waits for the reader), for as long as it stays
// connected. It bounds each write, not the answer: a stream of hours, or
// a large download to a slow client, goes on as long as the client takes
// its bytes. 0: no bound.
func StallGuard(h http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
		h.ServeHTTP(sw, r)
		// What the server writes after the handler (the rest of the
		// answer, buffered) is bounded alike.
		_ = sw.rc.SetWriteDeadline(time.Now().Add(timeout))
	})
}

// stallWriter sets the connection's write deadline before each write and
// flush.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *stallWriter) Write(b []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.ResponseWriter.Write(b)
}

func (s *stallWriter) WriteHeader(code int) { s.ResponseWriter.WriteHeader(code) }

func (s *stallWriter) Flush() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	_ = s.rc.Flush()
}

func (s *stallWriter) FlushError() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.rc.Flush()
}

func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
