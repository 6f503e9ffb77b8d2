package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"golang.org/x/sys/unix"
)

// Leftovers. A coderun process that is killed (SIGKILL, a crash, the
// machine's OOM killer) leaves its containers running and their workspaces
// mounted. Every container carries, besides the runtime's label, its
// owner: the boot, pid and start time of the process whose runtime made it.
// New removes the containers whose owner is gone (another boot, no such
// process, or another process under its pid), with their workspaces, and
// the init programs' directories of owners that are gone. Containers of a
// live process, another coderun's, are left alone.

// labelOwner names the process that made a container: "BOOT/PID/START".
const labelOwner = "io.github.coderun.owner"

// processID is "BOOT/PID/START" for pid: the host's boot id, the pid and
// its start time in clock ticks since boot, which together name one
// process for all time.
func processID(pid int) (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	start, err := startTime(pid)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(boot)) + "/" + strconv.Itoa(pid) + "/" + start, nil
}

// startTime is field 22 of /proc/PID/stat.
func startTime(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected %q", pid, data)
	}
	return f[19], nil
}

// ownerAlive reports whether the process id names is still running.
func ownerAlive(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	now, err := processID(pid)
	return err == nil && now == id
}

// labelWorkspace names the state directory (under the runtime's) whose
// workspace a container uses: its own, or its long-lived sandbox's.
const labelWorkspace = "io.github.coderun.workspace"

// labels are the labels of a container of the runtime's whose workspace
// is in the state directory named dir.
func (r *Runtime) labels(dir string) map[string]string {
	return map[string]string{labelKey: "1", labelOwner: r.owner, labelWorkspace: dir}
}

// leftoverDir is the state directory of a leftover container: the one
// its label names, or (made before the label) its own name's.
func (r *Runtime) leftoverDir(name string, labels map[string]string) string {
	if d, ok := labels[labelWorkspace]; ok {
		name = d
	}
	if !strings.HasPrefix(name, "coderun-") || strings.ContainsAny(name, "/.") {
		return ""
	}
	return filepath.Join(r.opts.StateDir, name)
}

// reclaim removes the containers, workspaces and init directories whose
// owner is gone, and reports how many containers it removed.
func (r *Runtime) reclaim(ctx context.Context) (int, error) {
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelKey))})
	if err != nil {
		return 0, fmt.Errorf("listing leftover containers: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range list {
		if ownerAlive(c.Labels[labelOwner]) {
			continue
		}
		b := &box{id: c.ID}
		for _, name := range c.Names {
			b.name = strings.TrimPrefix(name, "/")
		}
		b.dir = r.leftoverDir(b.name, c.Labels)
		if err := r.destroy(b); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	// The init programs' directories: bin.<owner's pid>.<start>.<random>.
	ents, _ := os.ReadDir(r.opts.StateDir)
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), binDirPrefix)
		if !ok {
			continue
		}
		f := strings.Split(rest, ".")
		if len(f) != 3 {
			continue
		}
		pid, start := f[0], f[1]
		if ownerAlive(strings.TrimSpace(string(boot)) + "/" + pid + "/" + start) {
			continue
		}
		dir := filepath.Join(r.opts.StateDir, e.Name())
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.Remove(dir))
	}
	return n, errors.Join(errs...)
}
