package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// writeErr answers err with the status its kind calls for: an invalid
// request 400, an unknown (or another tenant's, or evicted) session or
// file 404, a path that names the wrong kind of file (a directory to read,
// a file where a directory must be) 409, a tenant's limit 429, a full
// server 503, anything else 500.
func writeErr(w http.ResponseWriter, err error) {
	var le *server.LimitError
	switch {
	case errors.As(err, &le):
		server.WriteRetryAfter(w, le.RetryAfter, le.Error())
	case errors.Is(err, sandbox.ErrInvalid):
		server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, err.Error())
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrEvicted), errors.Is(err, session.ErrClosed),
		errors.Is(err, fs.ErrNotExist):
		server.WriteError(w, http.StatusNotFound, server.CodeNotFound, err.Error())
	case errors.Is(err, sandbox.ErrFileKind), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		server.WriteError(w, http.StatusConflict, server.CodeConflict, err.Error())
	case errors.Is(err, sandbox.ErrTooLarge):
		server.WriteError(w, http.StatusRequestEntityTooLarge, server.CodeTooLarge, err.Error())
	case errors.Is(err, session.ErrFull):
		w.Header().Set("Retry-After", "1")
		server.WriteError(w, http.StatusServiceUnavailable, server.CodeUnavailable, err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away: nobody reads this answer.
		server.WriteError(w, 499, server.CodeBadRequest, "the request was cancelled")
	default:
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, err.Error())
	}
}

func badRequest(w http.ResponseWriter, msg string) {
	server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, msg)
}

// badInput is an invalid request's error.
func badInput(msg string) error { return fmt.Errorf("%w: %s", sandbox.ErrInvalid, msg) }
