package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Eviction reasons.
const (
	EvictIdle     = "idle"     // unused for longer than the idle timeout
	EvictCapacity = "capacity" // the least recently used idle session, to make room
)

// Eviction reports a session a Manager closed on its own.
type Eviction struct {
	ID       string
	Tenant   string
	Reason   string // EvictIdle or EvictCapacity
	At       time.Time
	LastUsed time.Time
	Cells    int
}

// ManagerOptions configure a Manager. The zero value works.
type ManagerOptions struct {
	// MaxSessions bounds the sessions open at once. When a new one would
	// exceed it, the least recently used session that is not running a cell
	// is evicted; if every session is busy, Create fails with ErrFull.
	// Default 100.
	MaxSessions int
	// IdleTimeout evicts sessions unused for this long. Default 30 minutes;
	// negative: never.
	IdleTimeout time.Duration
	// Pool, if set, serves Create when the configuration matches its own.
	// The Manager does not close it.
	Pool *Pool
	// OnEvict is told of every eviction, from the goroutine that evicts.
	OnEvict func(Eviction)
	// Remember is how many evicted session IDs are remembered, so that Get
	// says "evicted" rather than "not found". Default 10000.
	Remember int
}

// Manager errors.
var (
	ErrNotFound = errors.New("session: no such session")
	ErrFull     = errors.New("session: too many sessions, all busy")
)

// Manager keeps the sessions of a service: it creates them (from a warm
// pool when one fits), finds them by ID, lists them, and evicts the idle
// ones (past the idle timeout, or the least recently used when room is
// needed). Every eviction is reported to OnEvict, and the evicted session
// and Get answer *EvictedError afterwards. A Manager is safe for
// concurrent use.
type Manager struct {
	rt   sandbox.Interactive
	opts ManagerOptions

	mu       sync.Mutex
	sessions map[string]*Session
	pending  int // Creates in progress, counted against MaxSessions
	evicted  map[string]*EvictedError
	order    []string // evicted IDs, oldest first
	closed   bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewManager returns a Manager creating sessions in rt's sandboxes.
func NewManager(rt sandbox.Interactive, opts ManagerOptions) *Manager {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 100
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.Remember <= 0 {
		opts.Remember = 10000
	}
	m := &Manager{rt: rt, opts: opts, sessions: map[string]*Session{}, evicted: map[string]*EvictedError{}, stop: make(chan struct{})}
	if opts.IdleTimeout > 0 {
		m.wg.Add(1)
		go m.janitor()
	}
	return m
}

// Sessions is one tenant's view of a Manager: the sessions it creates
// belong to the tenant, and another tenant's sessions are not there (Get
// answers ErrNotFound, as for an id that never existed; List leaves them
// out). Capacity is the Manager's, across tenants; a full Manager evicts an
// idle session of the tenant holding the most sessions, never one of a
// tenant holding fewer than the one creating.
type Sessions struct {
	m      *Manager
	tenant string
}

// Tenant returns tenant's view of the Manager. A tenant is named by 1 to 64
// letters, digits, '.', '_' or '-'.
func (m *Manager) Tenant(tenant string) (*Sessions, error) {
	if !validTenant(tenant) {
		return nil, fmt.Errorf("%w: session: tenant %q: want 1 to 64 letters, digits, '.', '_' or '-'", sandbox.ErrInvalid, tenant)
	}
	return &Sessions{m: m, tenant: tenant}, nil
}

func validTenant(t string) bool {
	if len(t) == 0 || len(t) > 64 {
		return false
	}
	for _, r := range t {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// Create makes a new session of the tenant's, evicting the least recently
// used idle one (of any tenant) if the Manager is full.
func (t *Sessions) Create(ctx context.Context, cfg Config) (*Session, error) {
	return t.m.create(ctx, t.tenant, nil, cfg)
}

// CreateOn is Create in a sandbox of rt instead of the Manager's runtime
// (never from the pool, whose sessions are the Manager's runtime's): a
// server that lets a request choose among runtimes keeps every session in
// one Manager, under one capacity.
func (t *Sessions) CreateOn(ctx context.Context, rt sandbox.Interactive, cfg Config) (*Session, error) {
	if rt == nil {
		return nil, errors.New("session: CreateOn needs a runtime")
	}
	return t.m.create(ctx, t.tenant, rt, cfg)
}

// Get returns the tenant's open session id; an evicted one yields its
// *EvictedError; another tenant's, ErrNotFound.
func (t *Sessions) Get(id string) (*Session, error) { return t.m.get(t.tenant, id) }

// List describes the tenant's open sessions, oldest first.
func (t *Sessions) List() []Info { return t.m.list(t.tenant) }

func (m *Manager) create(ctx context.Context, tenant string, rt sandbox.Interactive, cfg Config) (*Session, error) {
	if err := m.reserve(tenant); err != nil {
		return nil, err
	}
	s, err := m.open(ctx, rt, cfg)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending--
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tenant = tenant
	s.mu.Unlock()
	if m.closed {
		go s.Close()
		return nil, errors.New("session: manager closed")
	}
	m.sessions[s.id] = s
	s.mu.Lock()
	s.onClose = func() { m.forget(s.id) }
	s.mu.Unlock()
	return s, nil
}

// open makes the session in rt's sandbox, or (rt nil) the Manager's
// runtime's, from the pool when one fits.
func (m *Manager) open(ctx context.Context, rt sandbox.Interactive, cfg Config) (*Session, error) {
	if rt != nil {
		return New(ctx, rt, cfg)
	}
	if p := m.opts.Pool; p != nil && p.fits(cfg) {
		s, err := p.Get(ctx)
		if err != nil {
			return nil, err
		}
		for _, f := range cfg.Files {
			if err := s.Upload(f.Path, f.Content, f.Mode); err != nil {
				s.Close()
				return nil, err
			}
		}
		return s, nil
	}
	return New(ctx, m.rt, cfg)
}

// reserve counts tenant's Create against MaxSessions, evicting to make room.
func (m *Manager) reserve(tenant string) error {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return errors.New("session: manager closed")
		}
		if len(m.sessions)+m.pending < m.opts.MaxSessions {
			m.pending++
			m.mu.Unlock()
			return nil
		}
		victim := m.victim(tenant)
		if victim == nil {
			m.mu.Unlock()
			return fmt.Errorf("%w (%d)", ErrFull, m.opts.MaxSessions)
		}
		ev := m.markEvicted(victim, EvictCapacity)
		m.mu.Unlock()
		m.finishEviction(victim, ev)
	}
}

// victim chooses the idle session a full Manager evicts for tenant's
// Create: the least recently used idle session of the tenant that holds the
// most open sessions (tenant itself on a tie), so that a tenant never
// evicts the sessions of one that holds fewer than it does, and one that
// creates session after session evicts its own. Nil when no session of
// such a tenant is idle. m.mu is held.
func (m *Manager) victim(tenant string) *Session {
	held := map[string]int{}
	for _, s := range m.sessions {
		held[s.tenant]++
	}
	type candidate struct {
		s    *Session
		used time.Time
	}
	best := map[string]candidate{} // each tenant's least recently used idle session
	for _, s := range m.sessions {
		used, busy := s.lastUse()
		if c, ok := best[s.tenant]; !busy && (!ok || used.Before(c.used)) {
			best[s.tenant] = candidate{s, used}
		}
	}
	var victim candidate
	most := -1
	for t, c := range best {
		n := held[t]
		if n < held[tenant] {
			continue // never evict a tenant that holds fewer sessions
		}
		if n > most || n == most && (t == tenant || victim.s.tenant != tenant && c.used.Before(victim.used)) {
			victim, most = c, n
		}
	}
	return victim.s
}

// markEvicted removes s from the open sessions and remembers it. m.mu is held.
func (m *Manager) markEvicted(s *Session, reason string) Eviction {
	now := time.Now()
	used, _ := s.lastUse()
	delete(m.sessions, s.id)
	e := &EvictedError{ID: s.id, Tenant: s.tenant, Reason: reason, At: now}
	m.evicted[s.id] = e
	m.order = append(m.order, s.id)
	if len(m.order) > m.opts.Remember {
		delete(m.evicted, m.order[0])
		m.order = m.order[1:]
	}
	return Eviction{ID: s.id, Tenant: s.tenant, Reason: reason, At: now, LastUsed: used, Cells: s.cells()}
}

func (m *Manager) finishEviction(s *Session, ev Eviction) {
	m.mu.Lock()
	e := m.evicted[s.id]
	m.mu.Unlock()
	if e == nil {
		e = &EvictedError{ID: ev.ID, Tenant: ev.Tenant, Reason: ev.Reason, At: ev.At}
	}
	_ = s.closeWith(e)
	if m.opts.OnEvict != nil {
		m.opts.OnEvict(ev)
	}
}

func (m *Manager) forget(id string) {
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
}

// janitor evicts sessions past the idle timeout.
func (m *Manager) janitor() {
	defer m.wg.Done()
	every := min(max(m.opts.IdleTimeout/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.EvictIdle()
	}
}

// EvictIdle evicts every session unused for longer than the idle timeout
// now, and returns what it evicted. The Manager calls it periodically.
func (m *Manager) EvictIdle() []Eviction {
	if m.opts.IdleTimeout <= 0 {
		return nil
	}
	now := time.Now()
	m.mu.Lock()
	var victims []*Session
	var evs []Eviction
	for _, s := range m.sessions {
		used, busy := s.lastUse()
		if !busy && now.Sub(used) > m.opts.IdleTimeout {
			victims = append(victims, s)
			evs = append(evs, m.markEvicted(s, EvictIdle))
		}
	}
	m.mu.Unlock()
	for i, s := range victims {
		m.finishEviction(s, evs[i])
	}
	return evs
}

func (m *Manager) get(tenant, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok && s.tenantIs(tenant) {
		return s, nil
	}
	if e, ok := m.evicted[id]; ok && e.Tenant == tenant {
		return nil, e
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
}

func (m *Manager) list(tenant string) []Info {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		if s.tenantIs(tenant) {
			all = append(all, s)
		}
	}
	m.mu.Unlock()
	out := make([]Info, len(all))
	for i, s := range all {
		out[i] = s.Info()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Close closes every session and stops the janitor.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tenantIs reports whether the session belongs to tenant.
func (s *Session) tenantIs(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tenant == tenant
}

// Runtime is the runtime the Manager's sessions make their sandboxes with:
// a caller that makes a sandbox for several sessions to share
// (Config.Sandbox) makes it there.
func (m *Manager) Runtime() sandbox.Interactive { return m.rt }
