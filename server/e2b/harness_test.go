package e2b_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/e2b"
	"github.com/coderun/coderun/session"
)

// The tests share one runtime (sandboxes stay independent).
var shared linuxtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

func runtimeFor(t *testing.T) *linux.Runtime {
	t.Helper()
	rt := shared.Runtime(t)
	linuxtest.RequireIPython(t)
	return rt
}

// keys is a server.Keys of fixed keys.
type keys map[string]string

func (k keys) Tenant(key string) (string, bool) {
	t, ok := k[key]
	return t, ok
}

var _ server.Keys = keys(nil)

// testKeys: two tenants.
var testKeys = keys{"key-alice": "alice", "key-bob": "bob"}

// newServer starts the service on a loopback listener, mounted on
// coderun's server core as `coderun serve` mounts it (its logging,
// metrics and body limits around every request); opts.Manager is filled
// in.
func newServer(t *testing.T, opts e2b.Options) (*e2b.Service, *httptest.Server) {
	t.Helper()
	return newServerWith(t, opts, session.ManagerOptions{MaxSessions: 20, IdleTimeout: 10 * time.Minute})
}

// newServerWith is newServer with a session manager of mopts.
func newServerWith(t *testing.T, opts e2b.Options, mopts session.ManagerOptions) (*e2b.Service, *httptest.Server) {
	t.Helper()
	rt := runtimeFor(t)
	m := session.NewManager(rt, mopts)
	t.Cleanup(func() { m.Close() })
	opts.Manager = m
	svc, err := e2b.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	so := server.Options{InsecureLocal: opts.InsecureLocal, Surfaces: []server.Surface{svc.Surface()}, Tenants: opts.Tenants}
	if opts.Keys != nil {
		so.Keys = opts.Keys
	}
	srv, err := server.New(so)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return svc, ts
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
