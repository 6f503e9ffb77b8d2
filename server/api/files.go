package api

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
)

// The files of a session's workspace: list, download, upload.

func (a *API) listFiles(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	list, truncated, err := s.Files()
	if err != nil {
		writeErr(w, err)
		return
	}
	if list == nil {
		list = []sandbox.FileInfo{}
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"files": list, "truncated": truncated})
}

// filePath is the request's workspace path, checked ("..", absolute: 400).
func filePath(w http.ResponseWriter, r *http.Request) (string, bool) {
	p, err := sandbox.CleanPath(r.PathValue("path"))
	if err != nil {
		writeErr(w, err)
		return "", false
	}
	return p, true
}

func (a *API) download(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	f, err := s.OpenFile(r.Context(), p)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer f.Close()
	if err := server.SendFile(w, f, f.Size, path.Base(p), f.ModTime); err != nil {
		a.opts.Logger.Warn("download cut off", "request_id", server.RequestID(r.Context()), "path", p, "error", err.Error())
	}
}

// upload writes the body into the workspace at the path; ?mode=0755 sets
// its permission bits (default 0644). The body streams into the
// workspace: it is bounded by the session's workspace size (413 beyond),
// not by the server's cap on request bodies.
func (a *API) upload(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	mode := fs.FileMode(0o644)
	if m := r.URL.Query().Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			badRequest(w, "mode "+strconv.Quote(m)+": want octal permission bits such as 0644")
			return
		}
		mode = fs.FileMode(v)
	}
	limit := s.Config().Limits.WorkspaceBytes
	if r.ContentLength > limit {
		server.WriteError(w, http.StatusRequestEntityTooLarge, server.CodeTooLarge, "the file ("+sandbox.FormatBytes(r.ContentLength)+") is larger than the session's workspace ("+sandbox.FormatBytes(limit)+")")
		return
	}
	server.RaiseBodyLimit(r, limit)
	n, err := s.UploadFrom(r.Context(), p, r.Body, r.ContentLength, mode)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			server.WriteError(w, http.StatusRequestEntityTooLarge, server.CodeTooLarge, "the file is larger than the session's workspace ("+sandbox.FormatBytes(tooBig.Limit)+")")
		case errors.Is(err, server.ErrSlowBody):
			server.WriteError(w, http.StatusRequestTimeout, server.CodeBadRequest, err.Error())
		default:
			writeErr(w, err)
		}
		return
	}
	server.WriteJSON(w, http.StatusCreated, map[string]any{"path": p, "size": n, "mode": uint32(mode)})
}

func (a *API) notebook(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if _, err := s.Export().WriteTo(&buf); err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ipynb+json")
	w.Header().Set("Content-Disposition", `attachment; filename="session-`+s.ID()+`.ipynb"`)
	_, _ = w.Write(buf.Bytes())
}
