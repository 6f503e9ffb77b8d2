package session_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

type evictions struct {
	mu  sync.Mutex
	got []session.Eviction
}

func (e *evictions) add(ev session.Eviction) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *evictions) list() []session.Eviction {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]session.Eviction(nil), e.got...)
}

func TestManagerEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	var ev evictions
	m := session.NewManager(rt, session.ManagerOptions{MaxSessions: 2, IdleTimeout: -1, OnEvict: ev.add})
	defer m.Close()
	ts := tenant(t, m, "default")
	ctx := context.Background()
	bash := session.Config{Language: sandbox.Bash}
	s1, err := ts.Create(ctx, bash)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ts.Create(ctx, bash)
	if err != nil {
		t.Fatal(err)
	}
	ok(t, s1, "a=1")
	ok(t, s2, "b=2") // s1 is now the least recently used
	s3, err := ts.Create(ctx, bash)
	if err != nil {
		t.Fatal(err)
	}
	got := ev.list()
	if len(got) != 1 || got[0].ID != s1.ID() || got[0].Reason != session.EvictCapacity || got[0].Cells != 1 {
		t.Fatalf("evictions %+v", got)
	}
	_, err = s1.Execute(ctx, session.Exec{Code: "echo $a"})
	var evicted *session.EvictedError
	if !errors.As(err, &evicted) || evicted.Reason != session.EvictCapacity || !errors.Is(err, session.ErrEvicted) {
		t.Fatalf("evicted session answered %v", err)
	}
	if _, err := ts.Get(s1.ID()); !errors.As(err, &evicted) {
		t.Fatalf("Get of evicted: %v", err)
	}
	if _, err := ts.Get("nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get of unknown: %v", err)
	}
	if got, err := ts.Get(s2.ID()); err != nil || got != s2 {
		t.Fatalf("Get s2: %v", err)
	}
	list := ts.List()
	if len(list) != 2 || list[0].ID != s2.ID() || list[1].ID != s3.ID() || list[0].Cells != 1 || !list[0].Alive {
		t.Fatalf("list %+v", list)
	}

	// A busy session is not evicted: with every session busy, Create fails.
	var wg sync.WaitGroup
	for _, s := range []*session.Session{s2, s3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Execute(ctx, session.Exec{Code: "sleep 1"})
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !(s2.Info().Busy && s3.Info().Busy) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := ts.Create(ctx, bash); !errors.Is(err, session.ErrFull) {
		t.Fatalf("Create with every session busy: %v", err)
	}
	wg.Wait()

	// A closed session leaves room without an eviction.
	s3.Close()
	if _, err := ts.Create(ctx, bash); err != nil || len(ev.list()) != 1 {
		t.Fatalf("after close: %v, %d evictions", err, len(ev.list()))
	}
}

func TestManagerIdleTimeout(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	var ev evictions
	m := session.NewManager(rt, session.ManagerOptions{IdleTimeout: 1500 * time.Millisecond, OnEvict: ev.add})
	defer m.Close()
	ts := tenant(t, m, "default")
	ctx := context.Background()
	s, err := ts.Create(ctx, session.Config{Language: sandbox.Bash})
	if err != nil {
		t.Fatal(err)
	}
	// Use keeps it alive...
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		ok(t, s, "true")
	}
	// ...idleness does not.
	deadline := time.Now().Add(5 * time.Second)
	for len(ev.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := ev.list()
	if len(got) != 1 || got[0].ID != s.ID() || got[0].Reason != session.EvictIdle || got[0].Cells != 4 {
		t.Fatalf("evictions %+v", got)
	}
	var evicted *session.EvictedError
	if err := s.Upload("f", nil, 0); !errors.As(err, &evicted) || evicted.Reason != session.EvictIdle {
		t.Fatalf("evicted session answered %v", err)
	}
	if len(ts.List()) != 0 {
		t.Fatal("evicted session still listed")
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	cfg := session.Config{Preload: []string{"numpy"}}
	p, err := session.NewPool(rt, cfg, session.PoolOptions{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(60 * time.Second)
	for p.Ready() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if p.Ready() < 1 {
		t.Fatal("pool never filled")
	}
	m := session.NewManager(rt, session.ManagerOptions{Pool: p})
	defer m.Close()
	ts := tenant(t, m, "default")
	ctx := context.Background()
	start := time.Now()
	s, err := ts.Create(ctx, session.Config{Preload: []string{"numpy"}, Files: []sandbox.File{{Path: "n.txt", Content: []byte("3")}}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !s.Info().Pooled {
		t.Fatal("not served from the pool")
	}
	t.Logf("session from the pool in %v", took)
	// numpy is imported already (as np); files are uploaded; counting starts at 1.
	c := ok(t, s, "int(np.arange(int(open('n.txt').read())).sum())")
	if result(t, c) != "3" || c.ExecutionCount != 1 {
		t.Fatalf("pooled session: %s", describe(c))
	}
	// A different configuration does not come from the pool.
	other, err := ts.Create(ctx, session.Config{Language: sandbox.Bash})
	if err != nil || other.Info().Pooled {
		t.Fatalf("bash session from a python pool: %v", err)
	}
	// Each pooled session is used once.
	deadline = time.Now().Add(60 * time.Second)
	for p.Ready() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s2, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.ID() == s.ID() || !s2.Info().Pooled {
		t.Fatal("pooled session handed out twice")
	}
	if c := ok(t, s2, "'x' in dir()"); result(t, c) != "False" {
		t.Fatal(describe(c))
	}
}

// tenant is a tenant's view of m.
func tenant(t *testing.T, m *session.Manager, name string) *session.Sessions {
	t.Helper()
	ts, err := m.Tenant(name)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// One tenant's sessions are not another's: Get answers ErrNotFound as for
// an id that never existed, evicted ones included, and List leaves them out.
func TestManagerTenants(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	m := session.NewManager(rt, session.ManagerOptions{MaxSessions: 2, IdleTimeout: -1})
	defer m.Close()
	acme, globex := tenant(t, m, "acme"), tenant(t, m, "globex")
	ctx := context.Background()
	a, err := acme.Create(ctx, session.Config{Language: sandbox.Bash})
	if err != nil {
		t.Fatal(err)
	}
	if a.Info().Tenant != "acme" {
		t.Errorf("tenant %q", a.Info().Tenant)
	}
	if _, err := globex.Get(a.ID()); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("another tenant's Get: %v, want ErrNotFound", err)
	}
	if got, err := acme.Get(a.ID()); err != nil || got != a {
		t.Errorf("the tenant's own Get: %v %v", got, err)
	}
	if l := globex.List(); len(l) != 0 {
		t.Errorf("another tenant lists %+v", l)
	}
	if l := acme.List(); len(l) != 1 || l[0].ID != a.ID() {
		t.Errorf("the tenant lists %+v", l)
	}
	// Fill the manager with acme's second session, then create one for
	// globex: acme holds the most, so its least recently used session is
	// evicted, and only acme learns so.
	if _, err := acme.Create(ctx, session.Config{Language: sandbox.Bash}); err != nil {
		t.Fatal(err)
	}
	if _, err := globex.Create(ctx, session.Config{Language: sandbox.Bash}); err != nil {
		t.Fatal(err)
	}
	var evicted *session.EvictedError
	if _, err := acme.Get(a.ID()); !errors.As(err, &evicted) || evicted.Tenant != "acme" {
		t.Errorf("the owner's Get after eviction: %v", err)
	}
	if _, err := globex.Get(a.ID()); !errors.Is(err, session.ErrNotFound) || errors.As(err, &evicted) {
		t.Errorf("another tenant's Get after eviction: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("x", 65)} {
		if _, err := m.Tenant(bad); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("tenant %q: %v", bad, err)
		}
	}
}

// A full Manager shared by tenants evicts the idle session of the tenant
// holding the most: a tenant that creates session after session evicts its
// own, never the one session another tenant holds, even when that one is
// the least recently used of all.
func TestManagerEvictsFromTheTenantHoldingMost(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	var ev evictions
	m := session.NewManager(rt, session.ManagerOptions{MaxSessions: 3, IdleTimeout: -1, OnEvict: ev.add})
	defer m.Close()
	a, b := tenant(t, m, "a"), tenant(t, m, "b")
	ctx := context.Background()
	bash := session.Config{Language: sandbox.Bash}
	create := func(ts *session.Sessions) *session.Session {
		t.Helper()
		s, err := ts.Create(ctx, bash)
		if err != nil {
			t.Fatal(err)
		}
		ok(t, s, "true")
		return s
	}
	b1 := create(b) // the least recently used session of all
	a1 := create(a)
	a2 := create(a)
	a3 := create(a) // full: a holds 2, b 1, so a evicts its own a1
	if got := ev.list(); len(got) != 1 || got[0].ID != a1.ID() || got[0].Tenant != "a" {
		t.Fatalf("a's third session evicted %+v, want a's own least recently used %s", got, a1.ID())
	}
	if _, err := b.Get(b1.ID()); err != nil {
		t.Fatalf("b's only session was evicted by a: %v", err)
	}
	b2 := create(b) // b holds 1, a 2: b evicts a's least recently used, a2
	if got := ev.list(); len(got) != 2 || got[1].ID != a2.ID() {
		t.Fatalf("b's second session evicted %+v, want a's %s", got, a2.ID())
	}
	for _, s := range []*session.Session{b1, b2, a3} {
		if s.Closed() != nil {
			t.Fatalf("session %s closed: %v", s.ID(), s.Closed())
		}
	}
}
