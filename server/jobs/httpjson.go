package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Until the server's own helpers land, the same body shapes: errors are
// {"error": {"code": "...", "message": "..."}}.

const (
	codeBadRequest  = "bad_request"
	codeNotFound    = "not_found"
	codeConflict    = "conflict"
	codeTooLarge    = "too_large"
	codeUnavailable = "unavailable"
	codeInternal    = "internal"
	codeAuth        = "unauthorized"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(w, http.StatusInternalServerError, codeInternal, "encode the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("more than one JSON value in the body")
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, codeBadRequest, "the request body is empty: want a JSON object")
	default:
		writeError(w, http.StatusBadRequest, codeBadRequest, "malformed request body: "+err.Error())
	}
	return false
}

// writeEvent writes one Server-Sent Event with v as its JSON data.
func writeEvent(w http.ResponseWriter, event, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
	return err
}
