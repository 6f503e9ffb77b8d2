package app

import (
	"errors"
	"fmt"
	"slices"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// checkServerRuntimes checks server.runtimes: each a registered runtime.
func checkServerRuntimes(v any) error {
	for _, name := range v.([]string) {
		if _, ok := sandbox.Lookup(name); !ok {
			return oneOf(sandbox.Drivers()...)(name)
		}
	}
	return nil
}

// OpenNamedRuntime builds the registered runtime name from its options in
// Runtime.Options (runtime.NAME.*), able to run every language
// (sandbox/toolchain runs those the runtime does not start itself), with
// no compiled sandboxes kept ready (Runtime.CompiledPool is the
// configured runtime's, OpenRuntime's). A failure to start is a
// *RuntimeError.
func (c *Config) OpenNamedRuntime(name string) (sandbox.Runtime, error) {
	return c.openRuntime(name, toolchain.Options{})
}

// openRuntime builds the registered runtime name, wrapped by the
// toolchain with tc.
func (c *Config) openRuntime(name string, tc toolchain.Options) (sandbox.Runtime, error) {
	d, ok := sandbox.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("runtime %s: %w", name, oneOf(sandbox.Drivers()...)(name))
	}
	rt, err := d.Open(c.Runtime.Options[name])
	if err != nil {
		return nil, &RuntimeError{Runtime: name, Err: err}
	}
	return toolchain.Wrap(rt, tc), nil
}

// openServerRuntimes opens, at the server's start, the runtimes that
// server.runtimes enables besides rt (runtime.name's, open already), each
// held to server.max_limits as rt is: the runtimes a request or a session
// may name, by name, rt's among them. One that cannot start fails the
// start (the operator enabled it), with those opened closed again.
func (c *Config) openServerRuntimes(rt sandbox.Runtime) (map[string]sandbox.Runtime, error) {
	out := map[string]sandbox.Runtime{rt.Name(): rt}
	for _, name := range c.Server.Runtimes {
		if _, open := out[name]; open {
			continue
		}
		other, err := c.OpenNamedRuntime(name)
		if err != nil {
			closeRuntimes(out, rt)
			return nil, fmt.Errorf("server.runtimes: %w", err)
		}
		out[name] = sandbox.Capped(other, c.Server.MaxLimits)
	}
	return out, nil
}

// closeRuntimes closes the runtimes of rts but except.
func closeRuntimes(rts map[string]sandbox.Runtime, except sandbox.Runtime) error {
	var errs []error
	names := make([]string, 0, len(rts))
	for name := range rts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if rts[name] != except {
			if err := rts[name].Close(); err != nil {
				errs = append(errs, fmt.Errorf("close the %s runtime: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}
