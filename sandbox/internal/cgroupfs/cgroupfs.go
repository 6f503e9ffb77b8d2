// Package cgroupfs reads a cgroup's accounting (CPU time, peak memory,
// OOM kills) from its files on the host, on cgroup v1 and v2 alike, for
// the runtimes that find or make a sandbox's group themselves (docker,
// gvisor). sandbox/linux has its own readers, which retry on EINTR.
package cgroupfs

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
)

// Group is where a cgroup's accounting files are: its directory in the
// unified hierarchy (v2), or in the memory and cpuacct hierarchies (v1).
type Group struct {
	V2      bool
	Unified string // v2: the group's directory
	Memory  string // v1: the memory controller's directory
	CPUAcct string // v1: the cpuacct controller's directory
}

// CPU returns the user and system CPU time of every process the group has held.
func (g Group) CPU() (user, system time.Duration, err error) {
	if g.V2 {
		stat, err := ReadKeyed(filepath.Join(g.Unified, "cpu.stat"))
		if err != nil {
			return 0, 0, err
		}
		return time.Duration(stat["user_usec"]) * time.Microsecond, time.Duration(stat["system_usec"]) * time.Microsecond, nil
	}
	u, err := ReadInt(filepath.Join(g.CPUAcct, "cpuacct.usage_user"))
	if err != nil {
		return 0, 0, err
	}
	s, err := ReadInt(filepath.Join(g.CPUAcct, "cpuacct.usage_sys"))
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(u), time.Duration(s), nil
}

// PeakMemory returns the most memory the group has used (on v2 kernels
// without memory.peak, its present use).
func (g Group) PeakMemory() (int64, error) {
	if g.V2 {
		n, err := ReadInt(filepath.Join(g.Unified, "memory.peak"))
		if errors.Is(err, os.ErrNotExist) {
			return ReadInt(filepath.Join(g.Unified, "memory.current"))
		}
		return n, err
	}
	return ReadInt(filepath.Join(g.Memory, "memory.max_usage_in_bytes"))
}

// ResetPeak starts the group's peak memory over from its present use,
// where the kernel can (cgroup v1; v2 from Linux 6.12); a kernel that
// cannot keeps the peak of the group's whole life.
func (g Group) ResetPeak() {
	if g.V2 {
		_ = os.WriteFile(filepath.Join(g.Unified, "memory.peak"), []byte("0"), 0)
		return
	}
	_ = os.WriteFile(filepath.Join(g.Memory, "memory.max_usage_in_bytes"), []byte("0"), 0)
}

// OOMKills returns how many processes the kernel killed for the group's memory limit.
func (g Group) OOMKills() (int64, error) {
	file := filepath.Join(g.Memory, "memory.oom_control")
	if g.V2 {
		file = filepath.Join(g.Unified, "memory.events")
	}
	m, err := ReadKeyed(file)
	if err != nil {
		return 0, err
	}
	return m["oom_kill"], nil
}

// ReadInt reads a file holding one integer.
func ReadInt(file string) (int64, error) {
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

// ReadKeyed reads a file of "key value" lines; a line whose value is not
// an integer is passed over.
func ReadKeyed(file string) (map[string]int64, error) {
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
