package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/spf13/cobra"
)

// globalFlags locate the configuration and hold the runtime's flags; they
// are how a command turns its flags into the configuration: a flag given
// on the command line overrides the file and the environment (package
// app).
type globalFlags struct {
	configFile  string
	runtime     string
	rootFS      string
	stateDir    string
	allowWeaker []string
	// cmd is the command being run, to tell the flags given from their
	// defaults; without one, every flag variable that is not zero counts
	// as given.
	cmd *cobra.Command
}

// registerConfig adds --config to every command, and remembers the
// command that runs.
func (g *globalFlags) registerConfig(root *cobra.Command) {
	root.PersistentFlags().StringVar(&g.configFile, "config", "", "configuration file (default $CODERUN_CONFIG, else $XDG_CONFIG_HOME/coderun/config.yaml or ~/.config/coderun/config.yaml if it exists)")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { g.cmd = cmd }
}

// register adds the runtime's flags to a command that starts sandboxes.
func (g *globalFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&g.runtime, "runtime", "linux", "sandbox runtime ("+strings.Join(sandbox.Drivers(), ", ")+")")
	f.StringVar(&g.rootFS, "rootfs", "", "alternative root for the sandbox's /usr and /etc (an unpacked debootstrap), default the host's")
	f.StringVar(&g.stateDir, "state-dir", "", "directory for sandbox mount points (default /run/coderun)")
	f.StringSliceVar(&g.allowWeaker, "allow-weaker", nil, "run even though these isolation layers are missing: cgroup, seccomp (see coderun doctor)")
}

// A binding ties a flag's variable to the configuration key it overrides.
type binding struct {
	flag string // its name, without dashes
	key  string
	v    any // *string, *int, *int64, *bool, *time.Duration or *[]string
}

// runtimeFlags are the runtime's flags.
func (g *globalFlags) runtimeFlags() []binding {
	return []binding{
		{"runtime", "runtime.name", &g.runtime},
		{"rootfs", "runtime.linux.rootfs", &g.rootFS},
		{"state-dir", "runtime.linux.state_dir", &g.stateDir},
		{"allow-weaker", "runtime.linux.allow_weaker", &g.allowWeaker},
	}
}

// load reads the configuration (file < environment) and applies, on top,
// the flags of the bindings that were given.
func (g *globalFlags) load(bindings ...[]binding) (*app.Config, error) {
	cfg, err := app.Load(app.LoadOptions{File: g.configFile, Getenv: os.Getenv})
	if err != nil {
		return nil, err
	}
	for _, bs := range bindings {
		for _, b := range bs {
			text, zero := flagText(b.v)
			if g.cmd != nil {
				if f := g.cmd.Flags().Lookup(b.flag); f == nil || !f.Changed {
					continue
				}
			} else if zero {
				continue
			}
			if err := cfg.Set(b.key, text, app.Flag("--"+b.flag)); err != nil {
				return nil, err
			}
		}
	}
	return cfg, nil
}

// flagText is a flag variable's value as configuration text, and whether
// it is the zero value.
func flagText(v any) (string, bool) {
	switch v := v.(type) {
	case *string:
		return *v, *v == ""
	case *int:
		return strconv.Itoa(*v), *v == 0
	case *int64:
		return strconv.FormatInt(*v, 10), *v == 0
	case *bool:
		return strconv.FormatBool(*v), !*v
	case *time.Duration:
		return v.String(), *v == 0
	case *[]string:
		return strings.Join(*v, ","), len(*v) == 0
	}
	panic(fmt.Sprintf("coderun: flag variable of type %T", v))
}

// openRuntime builds the configured runtime; a failure to start is a
// setup error (exit 125).
func openRuntime(cfg *app.Config) (sandbox.Runtime, error) {
	rt, err := cfg.OpenRuntime()
	var re *app.RuntimeError
	if errors.As(err, &re) {
		return nil, setupError{err}
	}
	return rt, err
}

// linuxSettings are the linux runtime's settings, if it is the one
// configured.
func linuxSettings(cfg *app.Config) (linux.Settings, bool) {
	s, ok := cfg.RuntimeOptions().(*linux.Settings)
	if !ok {
		return linux.Settings{}, false
	}
	return *s, true
}

// parseKV splits "KEY=VALUE" flags.
func parseKV(items []string, what string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: want KEY=VALUE", what, it)
		}
		out[k] = v
	}
	return out, nil
}

func formatLimits(l sandbox.Limits) string {
	return fmt.Sprintf("wall %s, cpu %s, memory %s, processes %d, output %s/stream, workspace %s, open files %d",
		l.WallTime, l.CPUTime, sandbox.FormatBytes(l.Memory), l.Processes, sandbox.FormatBytes(l.OutputBytes),
		sandbox.FormatBytes(l.WorkspaceBytes), l.OpenFiles)
}
