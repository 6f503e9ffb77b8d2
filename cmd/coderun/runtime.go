package main

import (
	"fmt"
	"strings"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/spf13/cobra"
)

// globalFlags choose and configure the sandbox runtime.
type globalFlags struct {
	runtime     string
	rootFS      string
	stateDir    string
	allowWeaker []string
	pool        int
	zygote      bool // set by commands that run many Python programs (eval)
}

func (g *globalFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&g.runtime, "runtime", "linux", "sandbox runtime (linux)")
	f.StringVar(&g.rootFS, "rootfs", "", "alternative root for the sandbox's /usr and /etc (an unpacked debootstrap), default the host's")
	f.StringVar(&g.stateDir, "state-dir", "", "directory for sandbox mount points (default /run/coderun)")
	f.StringSliceVar(&g.allowWeaker, "allow-weaker", nil, "run even though these isolation layers are missing: cgroup, seccomp (see coderun doctor)")
}

// open builds the chosen runtime.
func (g *globalFlags) open() (sandbox.Runtime, error) {
	switch g.runtime {
	case "linux":
		rt, err := linux.New(linux.Options{
			RootFS:      g.rootFS,
			StateDir:    g.stateDir,
			AllowWeaker: g.allowWeaker,
			Pool:        g.pool,
			Zygote:      g.zygote && g.rootFS == "",
		})
		if err != nil {
			return nil, setupError{err}
		}
		return rt, nil
	default:
		return nil, usagef("unknown runtime %q (known: linux)", g.runtime)
	}
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
