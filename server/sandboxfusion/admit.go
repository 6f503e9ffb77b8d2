package sandboxfusion

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coderun/coderun/server"
)

// executionPoll is how often a run waiting for one of its tenant's
// executions looks again.
const executionPoll = 5 * time.Millisecond

// TenantAdmit is an Options.Admit over the server's per-tenant limits that
// waits rather than refuses: SandboxFusion's clients take any answer but
// 200 as a failed run (verl retries only a 504), so a run beyond its
// tenant's request rate waits until the rate allows it, and one beyond its
// tenant's executions at once waits until one ends. It gives up only when
// ctx is done (the client has gone).
func TenantAdmit(t *server.Tenants) func(ctx context.Context, tenant string) (release func(), err error) {
	return func(ctx context.Context, tenant string) (func(), error) {
		for {
			err := t.Allow(tenant)
			if err == nil {
				break
			}
			if err := pause(ctx, err, time.Second); err != nil {
				return nil, err
			}
		}
		for {
			release, err := t.StartExecution(tenant)
			if err == nil {
				return release, nil
			}
			if err := pause(ctx, err, executionPoll); err != nil {
				return nil, err
			}
		}
	}
}

// TenantSessions is an Options.ReserveSession over the server's
// per-tenant limits that waits rather than refuses, as TenantAdmit does: a
// /run_jupyter request beyond its tenant's sessions open at once waits
// until one closes, or until ctx is done.
func TenantSessions(t *server.Tenants) func(ctx context.Context, tenant string) (release func(), err error) {
	return func(ctx context.Context, tenant string) (func(), error) {
		for {
			release, err := t.ReserveSession(tenant)
			if err == nil {
				return release, nil
			}
			if err := pause(ctx, err, sessionPoll); err != nil {
				return nil, err
			}
		}
	}
}

// sessionPoll is how often a /run_jupyter request waiting for one of its
// tenant's sessions looks again.
const sessionPoll = 50 * time.Millisecond

// pause waits after a limit's error: its Retry-After, at most most; an
// error that is not a limit's is returned.
func pause(ctx context.Context, err error, most time.Duration) error {
	var limit *server.LimitError
	if !errors.As(err, &limit) {
		return err
	}
	d := min(max(limit.RetryAfter, time.Millisecond), most)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the tenant's turn (%v): %w", limit, ctx.Err())
	}
}
