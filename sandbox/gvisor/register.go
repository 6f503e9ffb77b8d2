package gvisor

import (
	"fmt"

	"github.com/coderun/coderun/sandbox"
)

// Settings are the gvisor runtime's settings as a configuration names them
// (runtime.gvisor.* in coderun's configuration file).
type Settings struct {
	// Runsc is the runsc binary; empty means the pinned build
	// (scripts/runsc.sh), else runsc on PATH.
	Runsc string `config:"runsc"`
	// StateDir holds runsc's state, bundles and workspaces; empty means
	// /run/coderun/gvisor.
	StateDir string `config:"state_dir"`
	// Platform is gVisor's platform: systrap (default) or ptrace.
	Platform string `config:"platform"`
}

// Options turns the settings into the runtime's Options.
func (s Settings) Options() Options {
	return Options{Runsc: s.Runsc, StateDir: s.StateDir, Platform: s.Platform}
}

func init() {
	sandbox.Register(Name, sandbox.Driver{
		Options: func() any { return &Settings{} },
		Open: func(options any) (sandbox.Runtime, error) {
			s, ok := options.(*Settings)
			if !ok {
				return nil, fmt.Errorf("gvisor runtime: options are %T, want *gvisor.Settings", options)
			}
			return New(s.Options())
		},
	})
}
