package docker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup locates a container's cgroup on the host: its memory and CPU
// accounting, its OOM kills and its processes.
type cgroup struct {
	v2      bool
	unified string // v2: the cgroup's directory
	memory  string // v1: the memory controller's directory
	cpuacct string // v1: the cpuacct controller's directory
	pids    string // v1: the pids controller's directory
}

// cgroupOf finds the cgroup of the host process pid (a container's init).
func cgroupOf(pid int) (cgroup, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cgroup{}, fmt.Errorf("reading the container's cgroup: %w", err)
	}
	var cg cgroup
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg.v2 = true
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, path := parts[1], parts[2]
		if cg.v2 {
			if ctrls == "" {
				cg.unified = filepath.Join("/sys/fs/cgroup", path)
			}
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			switch c {
			case "memory":
				cg.memory = filepath.Join("/sys/fs/cgroup/memory", path)
			case "cpuacct":
				cg.cpuacct = filepath.Join("/sys/fs/cgroup", ctrls, path)
			case "pids":
				cg.pids = filepath.Join("/sys/fs/cgroup/pids", path)
			}
		}
	}
	if cg.v2 && cg.unified == "" || !cg.v2 && (cg.memory == "" || cg.cpuacct == "" || cg.pids == "") {
		return cg, fmt.Errorf("the container's cgroup lacks the memory, CPU or pids controller: %q", data)
	}
	return cg, nil
}

// procsFile lists the cgroup's processes.
func (c cgroup) procsFile() string {
	if c.v2 {
		return filepath.Join(c.unified, "cgroup.procs")
	}
	return filepath.Join(c.memory, "cgroup.procs")
}

// cpu returns the user and system CPU time of every process the cgroup has held.
func (c cgroup) cpu() (user, system time.Duration, err error) {
	if c.v2 {
		stat, err := readKeyed(filepath.Join(c.unified, "cpu.stat"))
		if err != nil {
			return 0, 0, err
		}
		return time.Duration(stat["user_usec"]) * time.Microsecond, time.Duration(stat["system_usec"]) * time.Microsecond, nil
	}
	u, err := readInt(filepath.Join(c.cpuacct, "cpuacct.usage_user"))
	if err != nil {
		return 0, 0, err
	}
	s, err := readInt(filepath.Join(c.cpuacct, "cpuacct.usage_sys"))
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(u), time.Duration(s), nil
}

// peakMemory returns the most memory the cgroup has used.
func (c cgroup) peakMemory() (int64, error) {
	if c.v2 {
		n, err := readInt(filepath.Join(c.unified, "memory.peak"))
		if errors.Is(err, os.ErrNotExist) {
			return readInt(filepath.Join(c.unified, "memory.current"))
		}
		return n, err
	}
	return readInt(filepath.Join(c.memory, "memory.max_usage_in_bytes"))
}

// oomKills returns how many processes the kernel killed for the cgroup's memory limit.
func (c cgroup) oomKills() (int64, error) {
	file := filepath.Join(c.memory, "memory.oom_control")
	if c.v2 {
		file = filepath.Join(c.unified, "memory.events")
	}
	m, err := readKeyed(file)
	if err != nil {
		return 0, err
	}
	return m["oom_kill"], nil
}

// setPids sets the cgroup's limit of processes and threads.
func (c cgroup) setPids(n int64) error {
	dir := c.pids
	if c.v2 {
		dir = c.unified
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(n, 10)), 0); err != nil {
		return fmt.Errorf("setting the container's pids limit: %w", err)
	}
	return nil
}

// resetPeak starts the cgroup's peak memory over from its current use, where
// the kernel can (cgroup v1; v2 from Linux 6.12): the program's peak is then
// not its interpreter's start, made ahead. A kernel that cannot keeps the
// peak of the container's whole life.
func (c cgroup) resetPeak() {
	if c.v2 {
		_ = os.WriteFile(filepath.Join(c.unified, "memory.peak"), []byte("0"), 0)
		return
	}
	_ = os.WriteFile(filepath.Join(c.memory, "memory.max_usage_in_bytes"), []byte("0"), 0)
}

// usage is what a cgroup has used, read at one moment.
type usage struct {
	user, system time.Duration
	peak         int64
	oomKills     int64
}

// stats reads the cgroup's usage; what cannot be read (a cgroup already
// removed) stays zero.
func (c cgroup) stats() usage {
	var u usage
	u.user, u.system, _ = c.cpu()
	u.peak, _ = c.peakMemory()
	u.oomKills, _ = c.oomKills()
	return u
}

// later combines u with a later reading: each count only grows, so the
// larger is the truer (a reading that failed is zero).
func (u usage) later(v usage) usage {
	return usage{user: max(u.user, v.user), system: max(u.system, v.system), peak: max(u.peak, v.peak), oomKills: max(u.oomKills, v.oomKills)}
}

// killAll kills every process of the cgroup (the container's init
// included, which stops the container) and returns once none is left.
func (c cgroup) killAll() error {
	if c.v2 {
		if err := os.WriteFile(filepath.Join(c.unified, "cgroup.kill"), []byte("1"), 0); err == nil {
			return c.awaitEmpty()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		pids, err := c.procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("processes of the container survived SIGKILL for 5s")
}

func (c cgroup) awaitEmpty() error {
	for i := 0; i < 2500; i++ {
		pids, err := c.procs()
		if err != nil || len(pids) == 0 {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("processes of the container survived cgroup.kill for 5s")
}

// procs lists the cgroup's processes; a cgroup already removed has none.
func (c cgroup) procs() ([]int, error) {
	data, err := os.ReadFile(c.procsFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the container's processes: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func readInt(file string) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return n, nil
}

// readKeyed reads a file of "key value" lines.
func readKeyed(file string) (map[string]int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m, nil
}
