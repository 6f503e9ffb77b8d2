package session_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// namedRuntime is a runtime of long-lived sandboxes under a name of its
// own, counting the sandboxes it makes.
type namedRuntime struct {
	sandbox.Interactive
	name  string
	boxes atomic.Int32
}

func (n *namedRuntime) Name() string { return n.name }

func (n *namedRuntime) NewSandbox(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	n.boxes.Add(1)
	return n.Interactive.NewSandbox(ctx, spec)
}

// TestManagerCreateOn: a session created on another runtime runs in that
// runtime's sandbox, says so in its Info (as a session on the Manager's
// runtime names that one), and counts against the Manager's capacity.
func TestManagerCreateOn(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	first, second := &namedRuntime{Interactive: rt, name: "first"}, &namedRuntime{Interactive: rt, name: "second"}
	m := session.NewManager(first, session.ManagerOptions{MaxSessions: 2, IdleTimeout: -1})
	defer m.Close()
	ts := tenant(t, m, "default")
	ctx := context.Background()
	bash := session.Config{Language: sandbox.Bash}
	s1, err := ts.Create(ctx, bash)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ts.CreateOn(ctx, second, bash)
	if err != nil {
		t.Fatal(err)
	}
	if got := s1.Info().Runtime; got != "first" {
		t.Errorf("a session of the Manager's runtime says runtime %q, want first", got)
	}
	if got := s2.Info().Runtime; got != "second" {
		t.Errorf("a session created on another runtime says runtime %q, want second", got)
	}
	if f, s := first.boxes.Load(), second.boxes.Load(); f != 1 || s != 1 {
		t.Errorf("sandboxes made: %d by the Manager's runtime, %d by the other; want 1 and 1", f, s)
	}
	ok(t, s2, "x=1")
	var runtimes []string
	for _, info := range ts.List() {
		runtimes = append(runtimes, info.Runtime)
	}
	if len(runtimes) != 2 || runtimes[0] != "first" || runtimes[1] != "second" {
		t.Errorf("List's runtimes %q, want [first second]", runtimes)
	}
	// The Manager is full: a third session evicts the least recently used.
	if _, err := ts.CreateOn(ctx, second, bash); err != nil {
		t.Fatal(err)
	}
	if s1.Closed() == nil {
		t.Error("a third session did not evict the least recently used one: CreateOn is outside the Manager's capacity")
	}
	if _, err := ts.CreateOn(ctx, nil, bash); err == nil {
		t.Error("CreateOn without a runtime did not fail")
	}
}
