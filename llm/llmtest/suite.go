package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
)

// Backend is a provider implementation under test.
type Backend struct {
	// Provider is the llm.Config provider name to configure ("openai",
	// "ollama", "anthropic", ...).
	Provider string
	// Protocol is the wire protocol the backend speaks: OpenAI or Anthropic.
	Protocol string
	// New builds the provider from a config.
	New func(llm.Config) (llm.Provider, error)
}

// testKey is the key the suite's providers send.
const testKey = "sk-llmtest-0123456789"

// fastRetry keeps the suite quick: three attempts, millisecond backoff, and
// Retry-After honoured up to 2s.
func fastRetry() llm.Retry {
	return llm.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Second}
}

// RunSuite runs the conformance tests of package llm's Provider contract
// against b, each on its own Server: text turns, tool round trips, usage,
// retries of 429 and 5xx, typed errors for 401, 404, unreachable endpoints,
// bad replies and malformed tool calls, context cancellation, concurrent
// use, keys kept out of errors, and the bounds of a hung server: an attempt
// that runs past its timeout and a reply that stalls midway are ErrTimeout
// and retried, and no attempt is sent without a timeout.
func RunSuite(t *testing.T, b Backend) {
	t.Helper()
	tests := []struct {
		name string
		run  func(*testing.T, Backend)
	}{
		{"TextTurn", testTextTurn},
		{"ToolRoundTrip", testToolRoundTrip},
		{"MaxTokens", testMaxTokens},
		{"RateLimitThenSuccess", testRateLimitThenSuccess},
		{"RetryAfterHonoured", testRetryAfterHonoured},
		{"RetryAfterTooLong", testRetryAfterTooLong},
		{"ServerErrorAlways", testServerErrorAlways},
		{"Unauthorized", testUnauthorized},
		{"ModelNotFound", testModelNotFound},
		{"BadRequestNotRetried", testBadRequest},
		{"Unreachable", testUnreachable},
		{"BadResponse", testBadResponse},
		{"MalformedToolCallJSON", testMalformedToolCallJSON},
		{"ToolCallMissingArgument", testToolCallMissingArgument},
		{"UnknownTool", testUnknownTool},
		{"ContextCancelled", testContextCancelled},
		{"Concurrent", testConcurrent},
		{"DefaultTimeout", testDefaultTimeout},
		{"AttemptTimeout", testAttemptTimeout},
		{"StalledReply", testStalledReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

// start returns a server playing turns and a provider pointed at it.
func start(t *testing.T, b Backend, turns ...Turn) (*Server, llm.Provider) {
	t.Helper()
	srv := NewServer(turns...)
	t.Cleanup(srv.Close)
	return srv, newProvider(t, b, srv.BaseURL(b.Protocol), fastRetry())
}

func newProvider(t *testing.T, b Backend, baseURL string, r llm.Retry) llm.Provider {
	t.Helper()
	return newProviderWith(t, b, llm.Config{BaseURL: baseURL, Retry: r})
}

// newProviderWith builds the backend's provider from cfg, its provider,
// model and key filled in.
func newProviderWith(t *testing.T, b Backend, cfg llm.Config) llm.Provider {
	t.Helper()
	cfg.Provider, cfg.Model, cfg.APIKey = b.Provider, "test-model", testKey
	p, err := b.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func conversation() []llm.Message {
	return []llm.Message{
		llm.System("You are terse."),
		llm.User("What is 6*7?"),
	}
}

// decode returns the i-th request the server got, read back.
func decode(t *testing.T, srv *Server, i int) Sent {
	t.Helper()
	reqs := srv.Requests()
	if i >= len(reqs) {
		t.Fatalf("server got %d requests, want more than %d", len(reqs), i)
	}
	sent, err := reqs[i].Decode()
	if err != nil {
		t.Fatalf("request %d does not decode: %v", i, err)
	}
	return sent
}

func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func testTextTurn(t *testing.T, b Backend) {
	srv, p := start(t, b, Reply("42").WithUsage(17, 2))
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "42" || len(resp.ToolCalls) != 0 {
		t.Errorf("reply = %q with %d tool calls, want \"42\" and none", resp.Text, len(resp.ToolCalls))
	}
	if resp.Usage != (llm.Usage{InputTokens: 17, OutputTokens: 2}) {
		t.Errorf("usage = %+v, want 17 in, 2 out", resp.Usage)
	}
	if resp.StopReason != llm.StopEnd || resp.RawStopReason == "" {
		t.Errorf("stop = %q (raw %q), want %q", resp.StopReason, resp.RawStopReason, llm.StopEnd)
	}
	if resp.Attempts != 1 || resp.Latency <= 0 {
		t.Errorf("attempts = %d, latency = %v; want 1 and > 0", resp.Attempts, resp.Latency)
	}
	if resp.Model != "test-model" {
		t.Errorf("model = %q, want test-model", resp.Model)
	}
	sent := decode(t, srv, 0)
	if sent.Model != "test-model" || !reflect.DeepEqual(sent.Messages, conversation()) {
		t.Errorf("sent model %q messages %+v, want test-model %+v", sent.Model, sent.Messages, conversation())
	}
	if len(sent.Tools) != 0 || sent.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("sent %d tools, max tokens %d; want 0 and %d", len(sent.Tools), sent.MaxTokens, llm.DefaultMaxTokens)
	}
}

func testToolRoundTrip(t *testing.T, b Backend) {
	srv, p := start(t, b,
		Turn{Text: "Let me compute.", ToolCalls: []Call{{ID: "call_a", Name: "run_code", Arguments: `{"language":"py","code":"print(6*7)"}`}}}.WithUsage(30, 12),
		Reply("It is 42.").WithUsage(50, 4),
	)
	tools := []llm.Tool{llm.RunCodeTool()}
	msgs := conversation()
	resp, err := p.Chat(ctx(t), llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("Chat 1: %v", err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 1 {
		t.Fatalf("stop %q with %d calls, want tool_use with 1", resp.StopReason, len(resp.ToolCalls))
	}
	call := resp.ToolCalls[0]
	if call.ID != "call_a" || call.Name != "run_code" || call.Args["code"] != "print(6*7)" {
		t.Errorf("call = %+v", call)
	}
	args, err := call.RunCode()
	if err != nil || args != (llm.RunCodeArgs{Language: llm.Python, Code: "print(6*7)"}) {
		t.Errorf("RunCode() = %+v, %v", args, err)
	}
	if resp.Text != "Let me compute." || resp.Usage.InputTokens != 30 || resp.Usage.OutputTokens != 12 {
		t.Errorf("text %q usage %+v", resp.Text, resp.Usage)
	}

	msgs = append(msgs, resp.Message(), llm.ToolResult(call.ID, "42\n", false))
	resp, err = p.Chat(ctx(t), llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("Chat 2 (with the tool result): %v", err)
	}
	if resp.Text != "It is 42." || resp.Usage.InputTokens != 50 {
		t.Errorf("reply %q usage %+v", resp.Text, resp.Usage)
	}

	first := decode(t, srv, 0)
	if len(first.Tools) != 1 || first.Tools[0].Name != "run_code" {
		t.Fatalf("tools sent = %+v, want run_code", first.Tools)
	}
	props, _ := first.Tools[0].Parameters["properties"].(map[string]any)
	if _, ok := props["language"]; !ok || props["code"] == nil {
		t.Errorf("run_code schema sent = %v, want language and code", first.Tools[0].Parameters)
	}
	second := decode(t, srv, 1)
	if len(second.Messages) != 4 {
		t.Fatalf("second request has %d messages, want 4: %+v", len(second.Messages), second.Messages)
	}
	echo := second.Messages[2]
	if echo.Role != llm.RoleAssistant || echo.Content != "Let me compute." || len(echo.ToolCalls) != 1 ||
		echo.ToolCalls[0].ID != "call_a" || !sameJSON(echo.ToolCalls[0].Arguments, call.Arguments) {
		t.Errorf("assistant turn sent back = %+v", echo)
	}
	if got := second.Messages[3]; got.Role != llm.RoleTool || got.ToolCallID != "call_a" || got.Content != "42\n" || got.IsError {
		t.Errorf("tool result sent = %+v", got)
	}
}

func testMaxTokens(t *testing.T, b Backend) {
	srv, p := start(t, b, Turn{Text: "Once upon a", MaxTokens: true})
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation(), MaxTokens: 3})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.StopReason != llm.StopMaxTokens {
		t.Errorf("stop = %q, want %q", resp.StopReason, llm.StopMaxTokens)
	}
	if sent := decode(t, srv, 0); sent.MaxTokens != 3 {
		t.Errorf("max tokens sent = %d, want 3", sent.MaxTokens)
	}
}

func testRateLimitThenSuccess(t *testing.T, b Backend) {
	srv, p := start(t, b,
		Fail(http.StatusTooManyRequests, "slow down"),
		Fail(http.StatusServiceUnavailable, "busy"),
		Reply("ok").WithUsage(5, 1),
	)
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "ok" || resp.Attempts != 3 || len(srv.Requests()) != 3 {
		t.Errorf("text %q after %d attempts (%d requests), want ok after 3", resp.Text, resp.Attempts, len(srv.Requests()))
	}
	if resp.Usage.InputTokens != 5 {
		t.Errorf("usage = %+v, want the successful attempt's", resp.Usage)
	}
}

func testRetryAfterHonoured(t *testing.T, b Backend) {
	_, p := start(t, b,
		Fail(http.StatusTooManyRequests, "slow down").WithHeader("Retry-After", "1"),
		Reply("ok"),
	)
	began := time.Now()
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if waited := time.Since(began); waited < time.Second {
		t.Errorf("retried after %v, want at least the 1s of Retry-After", waited)
	}
	if resp.Attempts != 2 || resp.Latency < time.Second {
		t.Errorf("attempts %d latency %v, want 2 and >= 1s", resp.Attempts, resp.Latency)
	}
}

func testRetryAfterTooLong(t *testing.T, b Backend) {
	srv, p := start(t, b, Fail(http.StatusTooManyRequests, "quota").WithHeader("Retry-After", "3600"), Reply("never"))
	began := time.Now()
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	e := asError(t, err)
	if e.RetryAfter != time.Hour || e.Attempts != 1 || len(srv.Requests()) != 1 {
		t.Errorf("RetryAfter %v attempts %d requests %d; want 1h, 1, 1", e.RetryAfter, e.Attempts, len(srv.Requests()))
	}
	if time.Since(began) > 5*time.Second {
		t.Errorf("waited %v for a Retry-After beyond MaxDelay", time.Since(began))
	}
}

func testServerErrorAlways(t *testing.T, b Backend) {
	srv, p := start(t, b, Fail(http.StatusInternalServerError, "boom").Forever())
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrServer) {
		t.Fatalf("err = %v, want ErrServer", err)
	}
	e := asError(t, err)
	if e.StatusCode != 500 || e.Attempts != fastRetry().MaxAttempts || len(srv.Requests()) != fastRetry().MaxAttempts {
		t.Errorf("status %d attempts %d requests %d; want 500 and %d", e.StatusCode, e.Attempts, len(srv.Requests()), fastRetry().MaxAttempts)
	}
	if !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "500") {
		t.Errorf("message %q should carry the status and the server's words", err)
	}
}

func testUnauthorized(t *testing.T, b Backend) {
	srv := NewServer(Reply("never"))
	t.Cleanup(srv.Close)
	srv.RequireKey("sk-the-right-one")
	p := newProvider(t, b, srv.BaseURL(b.Protocol), fastRetry())
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	if e := asError(t, err); e.StatusCode != 401 || len(srv.Requests()) != 1 {
		t.Errorf("status %d after %d requests, want 401 after 1 (no retry)", e.StatusCode, len(srv.Requests()))
	}
	// The server quotes the key it got; the error must not.
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error message leaks the key: %q", err)
	}
	if !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error message %q should keep the server's words, key redacted", err)
	}
}

func testModelNotFound(t *testing.T, b Backend) {
	srv, p := start(t, b, Fail(http.StatusNotFound, "The model `test-model` does not exist"))
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrModelNotFound) {
		t.Fatalf("err = %v, want ErrModelNotFound", err)
	}
	if !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("message %q should say what and where", err)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("%d requests, want 1 (no retry)", len(srv.Requests()))
	}

	// A base URL pointing at the wrong path gets a plain-text 404.
	p = newProvider(t, b, srv.URL+"/nothing-here", fastRetry())
	_, err = p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrModelNotFound) || !strings.Contains(err.Error(), "404 page not found") {
		t.Errorf("wrong base URL: err = %v, want ErrModelNotFound with the body", err)
	}
}

func testBadRequest(t *testing.T, b Backend) {
	srv, p := start(t, b, Fail(http.StatusBadRequest, "prompt is too long"), Reply("never"))
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "prompt is too long") {
		t.Fatalf("err = %v, want ErrBadRequest with the server's message", err)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("%d requests, want 1", len(srv.Requests()))
	}
}

func testUnreachable(t *testing.T, b Backend) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	base := "http://" + addr
	if b.Protocol == OpenAI {
		base += "/v1"
	}
	p := newProvider(t, b, base, llm.Retry{MaxAttempts: 2, BaseDelay: time.Millisecond})
	_, err = p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if e := asError(t, err); e.Attempts != 2 || !strings.Contains(err.Error(), addr) {
		t.Errorf("attempts %d, message %q; want 2 and the address", e.Attempts, err)
	}
}

func testBadResponse(t *testing.T, b Backend) {
	_, p := start(t, b, Turn{Body: "<html>captive portal</html>"})
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrBadResponse) {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
}

func testMalformedToolCallJSON(t *testing.T, b Backend) {
	broken := `{"language": "python", "code": "print(1)`
	srv, p := start(t, b, CallTool("call_bad", "run_code", broken), Reply("fixed"))
	tools := []llm.Tool{llm.RunCodeTool()}
	msgs := conversation()
	resp, err := p.Chat(ctx(t), llm.Request{Messages: msgs, Tools: tools})
	if !errors.Is(err, llm.ErrMalformedToolCall) {
		t.Fatalf("err = %v, want ErrMalformedToolCall", err)
	}
	if resp == nil || len(resp.ToolCalls) != 1 {
		t.Fatalf("resp = %+v, want the response alongside the error", resp)
	}
	bad := llm.ToolCallErrors(err)
	if len(bad) != 1 || bad[0].ID != "call_bad" || bad[0].Name != "run_code" {
		t.Fatalf("tool call errors = %+v", bad)
	}
	if resp.ToolCalls[0].Args != nil {
		t.Errorf("Args = %v, want nil for unparsable arguments", resp.ToolCalls[0].Args)
	}
	// Feed the error back, as the agent loop does; the server checks the
	// pairing of call and result.
	msgs = append(msgs, resp.Message(), llm.ToolResult(bad[0].ID, bad[0].Error(), true))
	resp, err = p.Chat(ctx(t), llm.Request{Messages: msgs, Tools: tools})
	if err != nil || resp.Text != "fixed" {
		t.Fatalf("Chat after feedback = %+v, %v", resp, err)
	}
	sent := decode(t, srv, 1)
	last := sent.Messages[len(sent.Messages)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "call_bad" || last.Content != bad[0].Error() {
		t.Errorf("feedback sent = %+v", last)
	}
	if b.Protocol == Anthropic && !last.IsError {
		t.Errorf("feedback not flagged is_error")
	}
}

func testToolCallMissingArgument(t *testing.T, b Backend) {
	_, p := start(t, b, CallTool("call_1", "run_code", `{"language":"python"}`))
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation(), Tools: []llm.Tool{llm.RunCodeTool()}})
	if !errors.Is(err, llm.ErrMalformedToolCall) || !strings.Contains(err.Error(), `"code"`) {
		t.Fatalf("err = %v, want ErrMalformedToolCall naming \"code\"", err)
	}
	if resp == nil || resp.ToolCalls[0].Args["language"] != "python" {
		t.Errorf("resp = %+v, want the parsed arguments", resp)
	}
}

func testUnknownTool(t *testing.T, b Backend) {
	_, p := start(t, b, CallTool("call_1", "rm_rf", `{}`))
	_, err := p.Chat(ctx(t), llm.Request{Messages: conversation(), Tools: []llm.Tool{llm.RunCodeTool()}})
	if !errors.Is(err, llm.ErrMalformedToolCall) || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("err = %v, want ErrMalformedToolCall for an unknown tool", err)
	}
}

func testContextCancelled(t *testing.T, b Backend) {
	_, p := start(t, b, Reply("too late").WithDelay(20*time.Second))
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := p.Chat(c, llm.Request{Messages: conversation()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Chat returned after %v, want soon after the deadline", d)
	}

	// Cancelled while waiting to retry.
	_, p = start(t, b, Fail(http.StatusTooManyRequests, "wait").WithHeader("Retry-After", "1").Forever())
	c2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = p.Chat(c2, llm.Request{Messages: conversation()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("during backoff: err = %v, want context.DeadlineExceeded", err)
	}
}

func testConcurrent(t *testing.T, b Backend) {
	const n = 8
	srv, p := start(t, b, Reply("same").WithUsage(3, 1).Forever())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
			if err == nil && resp.Text != "same" {
				err = errors.New("wrong text " + resp.Text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := len(srv.Requests()); got != n {
		t.Errorf("%d requests, want %d", got, n)
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

// testDefaultTimeout: a provider configured without a timeout still bounds
// each attempt, by llm.DefaultTimeout, which the SDKs announce in the
// X-Stainless-Timeout header (whole seconds).
func testDefaultTimeout(t *testing.T, b Backend) {
	srv, p := start(t, b, Reply("42"))
	if _, err := p.Chat(ctx(t), llm.Request{Messages: conversation()}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	req, _ := srv.Last()
	want := fmt.Sprint(int(llm.DefaultTimeout.Seconds()))
	if got := req.Header.Get("X-Stainless-Timeout"); got != want {
		t.Errorf("X-Stainless-Timeout = %q, want %q (llm.DefaultTimeout)", got, want)
	}
}

// testAttemptTimeout: a server that does not answer within the attempt
// timeout costs that long, gives ErrTimeout, and is retried.
func testAttemptTimeout(t *testing.T, b Backend) {
	srv := NewServer(Reply("late").WithDelay(20*time.Second), Reply("42"))
	t.Cleanup(srv.Close)
	p := newProviderWith(t, b, llm.Config{BaseURL: srv.BaseURL(b.Protocol), Retry: fastRetry(), Timeout: 300 * time.Millisecond})
	began := time.Now()
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "42" || resp.Attempts != 2 {
		t.Errorf("reply %q after %d attempts, want \"42\" after 2", resp.Text, resp.Attempts)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Chat took %v, want about the 300ms timeout", d)
	}

	// Hung for good: the error says so, and it is worth retrying later.
	srv2 := NewServer(Reply("late").WithDelay(20 * time.Second).Forever())
	t.Cleanup(srv2.Close)
	p = newProviderWith(t, b, llm.Config{BaseURL: srv2.BaseURL(b.Protocol), Retry: llm.Retry{MaxAttempts: 2, BaseDelay: time.Millisecond},
		Timeout: 200 * time.Millisecond})
	_, err = p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if e := asError(t, err); !e.Temporary() || e.Attempts != 2 || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("temporary %v, attempts %d, message %q; want true, 2 and \"timed out\"", e.Temporary(), e.Attempts, err)
	}
}

// testStalledReply: a reply that stops arriving midway is abandoned after
// the stall timeout, though the attempt timeout is far off, and retried.
func testStalledReply(t *testing.T, b Backend) {
	srv := NewServer(Reply("stalled").WithStall(20*time.Second), Reply("42"))
	t.Cleanup(srv.Close)
	p := newProviderWith(t, b, llm.Config{BaseURL: srv.BaseURL(b.Protocol), Retry: fastRetry(), StallTimeout: 300 * time.Millisecond})
	began := time.Now()
	resp, err := p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "42" || resp.Attempts != 2 {
		t.Errorf("reply %q after %d attempts, want \"42\" after 2", resp.Text, resp.Attempts)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Chat took %v, want about the 300ms stall timeout", d)
	}

	srv2 := NewServer(Reply("stalled").WithStall(20 * time.Second))
	t.Cleanup(srv2.Close)
	p = newProviderWith(t, b, llm.Config{BaseURL: srv2.BaseURL(b.Protocol), Retry: llm.NoRetry(), StallTimeout: 200 * time.Millisecond})
	_, err = p.Chat(ctx(t), llm.Request{Messages: conversation()})
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if e := asError(t, err); e.StatusCode != 200 || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("status %d, message %q; want 200 and \"stalled\"", e.StatusCode, err)
	}
}
