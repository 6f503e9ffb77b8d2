package linux

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Isolation layers, as Probe names them.
const (
	LayerRoot         = "root"
	LayerUserNS       = "user-namespace"
	LayerPIDNS        = "pid-namespace"
	LayerNetNS        = "net-namespace"
	LayerMountNS      = "mount-namespace"
	LayerIPCNS        = "ipc-namespace"
	LayerUTSNS        = "uts-namespace"
	LayerCgroupNS     = "cgroup-namespace"
	LayerMountSetattr = "mount-setattr"
	LayerSeccomp      = "seccomp"
	LayerCgroup       = "cgroup"
	LayerLandlock     = "landlock"
	LayerTimeNS       = "time-namespace"
)

// waivable layers may be missing when the operator says so (Options.AllowWeaker).
var waivable = map[string]string{
	LayerSeccomp: "runs would have no system-call filter",
	LayerCgroup:  "memory and process limits fall back to per-process rlimits; no OOM reporting, CPU accounting or cgroup kill",
}

// Layer is one isolation mechanism and whether this host provides it.
type Layer struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Required  bool   `json:"required"` // false: informational, the runtime does not use it
	Detail    string `json:"detail"`   // what was found, or why it is missing
}

// Report is the outcome of Probe.
type Report struct {
	Layers []Layer `json:"layers"`
}

func (r Report) layer(name string) Layer {
	for _, l := range r.Layers {
		if l.Name == name {
			return l
		}
	}
	return Layer{Name: name}
}

// Require fails, naming every missing required layer, unless allowed lists
// it and it can be waived.
func (r Report) Require(allowed []string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		if _, can := waivable[a]; !can {
			return fmt.Errorf("linux runtime: layer %q cannot be waived (only %s can)", a, strings.Join(waivableNames(), ", "))
		}
		ok[a] = true
	}
	var missing []string
	for _, l := range r.Layers {
		if l.Required && !l.Available && !ok[l.Name] {
			hint := ""
			if why, can := waivable[l.Name]; can {
				hint = fmt.Sprintf(" (to run anyway, allow the weaker mode %q: %s)", l.Name, why)
			}
			missing = append(missing, fmt.Sprintf("%s: %s%s", l.Name, l.Detail, hint))
		}
	}
	if len(missing) > 0 {
		return errors.New("linux runtime: refusing to run without required isolation:\n  " + strings.Join(missing, "\n  "))
	}
	return nil
}

func waivableNames() []string {
	return []string{LayerCgroup, LayerSeccomp}
}

// Probe checks, without starting a sandbox, which layers this host offers.
func Probe() Report {
	return probe(probeCgroups)
}

// probe is Probe with the cgroup layer reported by cgroupLayer (a runtime
// reports on the groups it has set up, rather than make and remove a
// probe's).
func probe(cgroupLayer func() (string, error)) Report {
	var r Report
	add := func(name string, required bool, err error, detail string) {
		l := Layer{Name: name, Required: required, Available: err == nil, Detail: detail}
		if err != nil {
			l.Detail = err.Error()
		}
		r.Layers = append(r.Layers, l)
	}
	if os.Geteuid() == 0 {
		add(LayerRoot, true, nil, "running as root (needed for cgroups, workspace mounts and id maps)")
	} else {
		add(LayerRoot, true, fmt.Errorf("running as uid %d: the linux runtime needs root", os.Geteuid()), "")
	}
	for _, ns := range []struct{ layer, file string }{
		{LayerUserNS, "user"}, {LayerPIDNS, "pid"}, {LayerNetNS, "net"}, {LayerMountNS, "mnt"},
		{LayerIPCNS, "ipc"}, {LayerUTSNS, "uts"}, {LayerCgroupNS, "cgroup"},
	} {
		_, err := os.Stat("/proc/self/ns/" + ns.file)
		if err != nil {
			err = fmt.Errorf("kernel lacks %s namespaces: %w", ns.file, err)
		}
		detail := "supported by the kernel"
		if ns.layer == LayerUserNS && err == nil {
			if n, rerr := os.ReadFile("/proc/sys/user/max_user_namespaces"); rerr == nil && strings.TrimSpace(string(n)) == "0" {
				err = errors.New("disabled: /proc/sys/user/max_user_namespaces is 0")
			}
		}
		add(ns.layer, true, err, detail)
	}
	err := unix.MountSetattr(-1, "", 0, &unix.MountAttr{})
	if errors.Is(err, unix.ENOSYS) {
		add(LayerMountSetattr, true, errors.New("mount_setattr(2) missing: kernel older than 5.12"), "")
	} else {
		add(LayerMountSetattr, true, nil, "mount_setattr(2) available for read-only binds")
	}
	if acts, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail"); err != nil {
		add(LayerSeccomp, true, fmt.Errorf("seccomp filters unavailable: %w", err), "")
	} else if !strings.Contains(string(acts), "kill_process") || !strings.Contains(string(acts), "errno") {
		add(LayerSeccomp, true, fmt.Errorf("seccomp lacks needed actions (has: %s)", strings.TrimSpace(string(acts))), "")
	} else {
		add(LayerSeccomp, true, nil, "seccomp-bpf filters with kill_process and errno")
	}
	detail, err := cgroupLayer()
	add(LayerCgroup, true, err, detail)
	r.Layers = append(r.Layers, probeLandlock(), probeTimeNS())
	return r
}

// probeCgroups sets up the cgroups a runtime would use (and removes its
// own group again) and reports what is missing, or what there is.
func probeCgroups() (string, error) {
	cg, err := detectCgroups(fmt.Sprintf("%d-probe-%s", os.Getpid(), newID()[:6]))
	if err != nil {
		return "", err
	}
	defer cg.close()
	return describeCgroups(cg)
}

// describeCgroups reports what a runtime's cgroups lack, or what they have.
func describeCgroups(cg cgroups) (string, error) {
	if miss := cg.missing(); len(miss) > 0 {
		return "", fmt.Errorf("cgroup v%d lacks controllers: %s", cg.version(), strings.Join(miss, ", "))
	}
	return fmt.Sprintf("cgroup v%d with memory, pids and CPU accounting", cg.version()), nil
}

// probeLandlock reports whether this kernel has Landlock, which the runtime
// uses when it can and goes without when it cannot (landlock.go).
func probeLandlock() Layer {
	l := Layer{Name: LayerLandlock}
	if abi := landlockABI(); abi == 0 {
		l.Detail = "landlock unavailable (kernel before 5.13, or not among its LSMs): sandboxes run without it; " +
			"a program can then lower its own oom_score_adj and write its other /proc/self entries"
	} else {
		l.Available = true
		l.Detail = fmt.Sprintf("landlock ABI %d: programs may write by path only beneath /work, /tmp and /dev/shm "+
			"(and not, for one, their oom_score_adj)", abi)
	}
	return l
}
