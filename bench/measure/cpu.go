// Package measure tells what a benchmark ran on (DetectHost) and what its
// work cost in CPU, split into user and system time, as this process tree
// and as the whole machine account it. It imports nothing of coderun's, so
// any package's benchmarks can use it.
package measure

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CPU is CPU time split into its user and system (kernel) parts.
type CPU struct {
	User, System time.Duration
}

// Total is user plus system time.
func (c CPU) Total() time.Duration { return c.User + c.System }

// Sub returns c minus base.
func (c CPU) Sub(base CPU) CPU { return CPU{c.User - base.User, c.System - base.System} }

// Add returns c plus o.
func (c CPU) Add(o CPU) CPU { return CPU{c.User + o.User, c.System + o.System} }

// Per returns c divided over n runs.
func (c CPU) Per(n int) CPU {
	if n <= 0 {
		return CPU{}
	}
	return CPU{c.User / time.Duration(n), c.System / time.Duration(n)}
}

// String is "U + S ms".
func (c CPU) String() string {
	return fmt.Sprintf("%.1f + %.1f", float64(c.User.Microseconds())/1000, float64(c.System.Microseconds())/1000)
}

// clockTick is USER_HZ, the unit of /proc/stat and /proc/PID/stat: 100 on
// every architecture Linux runs coderun on.
const clockTick = 10 * time.Millisecond

// MachineCPU is the CPU time the whole machine has spent so far, from
// /proc/stat: user (user and nice) and system (system, irq and softirq).
// It counts everything: kernel threads that tear down a sandbox's
// namespaces, processes that are no child of this one, and whatever else
// runs on the machine. Steal (time the hypervisor gave another guest) is
// not counted.
func MachineCPU() CPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPU{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return CPU{}
	}
	var v [7]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq
	return CPU{User: time.Duration(v[0]+v[1]) * clockTick, System: time.Duration(v[2]+v[5]+v[6]) * clockTick}
}

// TreeCPU is the CPU time of this process and all it started: its own
// (every thread), that of its children it has reaped (with theirs), and
// that of its live children with what they reaped (a zygote, with every
// sandbox it forked and reaped). Work done for it by kernel threads is not
// in it (MachineCPU has that).
func TreeCPU() CPU {
	var self, children unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &children)
	c := CPU{User: tv(self.Utime) + tv(children.Utime), System: tv(self.Stime) + tv(children.Stime)}
	for _, pid := range liveChildren() {
		c = c.Add(procCPU(pid))
	}
	return c
}

func tv(t unix.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// liveChildren lists this process's children that have not been reaped.
func liveChildren() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// procCPU is a live process's CPU time with that of the children it has
// reaped (utime, stime, cutime and cstime of /proc/PID/stat).
func procCPU(pid int) CPU {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPU{}
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted from after its closing one (state is field 3).
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return CPU{}
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return CPU{}
	}
	n := func(k int) time.Duration { // field k of stat(5), 1-based
		v, _ := strconv.ParseInt(f[k-3], 10, 64)
		return time.Duration(v) * clockTick
	}
	return CPU{User: n(14) + n(16), System: n(15) + n(17)}
}

// Meter measures the CPU a stretch of work costs, both ways at once.
type Meter struct {
	tree, machine CPU
}

// Start begins a measurement.
func Start() Meter { return Meter{tree: TreeCPU(), machine: MachineCPU()} }

// Stop returns the process tree's and the machine's CPU since Start.
func (m Meter) Stop() (tree, machine CPU) {
	return TreeCPU().Sub(m.tree), MachineCPU().Sub(m.machine)
}
