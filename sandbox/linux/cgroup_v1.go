package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// cgroupV1 places each sandbox in one group per v1 controller: memory (limit,
// peak, OOM kills), pids (limit) and cpuacct (CPU time). In the pids
// hierarchy the program gets a child group, "prog", which holds the limit.
// Groups nest under the host process's own groups (in coderun/<runtime>/),
// so an outer limit on coderun still applies to its sandboxes. No freezer: every process of a
// sandbox is in its PID namespace, which the kernel empties when init dies,
// and in which nothing can fork any more once it has; killing what the
// memory group lists is a second net, not the mechanism.
type cgroupV1 struct {
	parents map[string]string // controller → the runtime's group, which holds its sandboxes'
	memsw   bool              // swap accounting is on
}

var v1Controllers = []string{"memory", "pids", "cpuacct"}

func newCgroupV1(root, owner string) (*cgroupV1, error) {
	self, err := selfCgroups()
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	d := &cgroupV1{parents: map[string]string{}}
	for _, c := range v1Controllers {
		base := filepath.Join(root, c)
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		top := filepath.Join(base, self[c], "coderun")
		if err := os.MkdirAll(top, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
		sweepStale(top, killProcs)
		parent := filepath.Join(top, owner)
		for _, dir := range []string{top, parent} {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				d.close()
				return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
			}
			if c == "memory" {
				// Charge and limit hierarchically (the default on current
				// kernels). Swap would let a run exceed its memory limit
				// unseen: forbid it here, which every sandbox's group
				// inherits when it is made.
				_ = writeFile(filepath.Join(dir, "memory.use_hierarchy"), "1")
				_ = writeFile(filepath.Join(dir, "memory.swappiness"), "0")
			}
		}
		d.parents[c] = parent
	}
	mem, ok := d.parents["memory"]
	if !ok {
		d.close()
		return nil, errors.New("cgroup v1: no memory controller")
	}
	_, err = os.Stat(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
	d.memsw = err == nil
	return d, nil
}

// close removes the runtime's groups, which its sandboxes have left.
func (d *cgroupV1) close() error {
	var errs []error
	for _, dir := range d.parents {
		errs = append(errs, removeDir(dir))
	}
	return errors.Join(errs...)
}

func (d *cgroupV1) version() int { return 1 }

func (d *cgroupV1) missing() []string {
	var out []string
	for _, c := range []string{"memory", "pids", "cpuacct"} {
		if _, ok := d.parents[c]; !ok {
			out = append(out, c)
		}
	}
	return out
}

func (d *cgroupV1) create(name string) (cgroup, error) {
	g := &cgroupV1Group{dirs: map[string]string{}}
	for c, parent := range d.parents {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.destroy()
			return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
		g.dirs[c] = dir
		if c == "pids" {
			prog := filepath.Join(dir, "prog")
			if err := os.Mkdir(prog, 0o755); err != nil {
				g.destroy()
				return nil, fmt.Errorf("cgroup v1 pids: %w", err)
			}
			g.prog = prog
		}
	}
	g.memsw = d.memsw
	return g, nil
}

type cgroupV1Group struct {
	dirs  map[string]string
	prog  string // the program's pids group ("" without the pids controller)
	memsw bool   // memory.memsw.* exists (swap accounting is on)
}

func (g *cgroupV1Group) fd() int { return -1 }

func (g *cgroupV1Group) attach(pid int) error {
	p := strconv.Itoa(pid)
	for c, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), p); err != nil {
			return fmt.Errorf("attach to %s: %w", c, err)
		}
	}
	return nil
}

// attachProgram moves the program, which init forked once it was in the
// sandbox's groups, into "prog" for pids.
func (g *cgroupV1Group) attachProgram(pid int) error {
	if g.prog == "" {
		return nil
	}
	if err := writeFile(filepath.Join(g.prog, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("attach program to pids: %w", err)
	}
	return nil
}

func (g *cgroupV1Group) programProcs() int64 {
	if g.prog == "" {
		return -1
	}
	n, err := readInt(filepath.Join(g.prog, "pids.current"))
	if err != nil {
		return -1
	}
	return n
}

func (g *cgroupV1Group) setLimits(memory int64, pids int) error {
	if err := g.setMemory(memory); err != nil {
		return err
	}
	if g.prog != "" {
		return writeFile(filepath.Join(g.prog, "pids.max"), strconv.Itoa(pids))
	}
	return nil
}

// setMemory sets the memory limit and, with swap accounting, the same
// memory+swap limit (no swap). The kernel keeps memory.limit_in_bytes at
// most memory.memsw.limit_in_bytes at every step, refusing (EINVAL) a
// write that would break it: a raise writes memsw first, a cut the limit
// first.
func (g *cgroupV1Group) setMemory(memory int64) error {
	mem := g.dirs["memory"]
	limit := filepath.Join(mem, "memory.limit_in_bytes")
	files := []string{limit}
	if g.memsw {
		memsw := filepath.Join(mem, "memory.memsw.limit_in_bytes")
		files = append(files, memsw)
		cur, err := readInt(limit)
		if err != nil {
			return fmt.Errorf("cgroup v1: read memory limit: %w", err)
		}
		if memory > cur {
			files = []string{memsw, limit}
		}
	}
	m := strconv.FormatInt(memory, 10)
	for _, f := range files {
		if err := writeFile(f, m); err != nil {
			return err
		}
	}
	return nil
}

func (g *cgroupV1Group) resetPeak() (cgroupStats, error) {
	if err := writeFile(filepath.Join(g.dirs["memory"], "memory.max_usage_in_bytes"), "0"); err != nil {
		return cgroupStats{}, err
	}
	return g.stats()
}

func (g *cgroupV1Group) stats() (cgroupStats, error) {
	var s cgroupStats
	var err error
	mem := g.dirs["memory"]
	if s.peakMemory, err = readInt(filepath.Join(mem, "memory.max_usage_in_bytes")); err != nil {
		return s, err
	}
	oom, err := readKeyed(filepath.Join(mem, "memory.oom_control"), "oom_kill")
	if err != nil {
		return s, err
	}
	s.oomKills = oom[0]
	if dir, ok := g.dirs["cpuacct"]; ok {
		// cpuacct.usage is exact; the user/system split (cpuacct.stat) is
		// counted in clock ticks, so it only apportions the total.
		total, err1 := readInt(filepath.Join(dir, "cpuacct.usage"))
		split, err2 := readKeyed(filepath.Join(dir, "cpuacct.stat"), "user", "system")
		if err := errors.Join(err1, err2); err != nil {
			return s, err
		}
		s.cpu, s.cpuUserPart, s.cpuSystemPart = time.Duration(total), split[0], split[1]
	}
	return s, nil
}

func (g *cgroupV1Group) kill() error {
	procs := filepath.Join(g.dirs["memory"], "cgroup.procs")
	data, err := os.ReadFile(procs)
	if err != nil || len(data) == 0 {
		return err
	}
	for _, f := range splitFields(data) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

func (g *cgroupV1Group) destroy() error {
	var errs []error
	if g.prog != "" {
		errs = append(errs, removeDir(g.prog))
	}
	for _, dir := range g.dirs {
		errs = append(errs, removeDir(dir))
	}
	return errors.Join(errs...)
}
