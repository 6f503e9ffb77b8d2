package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The kinds of failure of a chat call. Match them with errors.Is; an
// [*Error] carries the details.
var (
	// ErrAuth: the key was refused (HTTP 401 or 403).
	ErrAuth = errors.New("authentication failed")
	// ErrModelNotFound: the server does not know the model (HTTP 404).
	ErrModelNotFound = errors.New("model not found")
	// ErrRateLimited: HTTP 429 on every attempt the retry policy allowed.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: HTTP 5xx (or 408) on every attempt the policy allowed.
	ErrServer = errors.New("server error")
	// ErrUnreachable: no HTTP answer at all — refused connection, unknown
	// host, reset connection, a connection that could not be set up in time.
	ErrUnreachable = errors.New("endpoint unreachable")
	// ErrTimeout: the server took too long — no reply within the attempt's
	// timeout ([Config.Timeout]), or a reply that stopped arriving midway
	// ([Config.StallTimeout]). Retried like a server error: a hung model
	// server costs bounded time, never a blocked run.
	ErrTimeout = errors.New("timed out")
	// ErrBadRequest: the server rejected the request (other 4xx), e.g. a
	// context window exceeded. Retrying the same request will not help.
	ErrBadRequest = errors.New("request rejected")
	// ErrBadResponse: the server answered 2xx with something that is not a
	// reply of the protocol (not JSON, no choices).
	ErrBadResponse = errors.New("malformed response")
	// ErrMalformedToolCall: the model called a tool with arguments that do
	// not fit it. Matched by [*ToolCallError].
	ErrMalformedToolCall = errors.New("malformed tool call")
)

// Error is a failed chat call.
//
// Its message never contains the API key: the server's message is redacted
// before it is stored, and the underlying SDK or network error is not part
// of the message. That error stays reachable with errors.As for debugging
// (request ids, raw bodies); printing it yourself is at your own risk, as
// an SDK error may quote the response body.
type Error struct {
	// Kind is one of the package's sentinel errors; errors.Is(err, Kind)
	// holds.
	Kind error
	// Provider is the configured provider ("openai", "ollama", ...).
	Provider string
	// Model is the requested model.
	Model string
	// BaseURL is the endpoint, for unreachable and not-found errors.
	BaseURL string
	// StatusCode is the HTTP status, 0 when there was no HTTP answer.
	StatusCode int
	// Message is the server's explanation, redacted and shortened.
	Message string
	// RetryAfter is the wait the server asked for, if it said.
	RetryAfter time.Duration
	// Attempts is how many requests were made.
	Attempts int
	// Err is the underlying error (SDK, network), if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Model != "" {
		fmt.Fprintf(&b, " model %q", e.Model)
	}
	b.WriteString(": ")
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("call failed")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.BaseURL != "" && (e.Kind == ErrUnreachable || e.Kind == ErrModelNotFound) {
		fmt.Fprintf(&b, " at %s", e.BaseURL)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the kind and the underlying error, so that both
// errors.Is(err, ErrAuth) and errors.As(err, &sdkErr) work.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Temporary reports whether the same request may succeed later: rate
// limits, server errors, connection failures and timeouts.
func (e *Error) Temporary() bool {
	return e.Kind == ErrRateLimited || e.Kind == ErrServer || e.Kind == ErrUnreachable || e.Kind == ErrTimeout
}

// ToolCallError is a tool call whose arguments do not fit the tool. Its
// message is meant for the model: send it back as the (error) result of the
// call so the model can correct itself.
type ToolCallError struct {
	ID        string
	Name      string
	Arguments string
	// Err says what is wrong.
	Err error
}

func (e *ToolCallError) Error() string {
	return fmt.Sprintf("tool call %q (id %s): %v", e.Name, e.ID, e.Err)
}

func (e *ToolCallError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrMalformedToolCall) true.
func (e *ToolCallError) Is(target error) bool { return target == ErrMalformedToolCall }

// ToolCallErrors returns every *ToolCallError in err's tree, in order, so a
// caller can answer each malformed call of a turn.
func ToolCallErrors(err error) []*ToolCallError {
	var out []*ToolCallError
	var walk func(error)
	walk = func(err error) {
		switch x := err.(type) {
		case nil:
		case *ToolCallError:
			out = append(out, x)
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return out
}
