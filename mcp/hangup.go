package mcp

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// callHeader carries, from the HTTP handler to the SDK's request handlers,
// the token under which an HTTP request's context is kept (see
// [hangups]). A client's own header of that name is dropped.
const callHeader = "X-Coderun-Http-Call"

// hangups ties a request's handling to the HTTP request that carried it.
// Over Streamable HTTP (protocol versions before 2026-07-28) the SDK runs a
// call on its session's context, not on its POST's: a client that goes
// away without sending notifications/cancelled would leave its cell
// running until its time limit, though nothing can receive the result (no
// event store: a stream is not resumed). The HTTP handler registers each
// POST's context under a fresh token it puts in the request's header; the
// server's middleware ends the handler's context when that one ends.
type hangups struct {
	mu    sync.Mutex
	calls map[string]context.Context
}

func newHangups() *hangups { return &hangups{calls: map[string]context.Context{}} }

// track registers r's context and marks r with its token; done forgets it
// (once r has been served).
func (h *hangups) track(r *http.Request) (done func()) {
	r.Header.Del(callHeader)
	if r.Method != http.MethodPost {
		return func() {}
	}
	token := rand.Text()
	h.mu.Lock()
	h.calls[token] = r.Context()
	h.mu.Unlock()
	r.Header.Set(callHeader, token)
	return func() {
		h.mu.Lock()
		delete(h.calls, token)
		h.mu.Unlock()
	}
}

// lookup is the context of the HTTP request that carried req, if any.
func (h *hangups) lookup(req sdk.Request) (context.Context, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	token := extra.Header.Get(callHeader)
	if token == "" {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, ok := h.calls[token]
	return ctx, ok
}

// middleware ends a request handler's context when the HTTP request that
// carried it ends (the client hung up), as a cancellation would.
func (h *hangups) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		hctx, ok := h.lookup(req)
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(hctx, func() { cancel(context.Cause(hctx)) })
		defer stop()
		return next(ctx, method, req)
	}
}
