// Package linuxtest gives tests a real linux runtime: made once for a
// test package and shared by its tests (sandboxes stay independent; the
// runtime is safe for concurrent use), or made for one test and closed at
// its cleanup. Where the runtime cannot run here (not root, or isolation
// the probe finds missing) the test is skipped, except in CI (CI=true),
// where it fails.
package linuxtest

import (
	"os"
	"sync"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
)

// Require skips t, or fails it in CI, where the linux runtime cannot run.
func Require(t testing.TB) {
	t.Helper()
	skip(t, unavailable())
}

// unavailable says why the linux runtime cannot run here, or is nil.
func unavailable() error {
	if os.Geteuid() != 0 {
		return errNoRoot{}
	}
	return linux.Probe().Require(nil)
}

// skip skips t, or fails it in CI, for err (nothing for nil).
func skip(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("sandboxes are needed in CI: %v", err)
	}
	t.Skipf("skipped: no sandboxes here: %v", err)
}

type errNoRoot struct{}

func (errNoRoot) Error() string { return "the linux runtime needs root" }

// RequireIPython skips t where Debian's python3-ipython, which sessions
// need, is not installed.
func RequireIPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/usr/lib/python3/dist-packages/IPython"); err != nil {
		t.Skip("Debian's python3-ipython is not installed")
	}
}

// Runtime returns a runtime made with opts for t alone, closed at t's
// cleanup (see Require for when it skips t).
func Runtime(t testing.TB, opts linux.Options) *linux.Runtime {
	t.Helper()
	Require(t)
	rt, err := linux.New(opts)
	if err != nil {
		t.Fatalf("linux.New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Shared is one runtime for a test package's tests, made with Options on
// first use. Close it in TestMain.
type Shared struct {
	Options linux.Options

	once    sync.Once
	missing error // why the runtime cannot run here
	rt      *linux.Runtime
	err     error
}

// Runtime returns the shared runtime, made on the first call (see Require
// for when it skips t: the host is probed once); it fails t where the
// runtime could not be made.
func (s *Shared) Runtime(t testing.TB) *linux.Runtime {
	t.Helper()
	s.once.Do(func() {
		if s.missing = unavailable(); s.missing == nil {
			s.rt, s.err = linux.New(s.Options)
		}
	})
	skip(t, s.missing)
	if s.err != nil {
		t.Fatalf("linux.New: %v", s.err)
	}
	return s.rt
}

// Close closes the runtime if it was made.
func (s *Shared) Close() {
	if s.rt != nil {
		s.rt.Close()
	}
}
