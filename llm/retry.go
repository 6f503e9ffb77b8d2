package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry is the retry policy of a provider. The zero value is the default
// policy: 4 attempts, backoff from 500ms doubling up to 30s.
//
// coderun retries by itself instead of using the SDKs' built-in retries
// (which the adapters switch off), so that both providers behave the same,
// the attempts are counted in [Response.Attempts] and [Error.Attempts], and
// tests can shrink the waits.
//
// What is retried: HTTP 429, 408 and 5xx (Anthropic's 529 "overloaded"
// included) and failures to get any HTTP answer (refused or reset
// connections, timeouts of one attempt). Everything else — 400, 401, 403,
// 404, malformed tool calls, a done context — is returned at once.
//
// The wait before attempt n+1 is the server's Retry-After (or
// Retry-After-Ms) when it sent one, otherwise BaseDelay·2ⁿ⁻¹ capped at
// MaxDelay, scaled by a random factor in [0.5, 1) so that clients hitting
// the same limit spread out. A Retry-After longer than MaxDelay stops the
// retries: the error is returned with [Error.RetryAfter] set, for the caller
// to decide.
type Retry struct {
	// MaxAttempts is the number of requests at most, the first included;
	// 0 means 4, 1 means no retries.
	MaxAttempts int
	// BaseDelay is the first backoff; 0 means 500ms.
	BaseDelay time.Duration
	// MaxDelay caps each wait; 0 means 30s.
	MaxDelay time.Duration
}

// NoRetry is the policy of a single attempt.
func NoRetry() Retry { return Retry{MaxAttempts: 1} }

func (r Retry) attempts() int {
	if r.MaxAttempts <= 0 {
		return 4
	}
	return r.MaxAttempts
}

func (r Retry) baseDelay() time.Duration {
	if r.BaseDelay <= 0 {
		return 500 * time.Millisecond
	}
	return r.BaseDelay
}

func (r Retry) maxDelay() time.Duration {
	if r.MaxDelay <= 0 {
		return 30 * time.Second
	}
	return r.MaxDelay
}

// Backoff returns the wait after the n-th failed attempt (n ≥ 1) when the
// server did not say, without the random factor.
func (r Retry) Backoff(n int) time.Duration {
	d := r.baseDelay()
	for i := 1; i < n && d < r.maxDelay(); i++ {
		d *= 2
	}
	return min(d, r.maxDelay())
}

// Do calls attempt until it succeeds, fails in a way not worth retrying, the
// attempts run out or ctx is done, and returns the number of attempts made
// with the last error. An error to be retried is an [*Error] whose
// Temporary method reports true; its Attempts field is set to the count.
func (r Retry) Do(ctx context.Context, attempt func(ctx context.Context) error) (int, error) {
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return n - 1, err
		}
		err := attempt(ctx)
		if err == nil {
			return n, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return n, err
		}
		e.Attempts = n
		if !e.Temporary() || n >= r.attempts() {
			return n, err
		}
		wait := time.Duration(float64(r.Backoff(n)) * (0.5 + rand.Float64()/2))
		if e.RetryAfter > 0 {
			if e.RetryAfter > r.maxDelay() {
				return n, err
			}
			wait = e.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, fmt.Errorf("%w while waiting to retry after: %v", ctx.Err(), err)
		case <-t.C:
		}
	}
}
