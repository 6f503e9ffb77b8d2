// Package classify turns the outcome of one HTTP exchange with a model API
// into an [llm.Error] of the right kind. The provider adapters share it so
// that a 429 from OpenAI and a 429 from Anthropic are the same error.
//
// The adapters install [Middleware] in their SDK client; it records the
// status, headers and (for failures) the body of each attempt in the
// [Exchange] carried by the request's context. Classification then works
// from what went over the wire, not from how each SDK chose to parse it: a
// plain-text 404 from a misconfigured base URL is a 404 like any other.
//
// [StallGuard], installed after Middleware, abandons a reply whose body
// stops arriving, and marks the Exchange so that the failure is classified
// as a timeout.
package classify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coderun/coderun/llm"
)

// maxBody bounds how much of an error body is read and kept.
const maxBody = 64 << 10

// maxMessage bounds the server message kept in an error.
const maxMessage = 500

// Exchange is what one attempt got back over HTTP.
type Exchange struct {
	// Status is the HTTP status; 0 if no response arrived.
	Status int
	Header http.Header
	// Body is the response body of a failed (status ≥ 400) attempt.
	Body []byte

	// stalled is the silence, in nanoseconds, after which [StallGuard]
	// abandoned the reply; 0 if it did not. Set from the guard's timer.
	stalled atomic.Int64
}

// Stalled returns the silence after which the reply was abandoned, or 0.
func (ex *Exchange) Stalled() time.Duration { return time.Duration(ex.stalled.Load()) }

type exchangeKey struct{}

// WithExchange returns a context that makes [Middleware] record into a new
// Exchange, and that Exchange.
func WithExchange(ctx context.Context) (context.Context, *Exchange) {
	ex := &Exchange{}
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

// Middleware records the response of a request into the Exchange of its
// context, if any. Its signature is the SDKs' middleware type.
func Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if ex == nil || res == nil {
		return res, err
	}
	ex.Status = res.StatusCode
	ex.Header = res.Header.Clone()
	if res.StatusCode >= 400 && res.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxBody))
		_ = res.Body.Close()
		ex.Body = body
		res.Body = io.NopCloser(bytes.NewReader(body))
	}
	return res, err
}

// errStalled is the cause of an attempt StallGuard cancelled.
var errStalled = errors.New("the reply stalled")

// StallGuard returns a middleware, of the SDKs' type, that abandons a reply
// whose body delivers no byte for idle: it cancels the attempt and records
// the stall in the Exchange of the request's context, if any. The wait for
// the headers is not guarded (a server that does not stream writes nothing
// before the reply is done); the attempt timeout bounds it.
func StallGuard(idle time.Duration) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		ctx, cancel := context.WithCancelCause(req.Context())
		res, err := next(req.WithContext(ctx))
		if res == nil || res.Body == nil {
			cancel(nil)
			return res, err
		}
		ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
		g := &guardedBody{body: res.Body, idle: idle, cancel: cancel}
		g.timer = time.AfterFunc(idle, func() {
			if ex != nil {
				ex.stalled.Store(int64(idle))
			}
			cancel(errStalled)
		})
		res.Body = g
		return res, err
	}
}

// guardedBody is a response body whose silence is timed.
type guardedBody struct {
	body   io.ReadCloser
	idle   time.Duration
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

func (g *guardedBody) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	if n > 0 {
		g.timer.Reset(g.idle)
	}
	return n, err
}

func (g *guardedBody) Close() error {
	g.timer.Stop()
	err := g.body.Close()
	g.cancel(nil)
	return err
}

// Endpoint names the call being classified.
type Endpoint struct {
	Provider string
	Model    string
	BaseURL  string
	// APIKey is redacted from every message.
	APIKey string
}

// Error classifies a failed attempt. ctx is the caller's context: when it is
// done, its error is returned (wrapped), not an llm.Error, so the retry loop
// stops. Otherwise the result is an *llm.Error:
//
//   - a recorded status ≥ 400 gives the kind for that status;
//   - a reply StallGuard abandoned, or an attempt that ran past its own
//     deadline (the SDK's request timeout), gives ErrTimeout;
//   - no status gives ErrUnreachable (network failure);
//   - a 2xx status whose body the SDK could not decode gives ErrBadResponse.
func (ep Endpoint) Error(ctx context.Context, ex *Exchange, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s model %q: %w", ep.Provider, ep.Model, ctx.Err())
	}
	e := &llm.Error{
		Provider: ep.Provider,
		Model:    ep.Model,
		BaseURL:  ep.BaseURL,
		Err:      err,
	}
	switch {
	case ex != nil && ex.Status >= 400:
		e.StatusCode = ex.Status
		e.Kind = KindOf(ex.Status)
		e.Message = ep.redact(Message(ex.Body))
		e.RetryAfter = RetryAfter(ex.Header, time.Now())
	case ex != nil && ex.Stalled() > 0:
		e.StatusCode = ex.Status
		e.Kind = llm.ErrTimeout
		e.Message = fmt.Sprintf("the reply stalled: no data for %s", ex.Stalled())
	case errors.Is(err, context.DeadlineExceeded):
		if ex != nil {
			e.StatusCode = ex.Status
		}
		e.Kind = llm.ErrTimeout
		e.Message = "no complete reply within the request timeout"
	case ex != nil && ex.Status != 0:
		e.StatusCode = ex.Status
		e.Kind = llm.ErrBadResponse
		e.Message = ep.redact(shorten(errorText(err)))
	default:
		e.Kind = llm.ErrUnreachable
		e.Message = ep.redact(shorten(transportText(err)))
	}
	return e
}

// BadResponse is a reply that decoded but does not make sense (no choices).
func (ep Endpoint) BadResponse(format string, args ...any) *llm.Error {
	return &llm.Error{
		Kind:     llm.ErrBadResponse,
		Provider: ep.Provider,
		Model:    ep.Model,
		BaseURL:  ep.BaseURL,
		Message:  ep.redact(shorten(fmt.Sprintf(format, args...))),
	}
}

func (ep Endpoint) redact(s string) string { return Redact(s, ep.APIKey) }

// KindOf maps an HTTP failure status to an error kind.
func KindOf(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuth
	case status == http.StatusNotFound:
		return llm.ErrModelNotFound
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status == http.StatusRequestTimeout || status >= 500:
		return llm.ErrServer
	default:
		return llm.ErrBadRequest
	}
}

// Message extracts the human explanation from an error body: the
// "error.message" of OpenAI and Anthropic, the "error" string of Ollama,
// "message" or "detail" of other servers, or else the text itself.
func Message(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return shorten(nested.Message)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return shorten(s)
		case v.Message != "":
			return shorten(v.Message)
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return shorten(s)
		case len(v.Detail) > 0:
			return shorten(string(v.Detail))
		}
	}
	if !utf8.Valid(body) {
		return ""
	}
	return shorten(string(body))
}

// RetryAfter reads the wait a server asked for from Retry-After-Ms
// (milliseconds, as OpenAI sends) or Retry-After (seconds or an HTTP date).
// It returns 0 when there is none or it cannot be read.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redact replaces each secret of 4 bytes or more in s with "[REDACTED]".
// (Shorter ones are placeholders such as "x", and replacing them would
// shred the message without protecting anything.)
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[REDACTED]")
		}
	}
	return s
}

// transportText describes a network failure without the request URL (the
// endpoint is reported separately, and an URL may carry credentials).
func transportText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out: " + err.Error()
	}
	return errorText(err)
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
