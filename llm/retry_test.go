package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coderun/coderun/llm"
)

func TestBackoff(t *testing.T) {
	r := llm.Retry{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := r.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := (llm.Retry{}).Backoff(1); got != 500*time.Millisecond {
		t.Errorf("default first backoff = %v, want 500ms", got)
	}
	if got := (llm.Retry{}).Backoff(100); got != 30*time.Second {
		t.Errorf("default cap = %v, want 30s", got)
	}
}

// script returns an attempt function failing with errs in turn, then
// succeeding, and a pointer to the number of calls.
func script(errs ...error) (func(context.Context) error, *int) {
	n := 0
	return func(context.Context) error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &n
}

func kind(k error) *llm.Error { return &llm.Error{Kind: k, Provider: "test"} }

func TestRetryDo(t *testing.T) {
	fast := llm.Retry{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}
	ctx := context.Background()

	t.Run("temporary errors are retried", func(t *testing.T) {
		f, calls := script(kind(llm.ErrRateLimited), kind(llm.ErrServer), kind(llm.ErrUnreachable))
		n, err := fast.Do(ctx, f)
		if err != nil || n != 4 || *calls != 4 {
			t.Errorf("Do = %d, %v after %d calls; want success on attempt 4", n, err, *calls)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		errs := make([]error, 10)
		for i := range errs {
			errs[i] = kind(llm.ErrServer)
		}
		f, calls := script(errs...)
		n, err := fast.Do(ctx, f)
		var e *llm.Error
		if !errors.As(err, &e) || e.Attempts != 4 || n != 4 || *calls != 4 {
			t.Errorf("Do = %d, %v after %d calls; want failure after 4", n, err, *calls)
		}
	})
	t.Run("permanent errors are not", func(t *testing.T) {
		for _, k := range []error{llm.ErrAuth, llm.ErrModelNotFound, llm.ErrBadRequest, llm.ErrBadResponse} {
			f, calls := script(kind(k))
			if _, err := fast.Do(ctx, f); !errors.Is(err, k) || *calls != 1 {
				t.Errorf("%v: err %v after %d calls, want 1 call", k, err, *calls)
			}
		}
		plain := errors.New("not an llm.Error")
		f, calls := script(plain)
		if _, err := fast.Do(ctx, f); err != plain || *calls != 1 {
			t.Errorf("plain error: %v after %d calls", err, *calls)
		}
	})
	t.Run("NoRetry", func(t *testing.T) {
		f, calls := script(kind(llm.ErrServer))
		if _, err := llm.NoRetry().Do(ctx, f); err == nil || *calls != 1 {
			t.Errorf("err %v after %d calls", err, *calls)
		}
	})
	t.Run("Retry-After is waited", func(t *testing.T) {
		e := kind(llm.ErrRateLimited)
		e.RetryAfter = 50 * time.Millisecond
		f, _ := script(e)
		began := time.Now()
		if _, err := (llm.Retry{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Second}).Do(ctx, f); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d < 50*time.Millisecond {
			t.Errorf("waited %v, want at least the 50ms asked", d)
		}
	})
	t.Run("Retry-After beyond MaxDelay stops", func(t *testing.T) {
		e := kind(llm.ErrRateLimited)
		e.RetryAfter = time.Minute
		f, calls := script(e)
		if _, err := fast.Do(ctx, f); !errors.Is(err, llm.ErrRateLimited) || *calls != 1 {
			t.Errorf("err %v after %d calls, want no retry", err, *calls)
		}
	})
	t.Run("context done while waiting", func(t *testing.T) {
		c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		slow := llm.Retry{MaxAttempts: 3, BaseDelay: time.Hour, MaxDelay: time.Hour}
		f, calls := script(kind(llm.ErrServer))
		began := time.Now()
		_, err := slow.Do(c, f)
		if !errors.Is(err, context.DeadlineExceeded) || *calls != 1 || time.Since(began) > time.Second {
			t.Errorf("err %v after %d calls and %v", err, *calls, time.Since(began))
		}
	})
	t.Run("context done before", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		f, calls := script()
		if n, err := fast.Do(c, f); !errors.Is(err, context.Canceled) || n != 0 || *calls != 0 {
			t.Errorf("Do = %d, %v after %d calls", n, err, *calls)
		}
	})
}

func TestErrorMessage(t *testing.T) {
	e := &llm.Error{Kind: llm.ErrServer, Provider: "openai", Model: "gpt-4o", StatusCode: 503,
		Message: "overloaded", Attempts: 4, Err: errors.New("sdk detail")}
	want := `openai model "gpt-4o": server error (HTTP 503): overloaded (after 4 attempts)`
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	e = &llm.Error{Kind: llm.ErrUnreachable, Provider: "ollama", Model: "qwen", BaseURL: "http://localhost:11434/v1", Message: "connection refused"}
	want = `ollama model "qwen": endpoint unreachable at http://localhost:11434/v1: connection refused`
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if !errors.Is(e, llm.ErrUnreachable) || errors.Is(e, llm.ErrServer) {
		t.Error("errors.Is on Kind broken")
	}
}
