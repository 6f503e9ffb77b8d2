package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coderun/coderun/sandbox"
)

// runtime is the runtime a request names: empty or the default's name,
// Options.Runtime; another, one of Options.Runtimes. An unknown runtime, or
// one the operator did not enable, is bad input naming those enabled.
func (a *API) runtime(name string) (sandbox.Runtime, error) {
	if name == "" || name == a.opts.Runtime.Name() {
		return a.opts.Runtime, nil
	}
	if rt, ok := a.opts.Runtimes[name]; ok {
		return rt, nil
	}
	enabled := strings.Join(a.runtimeNames(), ", ")
	if _, ok := sandbox.Lookup(name); !ok {
		if len(name) > 64 {
			name = name[:64] + "…" // a request's name is not echoed whole
		}
		return nil, badInput(fmt.Sprintf("unknown runtime %q: this server runs %s", name, enabled))
	}
	return nil, badInput(fmt.Sprintf("runtime %q is not enabled on this server: it runs %s (its operator enables runtimes with server.runtimes)", name, enabled))
}

// runtimeNames are the runtimes a request may name, sorted.
func (a *API) runtimeNames() []string {
	names := []string{a.opts.Runtime.Name()}
	for name := range a.opts.Runtimes {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// interactive is rt as a runtime of long-lived sandboxes, for a session;
// bad input when it has none.
func interactive(rt sandbox.Runtime) (sandbox.Interactive, error) {
	irt, ok := rt.(sandbox.Interactive)
	if !ok {
		return nil, badInput(fmt.Sprintf("runtime %q has no sessions (no long-lived sandboxes)", rt.Name()))
	}
	return irt, nil
}
