package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// Error is the JSON body of every error coderun's own API answers:
// {"error": {"code": "not_found", "message": "..."}}.
type Error struct {
	// Code is a stable word a client may switch on: bad_request,
	// unauthorized, forbidden, not_found, method_not_allowed, conflict, too_large,
	// unsupported_media_type, rate_limited, unavailable, internal.
	Code string `json:"code"`
	// Message says what was wrong, for a person.
	Message string `json:"message"`
}

// Error codes, one per class of error (they label the errors metric too).
const (
	CodeBadRequest  = "bad_request"
	CodeAuth        = "unauthorized"
	CodeForbidden   = "forbidden"
	CodeNotFound    = "not_found"
	CodeMethod      = "method_not_allowed"
	CodeConflict    = "conflict"
	CodeTooLarge    = "too_large"
	CodeMediaType   = "unsupported_media_type"
	CodeRateLimited = "rate_limited"
	CodeUnavailable = "unavailable"
	CodeInternal    = "internal"
)

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		WriteError(w, http.StatusInternalServerError, CodeInternal, "encode the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// WriteError writes an error body with status; the request's error class
// (code) is counted by the server's metrics.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	if c, ok := w.(interface{ setErrorCode(string) }); ok {
		c.setErrorCode(code)
	} else if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		if c, ok := u.Unwrap().(interface{ setErrorCode(string) }); ok {
			c.setErrorCode(code)
		}
	}
	body, _ := json.Marshal(struct {
		Error Error `json:"error"`
	}{Error{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// WriteRetryAfter writes 429 with a Retry-After of wait (whole seconds,
// rounded up, at least 1).
func WriteRetryAfter(w http.ResponseWriter, wait time.Duration, message string) {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	WriteError(w, http.StatusTooManyRequests, CodeRateLimited, message)
}

// DecodeJSON reads r's body, one JSON value, into v: fields v does not have
// are an error, as is anything after the value, and a body past the
// server's cap (see Options.MaxBody). It writes the error answer itself
// (400, 413 or 415) and returns false then; the handler just returns.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		WriteError(w, http.StatusUnsupportedMediaType, CodeMediaType, fmt.Sprintf("Content-Type %q: want application/json", ct))
		return false
	}
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
		WriteError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
	case errors.Is(err, ErrSlowBody):
		WriteError(w, http.StatusRequestTimeout, CodeBadRequest, err.Error())
	case errors.Is(err, io.EOF):
		WriteError(w, http.StatusBadRequest, CodeBadRequest, "the request body is empty: want a JSON object")
	default:
		WriteError(w, http.StatusBadRequest, CodeBadRequest, "malformed request body: "+jsonMessage(err))
	}
	return false
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// jsonMessage says what encoding/json found wrong, in the request's terms.
func jsonMessage(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q: want %s, not a JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("want %s, not a JSON %s", typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	}
	return err.Error()
}
