package linux

import (
	"fmt"

	"github.com/coderun/coderun/sandbox"
)

// Settings are the linux runtime's settings as a configuration names them
// (runtime.linux.* in coderun's configuration file): the part of [Options]
// an operator chooses.
type Settings struct {
	// RootFS is an alternative root for the sandbox's /usr and /etc (an
	// unpacked debootstrap); empty means the host's.
	RootFS string `config:"rootfs"`
	// StateDir holds the sandboxes' mount points; empty means /run/coderun.
	StateDir string `config:"state_dir"`
	// AllowWeaker lists the isolation layers to run without where the host
	// lacks them: cgroup, seccomp.
	AllowWeaker []string `config:"allow_weaker"`
	// Pool is the number of pre-started Python sandboxes kept ready.
	Pool int `config:"pool"`
	// Zygote forks Python sandboxes from one interpreter started ahead. It
	// serves the host's root only: with RootFS set, it is off.
	Zygote bool `config:"zygote"`
}

// Options turns the settings into the runtime's Options.
func (s Settings) Options() Options {
	return Options{
		RootFS:      s.RootFS,
		StateDir:    s.StateDir,
		AllowWeaker: s.AllowWeaker,
		Pool:        s.Pool,
		Zygote:      s.Zygote && (s.RootFS == "" || s.RootFS == "/"),
	}
}

// init registers the runtime under its Name.
func init() {
	sandbox.Register(Name, sandbox.Driver{
		Options: func() any { return &Settings{} },
		Open: func(options any) (sandbox.Runtime, error) {
			s, ok := options.(*Settings)
			if !ok {
				return nil, fmt.Errorf("linux runtime: options are %T, want *linux.Settings", options)
			}
			return New(s.Options())
		},
	})
}
