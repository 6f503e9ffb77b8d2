package e2b

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// This file is the part of the Connect protocol (connectrpc.com) that
// E2B's SDKs speak to envd: unary calls and server-streaming calls, JSON
// codec, no compression. (The protobuf codec is not served: the SDKs
// never use it.)

// maxRPCRequest bounds a Connect request's message.
const maxRPCRequest = 4 << 20

// Connect error codes (https://connectrpc.com/docs/protocol#error-codes).
const (
	codeInvalidArgument    = "invalid_argument"
	codeNotFound           = "not_found"
	codeAlreadyExists      = "already_exists"
	codePermissionDenied   = "permission_denied"
	codeFailedPrecondition = "failed_precondition"
	codeUnimplemented      = "unimplemented"
	codeInternal           = "internal"
	codeUnavailable        = "unavailable"
	codeUnauthenticated    = "unauthenticated"
	codeCanceled           = "canceled"
)

// rpcError is a Connect error: a code from the closed set and a message.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

func rpcErrorf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRPCError makes any error a Connect error (internal unless it is one).
func asRPCError(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	return &rpcError{Code: codeInternal, Message: err.Error()}
}

// httpStatus is the HTTP status a unary call's error is answered with.
func (e *rpcError) httpStatus() int {
	switch e.Code {
	case codeInvalidArgument, "out_of_range":
		return http.StatusBadRequest
	case codeNotFound:
		return http.StatusNotFound
	case codeAlreadyExists, "aborted":
		return http.StatusConflict
	case codePermissionDenied:
		return http.StatusForbidden
	case codeUnauthenticated:
		return http.StatusUnauthorized
	case codeFailedPrecondition:
		return http.StatusPreconditionFailed
	case codeUnimplemented:
		return http.StatusNotImplemented
	case codeUnavailable:
		return http.StatusServiceUnavailable
	case "resource_exhausted":
		return http.StatusTooManyRequests
	case codeCanceled:
		return 499
	}
	return http.StatusInternalServerError
}

// writeRPCError answers a unary call with err.
func writeRPCError(w http.ResponseWriter, err error) {
	re := asRPCError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(re.httpStatus())
	_ = json.NewEncoder(w).Encode(re)
}

// unaryRPC serves one unary Connect call: the request is the JSON message
// itself, the answer is fn's message or its error.
func unaryRPC[Req, Resp any](w http.ResponseWriter, r *http.Request, fn func(*http.Request, *Req) (*Resp, error)) {
	if ct := mediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		w.Header().Set("Accept-Post", "application/json")
		writeRPCError(w, rpcErrorf(codeInvalidArgument, "unary calls take Content-Type application/json (the JSON codec), not %q", ct))
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		writeRPCError(w, rpcErrorf(codeUnimplemented, "content encoding %q is not supported", enc))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRPCRequest+1))
	if err != nil {
		writeRPCError(w, rpcErrorf(codeInvalidArgument, "read request: %v", err))
		return
	}
	if len(body) > maxRPCRequest {
		writeRPCError(w, rpcErrorf(codeInvalidArgument, "request larger than %d bytes", maxRPCRequest))
		return
	}
	req := new(Req)
	if err := decodeMessage(body, req); err != nil {
		writeRPCError(w, err)
		return
	}
	resp, err := fn(r, req)
	if err != nil {
		writeRPCError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func decodeMessage(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // every field at its default
	}
	if err := json.Unmarshal(body, v); err != nil {
		return rpcErrorf(codeInvalidArgument, "malformed request message: %v", err)
	}
	return nil
}

func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// Envelope flags of the streaming protocol.
const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
)

// readEnvelope reads a streaming call's one request message.
func readEnvelope(r io.Reader, v any) error {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return rpcErrorf(codeInvalidArgument, "read request envelope: %v", err)
	}
	if hdr[0]&flagCompressed != 0 {
		return rpcErrorf(codeUnimplemented, "compressed messages are not supported")
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxRPCRequest {
		return rpcErrorf(codeInvalidArgument, "request message larger than %d bytes", maxRPCRequest)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return rpcErrorf(codeInvalidArgument, "read request message: %v", err)
	}
	return decodeMessage(body, v)
}

// stream is the response side of a server-streaming Connect call.
type stream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	ended bool
}

// startStream checks a server-streaming request, reads its message into
// req and starts the response; on a bad request it answers and returns
// nil.
func startStream(w http.ResponseWriter, r *http.Request, req any) *stream {
	if ct := mediaType(r.Header.Get("Content-Type")); ct != "application/connect+json" {
		writeRPCError(w, rpcErrorf(codeInvalidArgument, "streaming calls take Content-Type application/connect+json, not %q", ct))
		return nil
	}
	if enc := r.Header.Get("Connect-Content-Encoding"); enc != "" && enc != "identity" {
		writeRPCError(w, rpcErrorf(codeUnimplemented, "content encoding %q is not supported", enc))
		return nil
	}
	err := readEnvelope(r.Body, req)
	w.Header().Set("Content-Type", "application/connect+json")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w}
	if err != nil {
		s.end(err)
		return nil
	}
	return s
}

// send writes one message frame and flushes it.
func (s *stream) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.frame(0, b)
}

func (s *stream) frame(flags byte, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errors.New("stream ended")
	}
	if flags&flagEndStream != 0 {
		s.ended = true
	}
	var hdr [5]byte
	hdr[0] = flags
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(b)))
	if _, err := s.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// end writes the end-of-stream frame, with err if not nil.
func (s *stream) end(err error) {
	msg := []byte("{}")
	if err != nil {
		msg, _ = json.Marshal(struct {
			Error *rpcError `json:"error"`
		}{asRPCError(err)})
	}
	_ = s.frame(flagEndStream, msg)
}
