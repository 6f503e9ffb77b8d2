package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Host describes the machine a benchmark ran on: what decides how dear
// forks, page faults and cross-CPU TLB shootdowns are, and so how far a
// figure measured on one machine carries to another.
type Host struct {
	// Virtualization names the hypervisor as the guest sees it: "none"
	// (bare metal), "kvm", "pvm (paravirtualized, on kvm)", "xen", "hyperv",
	// "vmware", or "unknown hypervisor". PVM guests take page faults and
	// IPIs through the hypervisor, which makes them several times dearer.
	Virtualization string
	// Signs lists what the guess rests on (the cpuinfo flag, kernel
	// symbols, the clock sources, firmware strings).
	Signs []string
	// Container is "docker", "podman" or "" when none is recognised.
	Container string
	Kernel    string // uname release
	// Cgroup is "v1", "v2" or "hybrid (v1 controllers, v2 unified tree)".
	Cgroup string
	CPUs   int
	Model  string // the first CPU's model name
}

// DetectHost reads what this machine says of itself in /proc and /sys.
func DetectHost() Host {
	h := Host{CPUs: runtime.NumCPU(), Kernel: "unknown", Cgroup: cgroupKind("/sys/fs/cgroup")}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	h.Model = cpuinfoField(cpuinfo, "model name")
	flagged := hasWord(cpuinfoField(cpuinfo, "flags"), "hypervisor")
	if flagged {
		h.Signs = append(h.Signs, "cpuinfo: hypervisor flag")
	}
	clocks, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/available_clocksource")
	cmdline, _ := os.ReadFile("/proc/cmdline")
	vendor := strings.TrimSpace(readString("/sys/class/dmi/id/sys_vendor"))
	product := strings.TrimSpace(readString("/sys/class/dmi/id/product_name"))
	xen := strings.TrimSpace(readString("/sys/hypervisor/type"))
	pvm := hasKernelSymbol("pvm_")
	switch {
	case pvm:
		h.Signs = append(h.Signs, "kernel symbols pvm_*")
	case bytes.Contains(cmdline, []byte("pvm")):
		pvm = true
		h.Signs = append(h.Signs, "kernel command line names pvm")
	}
	if hasWord(string(clocks), "kvm-clock") {
		h.Signs = append(h.Signs, "clock source kvm-clock")
	}
	if bytes.Contains(cmdline, []byte("firecracker")) {
		h.Signs = append(h.Signs, "kernel command line names firecracker")
	}
	if vendor != "" {
		h.Signs = append(h.Signs, "firmware: "+strings.TrimSpace(vendor+" "+product))
	}
	switch {
	case pvm:
		h.Virtualization = "pvm (paravirtualized, on kvm)"
	case xen != "":
		h.Virtualization = xen
	case hasWord(string(clocks), "kvm-clock"):
		h.Virtualization = "kvm"
	case hasWord(string(clocks), "hyperv_clocksource_tsc_page"), vendor == "Microsoft Corporation":
		h.Virtualization = "hyperv"
	case strings.Contains(vendor, "VMware"):
		h.Virtualization = "vmware"
	case flagged:
		h.Virtualization = "unknown hypervisor"
	default:
		h.Virtualization = "none"
	}
	switch {
	case exists("/.dockerenv"):
		h.Container = "docker"
	case exists("/run/.containerenv"):
		h.Container = "podman"
	}
	return h
}

// String is the one-line header the benchmarks print.
func (h Host) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "host: virtualization %s", h.Virtualization)
	if len(h.Signs) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(h.Signs, ", "))
	}
	if h.Container != "" {
		fmt.Fprintf(&b, ", in a %s image", h.Container)
	}
	fmt.Fprintf(&b, "; kernel %s; cgroup %s; %d CPUs", h.Kernel, h.Cgroup, h.CPUs)
	if h.Model != "" {
		fmt.Fprintf(&b, " (%s)", h.Model)
	}
	return b.String()
}

// cgroupKind tells how the cgroup hierarchies are mounted under root.
func cgroupKind(root string) string {
	if exists(root + "/cgroup.controllers") {
		return "v2"
	}
	if exists(root + "/memory/memory.limit_in_bytes") {
		if exists(root + "/unified/cgroup.controllers") {
			return "hybrid (v1 controllers, v2 unified tree)"
		}
		return "v1"
	}
	return "none found"
}

// cpuinfoField returns the value of the first line of /proc/cpuinfo that
// names key.
func cpuinfoField(cpuinfo []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// hasKernelSymbol reports whether /proc/kallsyms lists a symbol whose name
// starts with prefix (the names are listed even where the addresses are
// hidden).
func hasKernelSymbol(prefix string) bool {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && strings.HasPrefix(fields[2], prefix) {
			return true
		}
	}
	return false
}

func hasWord(s, word string) bool {
	for _, f := range strings.Fields(s) {
		if f == word {
			return true
		}
	}
	return false
}

func readString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
