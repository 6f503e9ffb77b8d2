package docker

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

// cgroup locates a container's cgroup on the host: its memory and CPU
// accounting, its OOM kills and its processes.
type cgroup struct {
	cgroupfs.Group        // the accounting: CPU, ResetPeak, PeakMemory, OOMKills
	pids           string // v1: the pids controller's directory
}

// cgroupOf finds the cgroup of the host process pid (a container's init).
func cgroupOf(pid int) (cgroup, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cgroup{}, fmt.Errorf("reading the container's cgroup: %w", err)
	}
	var cg cgroup
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg.V2 = true
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, path := parts[1], parts[2]
		if cg.V2 {
			if ctrls == "" {
				cg.Unified = filepath.Join("/sys/fs/cgroup", path)
			}
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			switch c {
			case "memory":
				cg.Memory = filepath.Join("/sys/fs/cgroup/memory", path)
			case "cpuacct":
				cg.CPUAcct = filepath.Join("/sys/fs/cgroup", ctrls, path)
			case "pids":
				cg.pids = filepath.Join("/sys/fs/cgroup/pids", path)
			}
		}
	}
	if cg.V2 && cg.Unified == "" || !cg.V2 && (cg.Memory == "" || cg.CPUAcct == "" || cg.pids == "") {
		return cg, fmt.Errorf("the container's cgroup lacks the memory, CPU or pids controller: %q", data)
	}
	return cg, nil
}

// procsFile lists the cgroup's processes.
func (c cgroup) procsFile() string {
	if c.V2 {
		return filepath.Join(c.Unified, "cgroup.procs")
	}
	return filepath.Join(c.Memory, "cgroup.procs")
}

// setPids sets the cgroup's limit of processes and threads.
func (c cgroup) setPids(n int64) error {
	dir := c.pids
	if c.V2 {
		dir = c.Unified
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(n, 10)), 0); err != nil {
		return fmt.Errorf("setting the container's pids limit: %w", err)
	}
	return nil
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
	u.user, u.system, _ = c.CPU()
	u.peak, _ = c.PeakMemory()
	u.oomKills, _ = c.OOMKills()
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
	if c.V2 {
		if err := os.WriteFile(filepath.Join(c.Unified, "cgroup.kill"), []byte("1"), 0); err == nil {
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
