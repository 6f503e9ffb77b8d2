package linux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The sandbox's clocks. A process reads the host's boot time in /proc/stat
// (btime) and its uptime in /proc/uptime, both the same for every process
// of the machine until it reboots: they name the host and link runs to
// one another, as the boot id does. So the program starts in a time
// namespace of its own (Linux 5.6), whose boot-time and monotonic clocks
// begin when the sandbox's init began: in it /proc/uptime counts from the
// sandbox's start, and the kernel shifts btime (and every process's start
// time in /proc/<pid>/stat) by the namespace's offset, so btime reads as
// the moment the sandbox started. Wall-clock time (CLOCK_REALTIME) is the
// host's: time namespaces do not shift it.
//
// unshare(CLONE_NEWTIME) moves no process: the caller's children are born
// in the new namespace (a vfork+exec child enters it at exec), and its
// offsets can be written only until the first of them is. Init makes it
// just before it starts the program; zygote.py's new_time_namespace does
// the same for a zygote's sandbox.

// userHZ is the unit of /proc/<pid>/stat's times (USER_HZ: 100 on every
// architecture Go supports on Linux).
const userHZ = 100

// newTimeNamespace makes the time namespace the program will be born in,
// with its boot-time and monotonic clocks at zero when this process (the
// sandbox's PID 1) started. On a kernel without time namespaces (EINVAL)
// it does nothing: the sandbox then shows the host's boot time.
func newTimeNamespace() error {
	start, err := ownStartTime()
	if err != nil {
		return fmt.Errorf("time namespace: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWTIME); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return nil
		}
		return fmt.Errorf("time namespace: %w", err)
	}
	var boot, mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return fmt.Errorf("time namespace: %w", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return fmt.Errorf("time namespace: %w", err)
	}
	offsets := timeOffsets(start, boot.Nano(), mono.Nano())
	if err := os.WriteFile("/proc/self/timens_offsets", offsets, 0); err != nil {
		return fmt.Errorf("time namespace: set its clocks: %w", err)
	}
	return nil
}

// timeOffsets is what /proc/self/timens_offsets takes to make both clocks
// read zero at start (nanoseconds of CLOCK_BOOTTIME), given both clocks'
// values now: the boot-time clock moves back by start, and the monotonic
// clock by as much more as it is behind the boot-time clock (the time
// the host spent suspended), so that the two agree, as on a machine that
// has just booted.
func timeOffsets(start, boot, mono int64) []byte {
	offBoot := -start
	offMono := offBoot + boot - mono
	line := func(clock string, ns int64) string {
		sec, nsec := ns/1e9, ns%1e9
		if nsec < 0 { // the file wants 0 <= nanoseconds < 1e9
			sec, nsec = sec-1, nsec+1e9
		}
		return fmt.Sprintf("%s %d %d\n", clock, sec, nsec)
	}
	return []byte(line("monotonic", offMono) + line("boottime", offBoot))
}

// ownStartTime is the boot-time clock's value when this process started,
// in nanoseconds (/proc/self/stat's starttime, in units of USER_HZ).
func ownStartTime() (int64, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	ticks, err := statStartTime(stat)
	if err != nil {
		return 0, err
	}
	return ticks * (1e9 / userHZ), nil
}

// statStartTime reads field 22 (starttime) of a /proc/<pid>/stat line.
// The second field, the command's name in parentheses, may itself hold
// spaces and parentheses: fields are counted from the last ')'.
func statStartTime(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/self/stat: no command name in %q", stat)
	}
	fields := bytes.Fields(stat[i+1:]) // from field 3 (state)
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/self/stat: %d fields after the name, want 20 or more", len(fields))
	}
	ticks, err := strconv.ParseInt(string(fields[22-3]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/stat: starttime: %w", err)
	}
	return ticks, nil
}

// probeTimeNS reports whether this kernel has time namespaces, which the
// runtime uses when it can and goes without when it cannot.
func probeTimeNS() Layer {
	l := Layer{Name: LayerTimeNS}
	if _, err := os.Stat("/proc/self/ns/time"); err != nil {
		l.Detail = "time namespaces unavailable (kernel before 5.6): sandboxes show the host's uptime " +
			"(/proc/uptime) and boot time (btime in /proc/stat)"
		return l
	}
	l.Available = true
	l.Detail = "each sandbox's uptime and boot time are its own, counted from its start"
	return l
}
