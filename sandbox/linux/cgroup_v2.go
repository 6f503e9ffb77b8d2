package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupV2 places each sandbox in one group of the unified hierarchy, under
// the runtime's own group in a "coderun" group beside the host process, with two leaves (a group with
// controllers for its children may hold no processes): "init", where init is
// born (CLONE_INTO_CGROUP), and "prog", which the program joins and which
// holds the process limit. The sandbox's group holds the memory limit, is
// killed all at once with cgroup.kill, and is measured by memory.peak,
// memory.events and cpu.stat.
type cgroupV2 struct {
	parent      string
	controllers map[string]bool
}

func newCgroupV2(root, owner string) (*cgroupV2, error) {
	self, err := selfCgroups()
	if err != nil {
		return nil, fmt.Errorf("read own cgroup: %w", err)
	}
	own := filepath.Join(root, self[""])
	top := filepath.Join(own, "coderun")
	if err := os.MkdirAll(top, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	want := "+memory +pids +cpu"
	if err := enableControllers(own, want); err != nil {
		// A group with processes cannot delegate controllers ("no internal
		// processes"): move this process to a leaf beside our groups and retry.
		leaf := filepath.Join(own, "coderun-supervisor")
		if err2 := os.MkdirAll(leaf, 0o755); err2 != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err2)
		}
		if err2 := moveAllProcs(own, leaf); err2 != nil {
			return nil, fmt.Errorf("cgroup v2: enable controllers in %s: %v; move to leaf: %w", own, err, err2)
		}
		if err := enableControllers(own, want); err != nil {
			return nil, fmt.Errorf("cgroup v2: enable controllers in %s: %w", own, err)
		}
	}
	sweepStale(top, killGroup)
	if err := enableControllers(top, want); err != nil {
		return nil, fmt.Errorf("cgroup v2: enable controllers in %s: %w", top, err)
	}
	parent := filepath.Join(top, owner)
	if err := os.Mkdir(parent, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enableControllers(parent, want); err != nil {
		_ = removeDir(parent)
		return nil, fmt.Errorf("cgroup v2: enable controllers in %s: %w", parent, err)
	}
	d := &cgroupV2{parent: parent, controllers: map[string]bool{}}
	data, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	for _, c := range strings.Fields(string(data)) {
		d.controllers[c] = true
	}
	return d, nil
}

// enableControllers writes each of want's "+ctrl" words that the group offers.
func enableControllers(dir, want string) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(data)) {
		have[c] = true
	}
	for _, w := range strings.Fields(want) {
		if have[strings.TrimPrefix(w, "+")] {
			if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), w); err != nil {
				return err
			}
		}
	}
	return nil
}

func moveAllProcs(from, to string) error {
	data, err := os.ReadFile(filepath.Join(from, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range splitFields(data) {
		if err := writeFile(filepath.Join(to, "cgroup.procs"), pid); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

// killGroup kills every process in the group dir and below it.
func killGroup(dir string) { _ = writeFile(filepath.Join(dir, "cgroup.kill"), "1") }

// close removes the runtime's group, which its sandboxes have left.
func (d *cgroupV2) close() error { return removeDir(d.parent) }

func (d *cgroupV2) version() int { return 2 }

func (d *cgroupV2) missing() []string {
	var out []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !d.controllers[c] {
			out = append(out, c)
		}
	}
	return out
}

func (d *cgroupV2) create(name string) (cgroup, error) {
	g := &cgroupV2Group{dir: filepath.Join(d.parent, name)}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	fail := func(err error) (cgroup, error) {
		g.destroy()
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enableControllers(g.dir, "+pids"); err != nil {
		return fail(err)
	}
	for _, leaf := range []string{"init", "prog"} {
		if err := os.Mkdir(filepath.Join(g.dir, leaf), 0o755); err != nil {
			return fail(err)
		}
	}
	f, err := os.Open(filepath.Join(g.dir, "init"))
	if err != nil {
		return fail(err)
	}
	g.initDir = f
	if d.controllers["memory"] {
		_ = os.WriteFile(filepath.Join(g.dir, "memory.swap.max"), []byte("0"), 0)
	}
	return g, nil
}

type cgroupV2Group struct {
	dir     string
	initDir *os.File // the init leaf, for CLONE_INTO_CGROUP
	peak    *os.File // memory.peak opened for a per-descriptor reset
}

func (g *cgroupV2Group) fd() int { return int(g.initDir.Fd()) }

func (g *cgroupV2Group) attach(pid int) error {
	return writeFile(filepath.Join(g.dir, "init", "cgroup.procs"), strconv.Itoa(pid))
}

func (g *cgroupV2Group) attachProgram(pid int) error {
	return writeFile(filepath.Join(g.dir, "prog", "cgroup.procs"), strconv.Itoa(pid))
}

func (g *cgroupV2Group) programProcs() int64 {
	n, err := readInt(filepath.Join(g.dir, "prog", "pids.current"))
	if err != nil {
		return -1
	}
	return n
}

func (g *cgroupV2Group) setLimits(memory int64, pids int) error {
	if err := writeFile(filepath.Join(g.dir, "memory.max"), strconv.FormatInt(memory, 10)); err != nil {
		return err
	}
	return writeFile(filepath.Join(g.dir, "prog", "pids.max"), strconv.Itoa(pids))
}

func (g *cgroupV2Group) resetPeak() (cgroupStats, error) {
	// Writing to memory.peak (Linux 6.12+) resets the peak as seen through
	// that descriptor; older kernels report the group's lifetime peak.
	if g.peak == nil {
		if f, err := os.OpenFile(filepath.Join(g.dir, "memory.peak"), os.O_RDWR, 0); err == nil {
			if _, err := f.WriteString("reset\n"); err == nil {
				g.peak = f
			} else {
				f.Close()
			}
		}
	}
	return g.stats()
}

func (g *cgroupV2Group) stats() (cgroupStats, error) {
	var s cgroupStats
	var err error
	if g.peak != nil {
		buf := make([]byte, 32)
		n, err := g.peak.ReadAt(buf, 0)
		if err != nil && n == 0 {
			return s, err
		}
		s.peakMemory, _ = strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	} else if s.peakMemory, err = readInt(filepath.Join(g.dir, "memory.peak")); err != nil {
		return s, err
	}
	oom, err := readKeyed(filepath.Join(g.dir, "memory.events"), "oom_kill")
	if err != nil {
		return s, err
	}
	s.oomKills = oom[0]
	cpu, err := readKeyed(filepath.Join(g.dir, "cpu.stat"), "usage_usec", "user_usec", "system_usec")
	if err != nil {
		return s, err
	}
	s.cpu, s.cpuUserPart, s.cpuSystemPart = time.Duration(cpu[0])*time.Microsecond, cpu[1], cpu[2]
	return s, nil
}

func (g *cgroupV2Group) kill() error {
	return writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
}

func (g *cgroupV2Group) destroy() error {
	if g.peak != nil {
		g.peak.Close()
	}
	if g.initDir != nil {
		g.initDir.Close()
	}
	return errors.Join(removeDir(filepath.Join(g.dir, "init")), removeDir(filepath.Join(g.dir, "prog")), removeDir(g.dir))
}
