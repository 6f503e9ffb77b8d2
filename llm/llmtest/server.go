// Package llmtest is a scripted model server for tests. It speaks the real
// OpenAI Chat Completions and Anthropic Messages wire protocols over HTTP on
// 127.0.0.1, so providers are exercised through the official SDKs exactly as
// against a real endpoint, and it records every request for tests to check
// what was sent.
//
// A Server replays a script of [Turn]s, one per request, whichever protocol
// the request uses: a text reply, tool calls (well-formed or not), or an
// HTTP failure (429 with Retry-After, 500, 401, 404...). Like a real API it
// rejects requests that break the protocol's rules — a tool result for a
// call that was never made, a tool call left unanswered, a missing
// max_tokens — with HTTP 400, so a round trip through it shows the wire
// shape is right.
//
//	srv := llmtest.NewServer(
//		llmtest.RunCode("call_1", "python", "print(6*7)"),
//		llmtest.Reply("42"),
//	)
//	defer srv.Close()
//	p, _ := openai.New(llm.Config{Model: "gpt-test", APIKey: "k", BaseURL: srv.BaseURL(llmtest.OpenAI)})
//
// [RunSuite] is the conformance suite every backend of package llm passes
// against this server; the agent loop's tests reuse the server to script a
// model.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
)

// The wire protocols the server speaks.
const (
	// OpenAI is Chat Completions: POST {base}/chat/completions, base ending
	// in /v1.
	OpenAI = "openai"
	// Anthropic is the Messages API: POST {base}/v1/messages.
	Anthropic = "anthropic"
)

// Turn is one scripted answer of the server.
type Turn struct {
	// Text is the assistant's text.
	Text string
	// ToolCalls are the calls the model makes.
	ToolCalls []Call
	// Usage is reported as the call's token usage.
	Usage llm.Usage
	// MaxTokens makes the reply say it was cut at the token limit.
	MaxTokens bool

	// Status, when not 0 or 200, makes the turn an HTTP failure with the
	// protocol's error body carrying Message.
	Status  int
	Message string
	// Body, if set, is sent as is (text/plain) instead of a protocol
	// reply, with Status (200 if 0): a proxy's HTML page, a plain "404 page
	// not found".
	Body string
	// Header is added to the response (Retry-After, ...).
	Header http.Header
	// Delay holds the answer back, or until the client gives up.
	Delay time.Duration
	// Stall, for a protocol reply, sends the headers and the first half of
	// the body at once, then holds the rest back for Stall, or until the
	// client gives up: a reply that stops arriving midway.
	Stall time.Duration
	// Always keeps the turn in place: it answers every later request.
	Always bool
}

// Call is a scripted tool call.
type Call struct {
	// ID defaults to "call_N" (OpenAI) or "toolu_N" (Anthropic).
	ID   string
	Name string
	// Arguments is the JSON text of the arguments; it may be malformed on
	// purpose. Over Anthropic, where input is a JSON value, arguments that
	// do not parse are sent as a JSON string.
	Arguments string
}

// Reply is a text turn.
func Reply(text string) Turn { return Turn{Text: text} }

// CallTool is a turn calling one tool with raw JSON arguments.
func CallTool(id, name, arguments string) Turn {
	return Turn{ToolCalls: []Call{{ID: id, Name: name, Arguments: arguments}}}
}

// RunCode is a turn calling run_code with well-formed arguments.
func RunCode(id string, lang language.Language, code string) Turn {
	args, _ := json.Marshal(llm.RunCodeArgs{Language: lang, Code: code})
	return CallTool(id, llm.RunCodeToolName, string(args))
}

// Fail is a turn answering with an HTTP error.
func Fail(status int, message string) Turn { return Turn{Status: status, Message: message} }

// WithUsage returns the turn reporting the given token usage.
func (t Turn) WithUsage(input, output int64) Turn {
	t.Usage = llm.Usage{InputTokens: input, OutputTokens: output}
	return t
}

// WithHeader returns the turn with a response header added.
func (t Turn) WithHeader(key, value string) Turn {
	h := t.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	t.Header = h
	return t
}

// WithDelay returns the turn answering after d.
func (t Turn) WithDelay(d time.Duration) Turn {
	t.Delay = d
	return t
}

// WithStall returns the turn sending half its reply, then nothing for d,
// then the rest.
func (t Turn) WithStall(d time.Duration) Turn {
	t.Stall = d
	return t
}

// Forever returns the turn answering every request from now on.
func (t Turn) Forever() Turn {
	t.Always = true
	return t
}

// Request is a request the server received.
type Request struct {
	Protocol string
	Method   string
	Path     string
	Header   http.Header
	Body     []byte
	// Status is what the server answered.
	Status int
}

// Server is a scripted model server on 127.0.0.1. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the server's root, "http://127.0.0.1:port".
	URL string

	hs *httptest.Server

	mu       sync.Mutex
	script   []Turn
	requests []Request
	key      string
	seq      int
}

// NewServer starts a server replaying turns in order. Close it when done.
func NewServer(turns ...Turn) *Server {
	s := &Server{script: append([]Turn(nil), turns...)}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.hs.URL
	return s
}

// Close shuts the server down, ending requests still held by a Delay.
func (s *Server) Close() {
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// BaseURL is the base URL a provider of the protocol is configured with.
func (s *Server) BaseURL(protocol string) string {
	if protocol == OpenAI {
		return s.URL + "/v1"
	}
	return s.URL
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Pending is the number of scripted turns not yet played (a turn kept by
// Always counts once).
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// RequireKey makes the server answer 401 to requests that do not carry key
// (as "Authorization: Bearer key" or "X-Api-Key: key"), without playing a
// turn. Its error message quotes the key received, as some APIs do.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the last request received; ok is false if there is none.
func (s *Server) Last() (r Request, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}, false
	}
	return s.requests[len(s.requests)-1], true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var protocol string
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		protocol = OpenAI
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		protocol = Anthropic
	default:
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	rec := Request{Protocol: protocol, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}

	s.mu.Lock()
	s.seq++
	seq := s.seq
	key := s.key
	var turn Turn
	var haveTurn, authFailed bool
	if key != "" && !hasKey(r.Header, key) {
		authFailed = true
	} else if len(s.script) > 0 {
		turn, haveTurn = s.script[0], true
		if !turn.Always {
			s.script = s.script[1:]
		}
	}
	s.mu.Unlock()

	status := s.answer(w, r, protocol, seq, rec, turn, haveTurn, authFailed)
	rec.Status = status
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, protocol string, seq int,
	rec Request, turn Turn, haveTurn, authFailed bool) int {
	if authFailed {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if got == "" {
			got = r.Header.Get("X-Api-Key")
		}
		return writeError(w, protocol, http.StatusUnauthorized, "Incorrect API key provided: "+got)
	}
	// Like the real APIs, refuse what breaks the protocol before anything.
	model, err := validate(rec)
	if err != nil {
		return writeError(w, protocol, http.StatusBadRequest, err.Error())
	}
	if !haveTurn {
		return writeError(w, protocol, http.StatusBadRequest,
			fmt.Sprintf("llmtest: no scripted turn left for request %d", seq))
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return 0
		}
	}
	for k, vs := range turn.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case turn.Body != "":
		status := turn.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, turn.Body)
		return status
	case turn.Status != 0 && turn.Status != http.StatusOK:
		return writeError(w, protocol, turn.Status, turn.Message)
	case protocol == OpenAI:
		return writeReply(w, r, openAIReply(seq, model, turn), turn.Stall)
	default:
		return writeReply(w, r, anthropicReply(seq, model, turn), turn.Stall)
	}
}

// writeReply answers 200 with v as JSON; with a stall, half of it first,
// the rest after the stall. It returns 0 if the client gave up meanwhile.
func writeReply(w http.ResponseWriter, r *http.Request, v any, stall time.Duration) int {
	if stall <= 0 {
		return writeJSON(w, http.StatusOK, v)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return writeError(w, OpenAI, http.StatusInternalServerError, err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	half := len(body) / 2
	_, _ = w.Write(body[:half])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	t := time.NewTimer(stall)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return 0
	}
	_, _ = w.Write(body[half:])
	return http.StatusOK
}

func hasKey(h http.Header, key string) bool {
	return h.Get("Authorization") == "Bearer "+key || h.Get("X-Api-Key") == key
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
	return status
}

// writeError answers with the protocol's error body.
func writeError(w http.ResponseWriter, protocol string, status int, message string) int {
	if message == "" {
		message = http.StatusText(status)
	}
	if protocol == OpenAI {
		typ, code := "invalid_request_error", any(nil)
		switch {
		case status == http.StatusUnauthorized:
			code = "invalid_api_key"
		case status == http.StatusNotFound:
			code = "model_not_found"
		case status == http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
		case status >= 500:
			typ = "server_error"
		}
		return writeJSON(w, status, map[string]any{"error": map[string]any{
			"message": message, "type": typ, "param": nil, "code": code,
		}})
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	w.Header().Set("Request-Id", "req_llmtest")
	return writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": typ, "message": message},
		"request_id": "req_llmtest",
	})
}

func openAIReply(seq int, model string, t Turn) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t.Text != "" || len(t.ToolCalls) == 0 {
		msg["content"] = t.Text
	}
	finish := "stop"
	if len(t.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", seq, i)
			}
			calls = append(calls, map[string]any{
				"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	if t.MaxTokens {
		finish = "length"
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-llmtest-%d", seq),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":     t.Usage.InputTokens,
			"completion_tokens": t.Usage.OutputTokens,
			"total_tokens":      t.Usage.InputTokens + t.Usage.OutputTokens,
		},
	}
}

func anthropicReply(seq int, model string, t Turn) map[string]any {
	content := []any{}
	if t.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": t.Text})
	}
	stop := "end_turn"
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d_%d", seq, i)
		}
		var input any = json.RawMessage(c.Arguments)
		if !json.Valid([]byte(c.Arguments)) {
			input = c.Arguments
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if t.MaxTokens {
		stop = "max_tokens"
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_llmtest_%d", seq),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                t.Usage.InputTokens,
			"output_tokens":               t.Usage.OutputTokens,
			"cache_creation_input_tokens": 0,
			"cache_read_input_tokens":     0,
		},
	}
}
