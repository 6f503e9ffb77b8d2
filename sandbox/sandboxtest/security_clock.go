//go:build linux

package sandboxtest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// hostUptime models fingerprinting the host by its clocks: the host's boot
// time (btime in /proc/stat) and uptime (/proc/uptime, CLOCK_BOOTTIME,
// CLOCK_MONOTONIC, every process's start time in /proc/<pid>/stat) are the
// same for every process of the machine until it reboots, so they name the
// host, tell a tenant whether two runs shared one, and say how long it has
// gone without a reboot (and so without kernel patches). A sandbox must
// show clocks that began when it did: an uptime no longer than the
// sandbox has existed, and a boot time no earlier than that.
func (h *harness) hostUptime(t *testing.T) {
	if _, err := os.Stat("/proc/self/ns/time"); err != nil {
		t.Skip("this kernel has no time namespaces (Linux 5.6): a sandbox cannot have clocks of its own")
	}
	hostBtime, hostUp := hostClocks(t)
	if hostUp < 120 {
		t.Skipf("the host has been up only %.0f s: its uptime cannot be told from a sandbox's", hostUp)
	}
	// A sandbox may have been made (pooled) a little before this test
	// began, never before the suite's process started: its uptime is at
	// most the time since then, which is much less than the host's.
	bound := processAge(t) + 5
	req := attackPy(map[string]any{"host_btime": hostBtime, "host_uptime": hostUp, "bound": bound}, `
bound = ARGS["bound"]
host_btime = ARGS["host_btime"]
btime = [int(l.split()[1]) for l in read("/proc/stat").decode().splitlines() if l.startswith("btime ")][0]
if abs(btime - host_btime) <= 2:
    escaped("/proc/stat's btime is the host's boot time: %d" % btime)
elif btime < host_btime + ARGS["host_uptime"] - bound:
    escaped("/proc/stat's btime %d is before the sandbox started (host's %d)" % (btime, host_btime))
else:
    blocked("read the host's boot time in /proc/stat", "btime %d, the host's %d" % (btime, host_btime))
uptime = float(read("/proc/uptime").split()[0])
if uptime > bound:
    escaped("/proc/uptime says %.1f s, the host's (%.1f s), not the sandbox's" % (uptime, ARGS["host_uptime"]))
else:
    blocked("read the host's uptime in /proc/uptime", "%.2f s" % uptime)
for name in ("CLOCK_BOOTTIME", "CLOCK_MONOTONIC"):
    v = time.clock_gettime(getattr(time, name))
    if v > bound:
        escaped("%s reads %.1f s: the host's uptime" % (name, v))
    else:
        blocked("read the host's uptime through " + name, "%.2f s" % v)
tick = os.sysconf("SC_CLK_TCK")
for pid in ["self"] + [str(p) for p in pids()]:
    try:
        stat = read("/proc/%s/stat" % pid)
    except OSError:
        continue
    start = int(stat[stat.rindex(b")") + 1:].split()[22 - 3]) / tick
    if start > bound:
        escaped("/proc/%s/stat: started %.1f s after boot, by the host's clock" % (pid, start))
    else:
        blocked("read the host's uptime in /proc/%s/stat" % pid, "started %.2f s after boot" % start)
done()
`)
	h.attack(t, req)
}

// hostClocks reads the host's boot time (seconds since the epoch) and
// uptime (seconds).
func hostClocks(t *testing.T) (btime int64, uptime float64) {
	t.Helper()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			btime, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("btime in /proc/stat: %v", err)
			}
		}
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	uptime, err = strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil {
		t.Fatalf("/proc/uptime: %v", err)
	}
	return btime, uptime
}

// processAge is how long this process has been running, in seconds.
func processAge(t *testing.T) float64 {
	t.Helper()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	start, err := strconv.ParseFloat(fields[22-3], 64)
	if err != nil {
		t.Fatalf("/proc/self/stat: %v", err)
	}
	_, up := hostClocks(t)
	return up - start/100 // USER_HZ
}
