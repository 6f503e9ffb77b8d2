package api

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
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
	data, _, err := s.Download(p, s.Config().Limits.WorkspaceBytes)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// upload writes the body into the workspace at the path; ?mode=0755 sets
// its permission bits (default 0644).
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
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			server.WriteError(w, http.StatusRequestEntityTooLarge, server.CodeTooLarge, "the file is larger than the server's body limit of "+strconv.FormatInt(tooBig.Limit, 10)+" bytes")
			return
		}
		badRequest(w, "read the body: "+err.Error())
		return
	}
	if err := s.Upload(p, buf.Bytes(), mode); err != nil {
		writeErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, map[string]any{"path": p, "size": buf.Len(), "mode": uint32(mode)})
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
