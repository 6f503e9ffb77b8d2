package server

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// TenantLimits bound what each tenant may use at once. A zero field means
// no bound.
type TenantLimits struct {
	// Sessions is how many sessions a tenant may have open at once.
	Sessions int
	// Executions is how many executions (one-shot runs and session cells)
	// a tenant may have running at once.
	Executions int
	// Rate is how many requests per second a tenant may make, on average;
	// Burst how many at once above it (default: Rate, at least 1).
	Rate  float64
	Burst int
}

// LimitError is a request beyond a tenant's limits: answered 429 with a
// Retry-After of RetryAfter.
type LimitError struct {
	Tenant     string
	What       string // "requests", "executions", "sessions"
	Limit      int
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	switch e.What {
	case "requests":
		return fmt.Sprintf("tenant %s: more than %d requests per second", e.Tenant, e.Limit)
	}
	return fmt.Sprintf("tenant %s: at most %d %s at once", e.Tenant, e.Limit, e.What)
}

// Tenants enforces TenantLimits, per tenant. It is safe for concurrent
// use; its zero value is not: use NewTenants.
type Tenants struct {
	limits TenantLimits

	mu      sync.Mutex
	tenants map[string]*tenantState
}

type tenantState struct {
	limiter    *rate.Limiter
	executions int
	sessions   int
}

// NewTenants enforces limits.
func NewTenants(limits TenantLimits) *Tenants {
	if limits.Rate > 0 && limits.Burst <= 0 {
		limits.Burst = max(int(limits.Rate), 1)
	}
	return &Tenants{limits: limits, tenants: map[string]*tenantState{}}
}

// Limits are the limits enforced.
func (t *Tenants) Limits() TenantLimits { return t.limits }

func (t *Tenants) state(tenant string) *tenantState {
	st := t.tenants[tenant]
	if st == nil {
		st = &tenantState{}
		if t.limits.Rate > 0 {
			st.limiter = rate.NewLimiter(rate.Limit(t.limits.Rate), t.limits.Burst)
		}
		t.tenants[tenant] = st
	}
	return st
}

// Allow counts one request of tenant against its rate; beyond it, a
// *LimitError says when to retry.
func (t *Tenants) Allow(tenant string) error {
	t.mu.Lock()
	st := t.state(tenant)
	t.mu.Unlock()
	if st.limiter == nil {
		return nil
	}
	r := st.limiter.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return &LimitError{Tenant: tenant, What: "requests", Limit: int(t.limits.Rate), RetryAfter: d}
	}
	return nil
}

// StartExecution counts one running execution of tenant; release ends it.
// Beyond the limit, a *LimitError.
func (t *Tenants) StartExecution(tenant string) (release func(), err error) {
	return t.acquire(tenant, "executions", t.limits.Executions, func(st *tenantState) *int { return &st.executions })
}

// ReserveSession counts one open session of tenant; release gives the
// place back (when the session could not be made, or is closed). Beyond
// the limit, a *LimitError.
func (t *Tenants) ReserveSession(tenant string) (release func(), err error) {
	return t.acquire(tenant, "sessions", t.limits.Sessions, func(st *tenantState) *int { return &st.sessions })
}

func (t *Tenants) acquire(tenant, what string, limit int, count func(*tenantState) *int) (func(), error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := count(t.state(tenant))
	if limit > 0 && *n >= limit {
		return nil, &LimitError{Tenant: tenant, What: what, Limit: limit, RetryAfter: time.Second}
	}
	*n++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			*n--
			t.mu.Unlock()
		})
	}, nil
}
