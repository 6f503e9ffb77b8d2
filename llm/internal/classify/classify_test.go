package classify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
)

func TestKindOf(t *testing.T) {
	for status, want := range map[int]error{
		400: llm.ErrBadRequest, 401: llm.ErrAuth, 403: llm.ErrAuth, 404: llm.ErrModelNotFound,
		408: llm.ErrServer, 409: llm.ErrBadRequest, 413: llm.ErrBadRequest, 422: llm.ErrBadRequest,
		429: llm.ErrRateLimited, 500: llm.ErrServer, 502: llm.ErrServer, 503: llm.ErrServer, 529: llm.ErrServer,
	} {
		if got := KindOf(status); got != want {
			t.Errorf("KindOf(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestMessage(t *testing.T) {
	cases := map[string]string{
		`{"error":{"message":"The model does not exist","type":"invalid_request_error"}}`: "The model does not exist",
		`{"type":"error","error":{"type":"not_found_error","message":"model: x"}}`:        "model: x",
		`{"error":"model \"qwen\" not found, try pulling it first"}`:                      `model "qwen" not found, try pulling it first`,
		`{"message":"Bad gateway"}`:                                    "Bad gateway",
		`{"detail":"Not Found"}`:                                       "Not Found",
		`{"detail":[{"loc":["body","model"],"msg":"field required"}]}`: `[{"loc":["body","model"],"msg":"field required"}]`,
		"404 page not found\n":                                         "404 page not found",
		"<html>\n  <body>Bad   Gateway</body>\n</html>":                "<html> <body>Bad Gateway</body> </html>",
		"":         "",
		"\xff\xfe": "",
	}
	for body, want := range cases {
		if got := Message([]byte(body)); got != want {
			t.Errorf("Message(%q) = %q, want %q", body, got, want)
		}
	}
	long := strings.Repeat("é", 1000)
	if got := Message([]byte(long)); len(got) > maxMessage+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("long message not shortened: %d bytes", len(got))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{}, 0},
		{nil, 0},
	}
	for _, c := range cases {
		if got := RetryAfter(c.header, now); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.header, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("bad key sk-abc123 given", "sk-abc123"); got != "bad key [REDACTED] given" {
		t.Errorf("Redact = %q", got)
	}
	if got := Redact("a x b", "x", ""); got != "a x b" {
		t.Errorf("short secrets redacted: %q", got)
	}
}

func TestError(t *testing.T) {
	ep := Endpoint{Provider: "openai", Model: "m", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-secret-key"}
	ctx := context.Background()

	ex := &Exchange{Status: 429, Header: http.Header{"Retry-After": {"3"}},
		Body: []byte(`{"error":{"message":"Rate limit for key sk-secret-key"}}`)}
	err := ep.Error(ctx, ex, errors.New("sdk error mentioning sk-secret-key"))
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.ErrRateLimited || e.RetryAfter != 3*time.Second || e.StatusCode != 429 {
		t.Fatalf("Error = %#v", err)
	}
	if strings.Contains(err.Error(), "sk-secret-key") || !strings.Contains(err.Error(), "Rate limit for key [REDACTED]") {
		t.Errorf("message = %q", err)
	}

	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: syscall.ECONNREFUSED}
	err = ep.Error(ctx, &Exchange{}, refused)
	if !errors.Is(err, llm.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v", err)
	}
	if strings.Contains(err.Error(), "chat/completions") {
		t.Errorf("transport message carries the request URL: %q", err)
	}

	err = ep.Error(ctx, &Exchange{Status: 200}, errors.New("error parsing response json"))
	if !errors.Is(err, llm.ErrBadResponse) {
		t.Errorf("2xx undecodable: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = ep.Error(cancelled, &Exchange{}, context.Canceled)
	if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
		t.Errorf("cancelled: %v, want ctx error, not an llm.Error", err)
	}
}

// An attempt past its own deadline, before or after the headers, is
// ErrTimeout; a failure status still names its own kind.
func TestErrorTimeout(t *testing.T) {
	ep := Endpoint{Provider: "openai", Model: "m", BaseURL: "http://127.0.0.1:1/v1"}
	ctx := context.Background()
	late := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: context.DeadlineExceeded}
	for _, ex := range []*Exchange{{}, {Status: 200}} {
		err := ep.Error(ctx, ex, late)
		var e *llm.Error
		if !errors.Is(err, llm.ErrTimeout) || !errors.As(err, &e) || !e.Temporary() || e.StatusCode != ex.Status {
			t.Errorf("status %d, deadline exceeded: %v, want a temporary ErrTimeout", ex.Status, err)
		}
	}
	if err := ep.Error(ctx, &Exchange{Status: 503}, late); !errors.Is(err, llm.ErrServer) {
		t.Errorf("503 then deadline: %v, want ErrServer", err)
	}
}

// StallGuard abandons a body that goes silent, and the failure is
// classified as a stall; a body that keeps coming is left alone.
func TestStallGuard(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	next := func(req *http.Request) (*http.Response, error) {
		go func() {
			<-req.Context().Done()
			pw.CloseWithError(req.Context().Err())
		}()
		return &http.Response{StatusCode: 200, Body: pr}, nil
	}
	ctx, ex := WithExchange(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", nil)
	res, err := StallGuard(50*time.Millisecond)(req, next)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = pw.Write([]byte(`{"id":`)) }()
	began := time.Now()
	body, err := io.ReadAll(res.Body)
	if err == nil || string(body) != `{"id":` {
		t.Fatalf("read %q, %v; want the first bytes, then an error", body, err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("abandoned after %v, want about 50ms", d)
	}
	if ex.Stalled() != 50*time.Millisecond {
		t.Errorf("Stalled() = %v, want 50ms", ex.Stalled())
	}
	err = Endpoint{Provider: "openai", Model: "m"}.Error(context.Background(), ex, err)
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("classified as %v, want a stall", err)
	}

	// A body that arrives in pieces closer together than the bound, for
	// longer than the bound in all.
	steady := func(req *http.Request) (*http.Response, error) {
		r, w := io.Pipe()
		go func() {
			for range 8 {
				time.Sleep(60 * time.Millisecond)
				_, _ = w.Write([]byte("x"))
			}
			w.Close()
		}()
		return &http.Response{StatusCode: 200, Body: r}, nil
	}
	ctx, ex = WithExchange(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
	res, _ = StallGuard(300*time.Millisecond)(req, steady)
	body, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(body) != "xxxxxxxx" || ex.Stalled() != 0 {
		t.Errorf("steady body: %q, %v, stalled %v; want 8 bytes, no error, not stalled", body, err, ex.Stalled())
	}
}
