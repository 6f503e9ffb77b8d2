package linux

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the cgroup filesystems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroups creates one control group per sandbox. Two drivers implement it:
// cgroupV1 (one directory per controller) and cgroupV2 (the unified tree).
// The driver is chosen when the runtime starts, from what the host mounts.
type cgroups interface {
	// version is 1 or 2.
	version() int
	// create makes the group for one sandbox.
	create(name string) (cgroup, error)
	// missing lists the controllers this host lacks (memory, pids, cpu accounting).
	missing() []string
	// close removes the runtime's own group, which holds its sandboxes'.
	close() error
}

// cgroup is the control group of one sandbox: its limits, its counters, and
// the means to kill every process in it. The program (and all it starts)
// has a group of its own below the sandbox's for the process limit, so that
// the threads of init do not count against the program's budget; memory and
// CPU are limited and measured for the sandbox as a whole.
type cgroup interface {
	// fd returns a directory descriptor for CLONE_INTO_CGROUP of init, or -1
	// when init must be attached after it starts (attach).
	fd() int
	attach(pid int) error
	// attachProgram moves the program, which init forks once it is in the
	// sandbox's group, into the program's own group, before it runs code.
	attachProgram(pid int) error
	// programProcs counts the processes and threads in the program's group
	// (-1 if unknown).
	programProcs() int64
	// setLimits caps the sandbox's memory and the program's processes.
	setLimits(memory int64, pids int) error
	// resetPeak starts a new measurement of peak memory and returns the
	// counters the run's usage is measured from.
	resetPeak() (cgroupStats, error)
	stats() (cgroupStats, error)
	// kill sends SIGKILL to every process in the group.
	kill() error
	// destroy removes the group, waiting briefly for dying processes to leave.
	destroy() error
}

// cgroupStats are cumulative counters of a group.
type cgroupStats struct {
	// cpu is the group's CPU time, exact; cpuUserPart and cpuSystemPart
	// are the kernel's counters of its user and system parts, in a unit of
	// the driver's (v1: clock ticks, v2: microseconds), which only
	// apportion it.
	cpu                        time.Duration
	cpuUserPart, cpuSystemPart int64
	peakMemory                 int64
	oomKills                   int64
}

// cpuSince splits the CPU time used since base into user and system time
// by the parts counted since base, so that neither can be negative (a split
// of each total, subtracted, can be: the ratio moves between the two reads).
// With no part counted (v1 counts whole ticks) it is all user time.
func (s cgroupStats) cpuSince(base cgroupStats) (user, system time.Duration) {
	total := max(0, s.cpu-base.cpu)
	u := max(0, s.cpuUserPart-base.cpuUserPart)
	k := max(0, s.cpuSystemPart-base.cpuSystemPart)
	if u+k == 0 {
		return total, 0
	}
	user = time.Duration(float64(total) * float64(u) / float64(u+k))
	return user, total - user
}

// detectCgroups picks the driver for this host: v1 when the memory
// controller is mounted as a v1 hierarchy (hybrid hosts such as this
// project's machines), v2 on unified hosts. The runtime's sandboxes' groups
// are made in a group of its own, named owner ("<pid>-<suffix>", see
// ownerAlive), under a "coderun" group beside the host process.
func detectCgroups(owner string) (cgroups, error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return newCgroupV2(cgroupRoot, owner)
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes")); err == nil {
		return newCgroupV1(cgroupRoot, owner)
	}
	return nil, errors.New("no usable cgroup hierarchy: neither a cgroup v2 mount at /sys/fs/cgroup nor a v1 memory controller at /sys/fs/cgroup/memory")
}

// selfCgroups parses /proc/self/cgroup into controller → path (v2's entry has key "").
func selfCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, sc.Err()
}

// writeFile and readSmall talk to control files with bare system calls: an
// os.File would register each with the runtime's poller (kernfs files are
// pollable), which costs more than the write itself, many times per run.
// A write that makes the kernel work in the writing thread (a memory limit
// cut below usage reclaims memory first) ends with EINTR when a signal
// arrives meanwhile, as the Go runtime's own do: it is made again.
func writeFile(path, value string) error {
	fd, err := openRetrying(path, unix.O_WRONLY|unix.O_CLOEXEC)
	if err == nil {
		err = retryEINTR(func() error {
			_, err := unix.Write(fd, []byte(value))
			return err
		})
		unix.Close(fd)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// openRetrying opens path, again when a signal interrupts the open.
func openRetrying(path string, flags int) (int, error) {
	var fd int
	err := retryEINTR(func() error {
		var err error
		fd, err = unix.Open(path, flags, 0)
		return err
	})
	return fd, err
}

// retryEINTR calls fn until it ends other than by EINTR (a signal that
// interrupted a system call which the kernel does not restart itself).
func retryEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// readSmall reads a control file of at most a page.
func readSmall(path string) ([]byte, error) {
	fd, err := openRetrying(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

func readInt(path string) (int64, error) {
	data, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// readKeyed reads "key value" lines (memory.events, cpu.stat,
// memory.oom_control) and returns the values of keys, in order; a key not
// in the file reads as 0.
func readKeyed(path string, keys ...string) ([]int64, error) {
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		for i, k := range keys {
			if f[0] == k {
				if out[i], err = strconv.ParseInt(f[1], 10, 64); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", path, k, err)
				}
			}
		}
	}
	return out, nil
}

// removeDir removes an empty cgroup directory, retrying while the kernel
// finishes tearing down its last processes.
func removeDir(dir string) error {
	var err error
	for i := 0; i < 200; i++ {
		err = unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY && err != unix.EEXIST && err != unix.ENOTEMPTY {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(time.Millisecond * time.Duration(1+i/10))
	}
	return fmt.Errorf("cgroup %s still busy: %w", dir, err)
}

func splitFields(data []byte) []string { return strings.Fields(string(data)) }

// sweepStale reclaims, under the "coderun" group parent, what runtimes
// that no longer exist left behind (a coderun killed with SIGKILL): each
// runtime's group, named after its process (ownerAlive), is emptied of any
// process still in it (kill) and removed with every group below it, at
// once. A live process's groups are never touched. Groups of the older,
// flat layout (one per sandbox, owner unknown) are removed when empty and
// older than a sandbox's set-up could be. staleGroups says which.
func sweepStale(parent string, kill func(dir string)) {
	for _, g := range staleGroups(parent) {
		_ = g.remove(kill)
	}
}

// staleGroup is a group under a "coderun" group parent that sweepStale reclaims.
type staleGroup struct {
	dir   string
	owner int  // the dead runtime's pid; 0 for a flat-layout group
	flat  bool // the older layout: one group per sandbox, owner unknown
}

// staleGroups lists what sweepStale reclaims under parent.
func staleGroups(parent string) []staleGroup {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var out []staleGroup
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		alive, ok := ownerAlive(e.Name())
		switch {
		case ok && !alive:
			pid, _ := strconv.Atoi(e.Name()[:strings.IndexByte(e.Name(), '-')])
			out = append(out, staleGroup{dir: dir, owner: pid})
		case !ok:
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < 10*time.Minute {
				continue
			}
			out = append(out, staleGroup{dir: dir, flat: true})
		}
	}
	return out
}

// remove reclaims g: a dead runtime's group with everything below it, its
// processes killed; a flat-layout group only when it is empty.
func (g staleGroup) remove(kill func(dir string)) error {
	if !g.flat {
		return removeTree(g.dir, kill)
	}
	for _, leaf := range []string{"prog", "init"} {
		_ = os.Remove(filepath.Join(g.dir, leaf))
	}
	return os.Remove(g.dir)
}

// ownerAlive reads the pid of a runtime's group name ("<pid>-<suffix>", as
// its state directory) and reports whether that process exists; ok is
// false for a name of another form.
func ownerAlive(name string) (alive, ok bool) {
	pidStr, _, found := strings.Cut(name, "-")
	pid, err := strconv.Atoi(pidStr)
	if !found || err != nil || pid <= 0 {
		return false, false
	}
	err = unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM, true
}

// removeTree removes the group dir and every group below it, deepest
// first, after kill has signalled the processes of each.
func removeTree(dir string, kill func(dir string)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeTree(filepath.Join(dir, e.Name()), kill))
		}
	}
	kill(dir)
	errs = append(errs, removeDir(dir))
	return errors.Join(errs...)
}

// killProcs sends SIGKILL to every process listed in dir's cgroup.procs.
func killProcs(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range splitFields(data) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}
