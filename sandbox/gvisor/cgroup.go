package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox/internal/cgroupfs"
)

// cgroupParent is the group, at the top of each hierarchy, below which
// every runtime has a group named by its owner (see Runtime.owner) and
// every box a group of its own in it.
const cgroupParent = "coderun-gvisor"

// cgroup is a box's group: /coderun-gvisor/<owner>/<box> in the memory,
// cpuacct and pids hierarchies (cgroup v1) or in the unified one (v2),
// made by the runtime before runsc runs. runsc puts the Sentry and the
// gofer in it (it is the spec's cgroupsPath) and, since runsc did not make
// it, leaves it in place when the container ends (runsc removes only the
// groups it made, in the other hierarchies): the totals (CPU time, peak
// memory, OOM kills, which cgroup v1 counts in the victim's own group
// only) are still there for the result.
type cgroup struct {
	cgroupfs.Group // the accounting: CPU, ResetPeak, PeakMemory, OOMKills
	v2             bool
	path           string            // relative to a hierarchy's root
	dirs           map[string]string // controller ("" on v2) → directory
}

// v1Controllers are the v1 hierarchies a box's group is made in.
var v1Controllers = []string{"memory", "cpuacct", "pids"}

// cgroupMounts returns the mount point of each v1 controller's hierarchy,
// or of the unified hierarchy under "" when the host runs cgroup v2 only.
func cgroupMounts() (map[string]string, bool, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return map[string]string{"": "/sys/fs/cgroup"}, true, nil
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, false, fmt.Errorf("cgroups: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(g[2], ",") {
			for _, c := range v1Controllers {
				if o == c {
					out[c] = f[4]
				}
			}
		}
	}
	for _, c := range v1Controllers {
		if out[c] == "" {
			return nil, false, fmt.Errorf("cgroups: no %s controller (cgroup v1) and no cgroup v2", c)
		}
	}
	return out, false, nil
}

// cgroupRoots returns the mount point of every cgroup hierarchy (v1 and
// v2): runsc makes a box's groups in all of them (in those but the box's,
// below the runtime's owner group, which it makes and leaves there when it
// removes its own).
func cgroupRoots() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		if mp := unescapeMount(f[4]); !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	return out
}

// newCgroup makes the group of box name under the runtime's owner group,
// with memory as its memory limit (swap included, where swap is counted).
func (r *Runtime) newCgroup(name string, memory int64) (cgroup, error) {
	g := cgroup{v2: r.cgroupV2, path: "/" + cgroupParent + "/" + r.owner + "/" + name, dirs: map[string]string{}}
	for c, mnt := range r.cgroupMounts {
		parent := filepath.Join(mnt, cgroupParent, r.owner)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return g, fmt.Errorf("cgroup: %w", err)
		}
		if g.v2 {
			// Controllers reach a group only through its parents'
			// subtree_control.
			for _, dir := range []string{mnt, filepath.Join(mnt, cgroupParent), parent} {
				_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
			}
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.remove()
			return g, fmt.Errorf("cgroup: %w", err)
		}
		g.dirs[c] = dir
	}
	g.Group = cgroupfs.Group{V2: g.v2, Unified: g.dirs[""], Memory: g.dirs["memory"], CPUAcct: g.dirs["cpuacct"]}
	if err := g.setMemory(memory); err != nil {
		g.remove()
		return g, err
	}
	return g, nil
}

// setMemory sets the group's memory limit.
func (g cgroup) setMemory(memory int64) error {
	v := strconv.FormatInt(memory, 10)
	if g.v2 {
		dir := g.dirs[""]
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(v), 0); err != nil {
			return fmt.Errorf("cgroup: memory limit: %w", err)
		}
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
		return nil
	}
	dir := g.dirs["memory"]
	_ = os.WriteFile(filepath.Join(dir, "memory.swappiness"), []byte("0"), 0)
	// memsw must stay at or above the memory limit: raise it first when
	// the limit grows, lower it last when it shrinks.
	memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes")
	_, err := os.Stat(memsw)
	hasSw := err == nil
	if hasSw {
		_ = os.WriteFile(memsw, []byte(v), 0)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(v), 0); err != nil {
		return fmt.Errorf("cgroup: memory limit: %w", err)
	}
	if hasSw {
		if err := os.WriteFile(memsw, []byte(v), 0); err != nil {
			return fmt.Errorf("cgroup: memory+swap limit: %w", err)
		}
	}
	return nil
}

// runscPath is the cgroupsPath runsc gets: the box's group.
func (g cgroup) runscPath() string { return g.path }

// killAll kills every process in the group and the groups below it (the
// Sentry, the gofer, and runsc's helpers) until none is left.
func (g cgroup) killAll() error {
	dir := g.dirs["memory"]
	if g.v2 {
		dir = g.dirs[""]
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return awaitEmpty(dir)
		}
	}
	return killTree(dir)
}

// killTree sends SIGKILL to every process of the group at dir and of the
// groups below it until none is left.
func killTree(dir string) error {
	for i := 0; i < 2500; i++ {
		pids := procsTree(dir)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("cgroup %s: processes survived SIGKILL for 5s", dir)
}

func awaitEmpty(dir string) error {
	for i := 0; i < 2500; i++ {
		if len(procsTree(dir)) == 0 {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("cgroup %s: processes survived cgroup.kill for 5s", dir)
}

// procsTree lists the processes of the group at dir and of the groups below it.
func procsTree(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// remove kills what is left in the group and removes it with the groups
// runsc left below it.
func (g cgroup) remove() error {
	var errs []error
	for _, dir := range g.dirs {
		if err := killTree(dir); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, removeGroupTree(dir))
	}
	return errors.Join(errs...)
}

// removeGroupTree removes the empty group at dir and its descendants,
// deepest first.
func removeGroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		for try := 0; try < 50; try++ {
			// A group whose last process just died can be busy a moment.
			if err = syscall.Rmdir(dirs[i]); err != syscall.EBUSY {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
