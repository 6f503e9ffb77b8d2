package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"
)

// ErrNoSessionsOnRunsc is NewSandbox's answer under the OCI runtime runsc:
// a long-lived sandbox's program is watched in the host's /proc (a cell's
// end, AwaitingInput), where a program in gVisor's Sentry is not. The
// gvisor runtime runs sessions under gVisor.
var ErrNoSessionsOnRunsc = errors.New("docker runtime: no long-lived sandboxes (sessions) with the OCI runtime runsc: its programs are not in the host's /proc, where a session's end of cell is seen; use the gvisor runtime for sessions under gVisor")

// sentryTasks is what gVisor's own processes and threads on the host (the
// Sentry, the gofer, the systrap stubs of the program's address spaces)
// may hold of a container's pids limit beyond the program's: under the OCI
// runtime runsc the host's pids cgroup counts them, not the program's
// tasks, which live in the Sentry. A Sentry that cannot make a thread
// dies, so the host's limit is a generous backstop there, not the
// program's exact budget (the README's runtimes table).
const sentryTasks = 256

// engineRuntimeIsGVisor reports whether the engine's OCI runtime name
// (empty: its default) is gVisor's runsc: its binary, or a wrapper that
// executes it (scripts/docker.sh's), answers --version as runsc does. A
// name the engine does not know is an error naming those it does.
func engineRuntimeIsGVisor(ctx context.Context, cli *client.Client, name string) (bool, error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("asking the engine for its OCI runtimes: %w", err)
	}
	if name == "" {
		name = info.DefaultRuntime
	}
	rt, ok := info.Runtimes[name]
	if !ok {
		var names []string
		for n := range info.Runtimes {
			names = append(names, n)
		}
		slices.Sort(names)
		return false, fmt.Errorf("the engine has no OCI runtime %q: it has %s", name, strings.Join(names, ", "))
	}
	if rt.Path == "" {
		return false, nil // a shim of its own: not runsc's legacy binary
	}
	out, err := exec.CommandContext(ctx, rt.Path, "--version").Output()
	return err == nil && bytes.HasPrefix(out, []byte("runsc version")), nil
}

// taskCount counts the tasks the container's pids limit counts now: under
// runsc every task of its cgroup (gVisor's), else its init's threads.
func (r *Runtime) taskCount(b *box) (int, error) {
	if r.sentry {
		n, err := b.cg.pidsCurrent()
		if err != nil {
			return 0, err
		}
		return n + sentryTasks, nil
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", b.initPid))
	if err != nil {
		return 0, fmt.Errorf("counting the init's threads: %w", err)
	}
	return len(tasks), nil
}

// pidsCurrent is the number of processes and threads in the cgroup.
func (c cgroup) pidsCurrent() (int, error) {
	dir := c.pids
	if c.V2 {
		dir = c.Unified
	}
	data, err := os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		return 0, fmt.Errorf("counting the container's tasks: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("counting the container's tasks: pids.current %q: %w", data, err)
	}
	return n, nil
}

// sentryMounts hide what the Sentry offers a container that runc does not
// (the gvisor runtime hides them alike): FUSE, an unreadable file over
// /dev/fuse, and TUN, an empty read-only directory over /dev/net (runsc
// ignores the engine's masked paths); and an empty read-only directory
// over /sys/fs/cgroup in place of the engine's cgroup mount, with which
// runsc makes the Sentry's groups after the container's ID, which
// /proc/self/cgroup then shows (the engine's name for it on the host);
// without it the program's groups are the Sentry's root, "/", as under
// runc's cgroup namespace.
func (r *Runtime) sentryMounts() []mount.Mount {
	empty := func(at string) mount.Mount {
		return mount.Mount{Type: mount.TypeTmpfs, Target: at, ReadOnly: true, TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o555}}
	}
	return []mount.Mount{
		{Type: mount.TypeBind, Source: r.bin.hidden(), Target: "/dev/fuse", ReadOnly: true},
		empty("/dev/net"), empty("/sys/fs/cgroup"),
	}
}

// raiseOOMScores sets the host's oom_score_adj of every process in the
// cgroup to 1000, so that the host's OOM killer takes the sandbox first.
// Under runsc the container's score (the engine's 1000) is the program's
// in the Sentry, not the host's: the Sentry, the gofer and the systrap
// stubs, which hold the program's memory, ran at 1
// (TestRunscOOMScoreStaysTheHosts). Processes they start later inherit it.
func (c cgroup) raiseOOMScores() error {
	pids, err := c.procs()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte("1000"), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("raising the OOM score of the container's process %d: %w", pid, err)
		}
	}
	return nil
}
