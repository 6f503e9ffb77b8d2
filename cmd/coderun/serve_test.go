package main

import (
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/app"
)

// coderun serve --help names every server.* setting, and every flag of
// serve's own appears in its table of settings.
func TestServeHelpDocumentsEverySetting(t *testing.T) {
	r := coderun(t, "", "serve", "--help")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, key := range app.Defaults(os.Getenv).Keys() {
		if strings.HasPrefix(key, "server.") && !strings.Contains(r.stdout, key) {
			t.Errorf("coderun serve --help does not document %s", key)
		}
	}
	own := newServeCmd(&globalFlags{})
	table := r.stdout[strings.Index(r.stdout, "Every setting"):strings.Index(r.stdout, "Usage:")]
	for _, b := range (&serveFlags{}).bindings() {
		if f := own.Flags().Lookup(b.flag); f != nil && !strings.Contains(table, "--"+b.flag+" ") {
			t.Errorf("--%s (%s) is not in the table of settings", b.flag, b.key)
		}
	}
}

// coderun serve refuses to start without keys (exit 2), and
// --insecure-local on an address that is not a loopback one.
func TestServeRefuses(t *testing.T) {
	r := coderun(t, "", "serve", "--addr", "127.0.0.1:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "CODERUN_API_KEYS") {
		t.Errorf("without keys: exit %d: %s", r.code, r.stderr)
	}
	r = coderun(t, "", "serve", "--insecure-local", "--addr", "0.0.0.0:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "loopback") {
		t.Errorf("insecure on 0.0.0.0: exit %d: %s", r.code, r.stderr)
	}
}
