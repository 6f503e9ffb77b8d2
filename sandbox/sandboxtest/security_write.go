//go:build linux

package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Write attacks never destroy anything if they get through: they create
// new, uniquely named entries (removed afterwards), open existing files for
// writing without writing, or write back the value a file already holds.
// The host side then checks that nothing appeared on the host.

// writeCheck runs body (which must use must_fail for every attempt) and
// then fails the test for each host path in mustNotExist that exists,
// removing it.
func (h *harness) writeCheck(t *testing.T, tag string, mustNotExist []string, body string) {
	t.Helper()
	h.attack(t, attackPy(map[string]any{"tag": tag}, "tag = ARGS[\"tag\"]\n"+body+"\ndone()\n"))
	for _, p := range mustNotExist {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("CONTAINMENT FAILURE: %s appeared on the host after the run", p)
			os.RemoveAll(p)
		}
	}
}

// writeUsr models code tampering with the system's programs and libraries:
// planting a binary in /usr/bin, a sitecustomize.py that later runs (and
// other tenants) would execute, or modifying the interpreter itself.
func (h *harness) writeUsr(t *testing.T) {
	tag := "coderun-escape-" + randomHex(6)
	site := ""
	if matches, _ := filepath.Glob("/usr/lib/python3*/sitecustomize.py"); len(matches) == 0 {
		// Only checked on the host when no such file exists there already.
		site = "/usr/lib/python3/dist-packages/" + tag + ".pth"
	}
	h.writeCheck(t, tag, []string{"/usr/" + tag, "/usr/bin/" + tag, "/usr/local/bin/" + tag, site}, `
import sysconfig, shutil
must_fail("create /usr/" + tag, open, "/usr/" + tag, "w")
must_fail("create /usr/bin/" + tag, open, "/usr/bin/" + tag, "w")
must_fail("create /usr/local/bin/" + tag, open, "/usr/local/bin/" + tag, "w")
must_fail("mkdir /usr/" + tag + "-dir", os.mkdir, "/usr/" + tag + "-dir")
must_fail("plant sitecustomize.py", open, sysconfig.get_paths()["stdlib"] + "/sitecustomize.py", "a")
must_fail("plant a .pth file in dist-packages", open, "/usr/lib/python3/dist-packages/" + tag + ".pth", "w")
python = os.path.realpath(sys.executable)
must_fail("open the interpreter for writing", open_for_write, python)
st = os.stat(python)
must_fail("chmod the interpreter (to its own mode)", os.chmod, python, st.st_mode & 0o7777)
must_fail("touch the interpreter (to its own times)", os.utime, python, ns=(st.st_atime_ns, st.st_mtime_ns))
bash = shutil.which("bash")
must_fail("rename bash onto itself", os.rename, bash, bash)
`)
}

// writeEtc models code reconfiguring the system: adding a user, a cron job,
// a sudoers rule, a login script or an ld.so.preload library.
func (h *harness) writeEtc(t *testing.T) {
	tag := "coderun-escape-" + randomHex(6)
	checks := []string{"/etc/" + tag, "/etc/cron.d/" + tag, "/etc/sudoers.d/" + tag, "/etc/profile.d/" + tag + ".sh"}
	if _, err := os.Lstat("/etc/ld.so.preload"); err != nil {
		checks = append(checks, "/etc/ld.so.preload")
	}
	h.writeCheck(t, tag, checks, `
must_fail("create /etc/" + tag, open, "/etc/" + tag, "w")
must_fail("create /etc/ld.so.preload", open, "/etc/ld.so.preload", "a")
must_fail("add a cron job", open, "/etc/cron.d/" + tag, "w")
must_fail("add a sudoers rule", open, "/etc/sudoers.d/" + tag, "w")
must_fail("add a login script", open, "/etc/profile.d/" + tag + ".sh", "w")
for p in ["/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/etc/ld.so.cache"]:
    if os.path.exists(p):
        must_fail("open %s for writing" % p, open_for_write, p)
must_fail("replace /etc/passwd", os.rename, "/etc/passwd", "/etc/passwd")
`)
}

// writeRootDirs models code writing anywhere else outside the workspace:
// the root directory, /var, /run, /root, /home, /opt, /srv, /boot, the
// library and binary directories, /dev and /proc.
func (h *harness) writeRootDirs(t *testing.T) {
	tag := "coderun-escape-" + randomHex(6)
	dirs := []string{"/", "/var", "/var/tmp", "/var/lib", "/run", "/root", "/home", "/opt", "/srv", "/boot", "/mnt",
		"/bin", "/sbin", "/lib", "/lib64", "/dev", "/proc"}
	var checks []string
	for _, d := range dirs {
		checks = append(checks, filepath.Join(d, tag), filepath.Join(d, tag+"-dir"))
	}
	h.writeCheck(t, tag, checks, `
for d in `+pyList(dirs)+`:
    must_fail("create a file in " + d, open, os.path.join(d, tag), "w")
    must_fail("mkdir in " + d, os.mkdir, os.path.join(d, tag + "-dir"))
must_fail("symlink in /", os.symlink, "/work", "/" + tag)
`)
}

// writeProcSys models the classic container escapes through /proc: a
// core_pattern pipe (the kernel runs it as root on the host), the modprobe
// helper path, sysrq-trigger, kernel tunables, and making the program
// immune to the OOM killer. Existing values are written back unchanged, so
// an escape is detected without harm; the host's values are compared
// before and after.
func (h *harness) writeProcSys(t *testing.T) {
	watch := []string{"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname"}
	before := map[string]string{}
	for _, p := range watch {
		if data, err := os.ReadFile(p); err == nil {
			before[p] = string(data)
		}
	}
	h.writeCheck(t, "", nil, `
for p in ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname",
          "/proc/sys/kernel/domainname", "/proc/sys/kernel/randomize_va_space", "/proc/sys/vm/overcommit_memory",
          "/proc/sys/fs/file-max", "/proc/sys/user/max_user_namespaces", "/proc/sys/net/ipv4/ip_forward"]:
    def write_back(p=p):
        v = read(p)
        with open(p, "wb") as f:
            f.write(v)
        return "wrote back %r" % v
    must_fail("write " + p, write_back)
for p in ["/proc/sysrq-trigger", "/proc/sys/vm/drop_caches", "/proc/sys/kernel/sysrq"]:
    must_fail("open %s for writing" % p, open_for_write, p)
def oom_immune():
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-1000")
must_fail("make itself immune to the OOM killer", oom_immune)
def map_root():
    with open("/proc/self/uid_map", "w") as f:
        f.write("0 0 1")
must_fail("map host root into its user namespace", map_root)
`)
	for p, v := range before {
		if data, err := os.ReadFile(p); err == nil && string(data) != v {
			t.Errorf("CONTAINMENT FAILURE: the host's %s changed during the run: %q → %q", p, v, data)
		}
	}
}

// writeSys models escapes through sysfs: a cgroup v1 release_agent (run as
// root on the host when a group empties; CVE-2022-0492), the uevent
// helper, creating cgroups to lift limits, and kernel tunables.
func (h *harness) writeSys(t *testing.T) {
	tag := "coderun-escape-" + randomHex(6)
	uevent, _ := os.ReadFile("/sys/kernel/uevent_helper")
	h.writeCheck(t, tag, []string{"/sys/fs/cgroup/" + tag, "/sys/fs/cgroup/memory/" + tag, "/sys/fs/cgroup/pids/" + tag}, `
for p in ["/sys/fs/cgroup/release_agent", "/sys/fs/cgroup/memory/release_agent", "/sys/fs/cgroup/pids/release_agent",
          "/sys/fs/cgroup/memory/notify_on_release", "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
          "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/pids.max",
          "/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/power/state",
          "/sys/class/net/lo/mtu", "/sys/module/kernel/parameters/panic"]:
    must_fail("open %s for writing" % p, open_for_write, p)
for d in ["/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"]:
    must_fail("create a cgroup in " + d, os.mkdir, os.path.join(d, tag))
`)
	if after, _ := os.ReadFile("/sys/kernel/uevent_helper"); string(after) != string(uevent) {
		t.Errorf("CONTAINMENT FAILURE: the host's uevent_helper changed: %q → %q", uevent, after)
	}
}

// pyList formats strings as a Python list literal.
func pyList(items []string) string {
	out := "["
	for i, s := range items {
		if i > 0 {
			out += ", "
		}
		out += pyQuote(s)
	}
	return out + "]"
}
