package e2b

import (
	"context"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/session"
)

// TestSandboxEndsWithItsDefaultContext: when its default context is
// closed under it (the session manager evicts it), the sandbox ends by
// itself, with what runs beside (here its file helper), though no request
// comes for it again.
func TestSandboxEndsWithItsDefaultContext(t *testing.T) {
	rt := linuxtest.Runtime(t, linux.Options{})
	linuxtest.RequireIPython(t)
	m := session.NewManager(rt, session.ManagerOptions{MaxSessions: 4, IdleTimeout: -1})
	defer m.Close()
	s, err := New(Options{Manager: m, InsecureLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := s.create(ctx, "t", sandboxOptions{id: "sbx"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.fs.call(ctx, "stat", pathRequest{Workdir}, nil); err != nil {
		t.Fatalf("the file helper: %v", err)
	}
	b.primary.sess.Close() // as the manager's eviction does
	select {
	case <-b.ended:
	case <-ctx.Done():
		t.Fatal("the sandbox did not end with its default context")
	}
	s.reg.mu.Lock()
	_, still := s.reg.boxes[boxKey{"t", "sbx"}]
	s.reg.mu.Unlock()
	if still {
		t.Error("the ended sandbox is still registered")
	}
	if err := b.fs.call(ctx, "stat", pathRequest{Workdir}, nil); err == nil {
		t.Error("the ended sandbox's file helper still answers")
	}
}
