package e2b

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// envdRoutes are envd's routes (E2B's port 49983): files over plain HTTP,
// and the filesystem and process services over Connect.
func (s *Service) envdRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /files", s.readFile)
	mux.HandleFunc("POST /files", s.writeFiles)
	s.filesystemRoutes(mux)
	s.processRoutes(mux)
	return mux
}

// fileLimit bounds a file read or written through /files: the workspace's
// size.
func fileLimit(sess *session.Session) int64 {
	if n := sess.Config().Limits.WorkspaceBytes; n > 0 {
		return n
	}
	return sandbox.DefaultLimits.WorkspaceBytes
}

func (s *Service) readFile(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	rel, err := workspacePath(r.URL.Query().Get("path"))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if rel == "" {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%s is a directory", sandboxPath(rel)))
		return
	}
	sess := b.primary.sess
	f, err := sess.OpenFile(r.Context(), rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("path '%s' does not exist", sandboxPath(rel)))
		return
	case errors.Is(err, sandbox.ErrTooLarge):
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s is larger than the workspace's size", sandboxPath(rel)))
		return
	case err != nil:
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	defer f.Close()
	// Streamed: a file is at most the workspace's size, and never held
	// whole here.
	_ = server.SendFile(w, f, f.Size, path.Base(rel), f.ModTime)
}

type writtenFile struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// writeFiles takes one or more files: a multipart form (a part named
// "file" each, its file name the path when the query names none), or a
// raw body (application/octet-stream, perhaps gzip-encoded) for the query's
// path.
func (s *Service) writeFiles(w http.ResponseWriter, r *http.Request) {
	b := boxFrom(r.Context())
	sess := b.primary.sess
	limit := fileLimit(sess)
	// The request is bounded by the workspace (and a multipart body's
	// framing), not by the server's cap on bodies: files stream into the
	// workspace.
	if !server.RaiseBodyLimit(r, limit+1<<20) {
		r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20)
	}
	queryPath := r.URL.Query().Get("path")
	var written []writtenFile
	put := func(p string, body io.Reader, size int64) error {
		rel, err := workspacePath(p)
		if err != nil {
			return err
		}
		if rel == "" {
			return fmt.Errorf("%s is a directory", sandboxPath(rel))
		}
		if _, err := sess.UploadFrom(r.Context(), rel, body, size, 0o644); err != nil {
			return err
		}
		written = append(written, writtenFile{Path: sandboxPath(rel), Name: path.Base(rel), Type: "file"})
		return nil
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	switch {
	case ct == "multipart/form-data":
		err = readMultipart(r, params["boundary"], queryPath, put)
	case queryPath == "":
		err = errors.New(`a raw upload needs the "path" query parameter`)
	default:
		var body io.Reader = r.Body
		size := r.ContentLength // -1: unknown, spooled first
		switch enc := r.Header.Get("Content-Encoding"); enc {
		case "", "identity":
		case "gzip":
			zr, zerr := gzip.NewReader(r.Body)
			if zerr != nil {
				err = fmt.Errorf("gzip body: %w", zerr)
				break
			}
			defer zr.Close()
			body, size = zr, -1
		default:
			err = fmt.Errorf("content encoding %q is not supported (gzip is)", enc)
		}
		if err == nil {
			err = put(queryPath, body, size)
		}
	}
	if err != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || errors.Is(err, sandbox.ErrTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSONError(w, status, err.Error())
		return
	}
	if len(written) == 0 {
		writeJSONError(w, http.StatusBadRequest, `no file in the request (multipart parts are named "file")`)
		return
	}
	writeJSON(w, http.StatusOK, written)
}

func readMultipart(r *http.Request, boundary, queryPath string, put func(string, io.Reader, int64) error) error {
	if boundary == "" {
		return errors.New("multipart body without a boundary")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return fmt.Errorf("multipart body: %w", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("multipart body: %w", err)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		p := queryPath
		if p == "" {
			// The SDK names the file by its full path, which the standard
			// library's FileName would cut to its base.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p = params["filename"]
		}
		if p == "" {
			part.Close()
			return errors.New(`a multipart file without a path: give the "path" query parameter or the part's file name`)
		}
		err = put(p, part, -1) // a part's length is known once it is read
		part.Close()
		if err != nil {
			return err
		}
	}
}
