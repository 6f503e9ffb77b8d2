package e2b

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
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

// oneAtATime is a sandbox that runs one program at a time: its
// StartBeside is hidden.
type oneAtATime struct{ sandbox.Sandbox }

// TestOneProgramAtATimeRuntime: where the sandbox runs one program at a
// time and one runs (the default context's interpreter), the file helper
// cannot start, and says why (failed_precondition, not the SDK's
// "sandbox not running").
func TestOneProgramAtATimeRuntime(t *testing.T) {
	rt := linuxtest.Runtime(t, linux.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{Limits: sandbox.Limits{Memory: 256 << 20, Processes: 64, OpenFiles: 256, WorkspaceBytes: 16 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	view := sharedSandbox{oneAtATime{sb}}
	first, err := view.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "read -r _"})
	if err != nil {
		t.Fatalf("the first program: %v", err)
	}
	defer first.Kill()
	fs := &envd{sb: view}
	err = fs.call(ctx, "stat", pathRequest{Workdir}, nil)
	var re *rpcError
	if !errors.As(err, &re) || re.Code != codeFailedPrecondition || !strings.Contains(re.Message, "one program at a time") {
		t.Errorf("the file helper beside a running program, one at a time: %v", err)
	}
}
