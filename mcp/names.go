package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// names maps a tenant's session names (chosen by the client: "analysis")
// to the session manager's ids. Creating under a name is serialised, so
// two calls naming a new session at once make one session.
type names struct {
	mu   sync.Mutex
	ids  map[string]string // name -> session id
	lock chan struct{}     // held while a session is being created
}

func newNames() *names {
	return &names{ids: map[string]string{}, lock: make(chan struct{}, 1)}
}

// errNoSession: the name names no open session.
var errNoSession = errors.New("no such session")

// validName checks a session name: 1 to 64 letters, digits, '.', '_' or '-'.
func validName(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("session name %q: want 1 to 64 letters, digits, '.', '_' or '-'", n)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("session name %q: want 1 to 64 letters, digits, '.', '_' or '-'", n)
		}
	}
	return nil
}

// opened is a session found or made by name.
type opened struct {
	s       *session.Session
	name    string
	created bool
	// lost says why an earlier session of that name is gone (evicted),
	// when this one replaced it.
	lost string
}

// find returns the open session called name (or with that id, for a
// session made elsewhere, by coderun's own API): errNoSession when there
// is none, an *session.EvictedError when it was evicted.
func (t *tenant) find(name string) (*session.Session, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	t.names.mu.Lock()
	id, ok := t.names.ids[name]
	t.names.mu.Unlock()
	if !ok {
		id = name
	}
	s, err := t.sessions.Get(id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, fmt.Errorf("%w called %q (session_list shows the open ones)", errNoSession, name)
	}
	return s, err
}

// open returns the session called name, creating it (in lang, python when
// empty) when there is none or the one there was has been evicted or
// closed. A session that exists in another language is an error.
func (t *tenant) open(ctx context.Context, name string, lang sandbox.Language, create bool) (*opened, error) {
	s, err := t.find(name)
	var ev *session.EvictedError
	switch {
	case err == nil && s.Closed() == nil:
		if lang != "" && s.Language() != lang {
			return nil, fmt.Errorf("session %q is a %s session, not %s", name, s.Language(), lang)
		}
		return &opened{s: s, name: name}, nil
	case err == nil, errors.Is(err, errNoSession), errors.As(err, &ev):
	default:
		return nil, err
	}
	if !create {
		if err == nil {
			err = s.Closed()
		}
		return nil, err
	}
	select {
	case t.names.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-t.names.lock }()
	// Another call may have made it meanwhile.
	if s, err := t.find(name); err == nil && s.Closed() == nil {
		return &opened{s: s, name: name}, nil
	}
	if lang == "" {
		lang = sandbox.Python
	}
	release, err := t.reserveSession()
	if err != nil {
		return nil, fmt.Errorf("create session %q: %w", name, err)
	}
	s, err = t.sessions.Create(ctx, t.svc.opts.SessionConfig(lang))
	if err != nil {
		release()
		return nil, fmt.Errorf("create session %q: %w", name, err)
	}
	t.hold(s.ID(), release)
	t.names.mu.Lock()
	t.names.ids[name] = s.ID()
	t.names.mu.Unlock()
	o := &opened{s: s, name: name, created: true}
	if ev != nil {
		o.lost = ev.Error() + "; this is a new session: variables and files of the old one are gone"
	}
	return o, nil
}

// forget drops name.
func (t *tenant) forget(name string) {
	t.names.mu.Lock()
	delete(t.names.ids, name)
	t.names.mu.Unlock()
}

// nameOf returns the name of session id ("" when it has none).
func (t *tenant) nameOf(id string) string {
	t.names.mu.Lock()
	defer t.names.mu.Unlock()
	for n, i := range t.names.ids {
		if i == id {
			return n
		}
	}
	return ""
}

// list describes the tenant's open sessions, named ones by name, oldest
// first. Names of sessions that are gone are dropped, but for evicted
// ones, whose name's next use says so.
func (t *tenant) list() []SessionInfo {
	infos := t.sessions.List()
	open := map[string]bool{}
	out := make([]SessionInfo, 0, len(infos))
	for _, in := range infos {
		open[in.ID] = true
		out = append(out, sessionInfo(t.nameOf(in.ID), in))
	}
	t.names.mu.Lock()
	for n, id := range t.names.ids {
		if open[id] {
			continue
		}
		if _, err := t.sessions.Get(id); !errors.Is(err, session.ErrEvicted) {
			delete(t.names.ids, n)
		}
	}
	t.names.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
	return out
}
