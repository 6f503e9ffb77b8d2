package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// besideView starts every program of a sandbox beside the others, as a
// caller that shares one sandbox among sessions does.
type besideView struct{ sandbox.Sandbox }

func (v besideView) Start(ctx context.Context, p sandbox.Program) (sandbox.Process, error) {
	return v.Sandbox.(sandbox.SideBySide).StartBeside(ctx, p)
}

// TestSessionInGivenSandbox: sessions given a sandbox (Config.Sandbox)
// run in it, side by side, and see each other's files; closing one leaves
// the sandbox, its files and the other session be.
func TestSessionInGivenSandbox(t *testing.T) {
	rt := runtimeFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{Limits: sandbox.Limits{Memory: 512 << 20, Processes: 128, OpenFiles: 256, WorkspaceBytes: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	py, err := session.New(ctx, rt, session.Config{Sandbox: besideView{sb}, Files: []sandbox.File{{Path: "given.txt", Content: []byte("placed"), Mode: 0o644}}})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := session.New(ctx, rt, session.Config{Language: sandbox.Bash, Sandbox: besideView{sb}})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	ok(t, py, `open("from-python.txt", "w").write("python wrote this")`)
	if got := strings.TrimSpace(ok(t, sh, "cat from-python.txt given.txt").Stdout()); got != "python wrote thisplaced" {
		t.Errorf("the bash session reads %q, want the Python session's file and the placed one", got)
	}
	if err := py.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _, err := sb.ReadFile("from-python.txt", 1<<10); err != nil || string(data) != "python wrote this" {
		t.Errorf("after the session closed, its sandbox's file: %q, %v", data, err)
	}
	if got := strings.TrimSpace(ok(t, sh, "echo still here").Stdout()); got != "still here" {
		t.Errorf("the other session after one closed: %q", got)
	}
}

// TestHoldKeepsASessionFromIdleEviction: a held session is in use, as one
// running a cell: idle eviction leaves it be until it is released, and
// takes it once it has been unused past the idle timeout since.
func TestHoldKeepsASessionFromIdleEviction(t *testing.T) {
	m := session.NewManager(runtimeFor(t), session.ManagerOptions{MaxSessions: 4, IdleTimeout: 200 * time.Millisecond})
	defer m.Close()
	sessions, err := m.Tenant("t")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Create(context.Background(), session.Config{Language: sandbox.Bash})
	if err != nil {
		t.Fatal(err)
	}
	release := s.Hold()
	time.Sleep(time.Second) // past the idle timeout, several janitor rounds
	m.EvictIdle()
	if err := s.Closed(); err != nil {
		t.Fatalf("a held session was evicted: %v", err)
	}
	release()
	release() // once is enough
	for deadline := time.Now().Add(30 * time.Second); s.Closed() == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a released session unused past the idle timeout was not evicted")
		}
	}
}
