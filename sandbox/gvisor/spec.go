package gvisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/coderun/coderun/sandbox"
)

// spec is the OCI config of a box whose program is process: the template
// root read-only, the host trees bound read-only, the workspace's three
// directories bound read-write, the Sentry's /proc, no network (runsc runs
// with --network=none; the spec adds an empty network namespace), no
// capabilities, no_new_privs, and runsc's cgroup below the box's.
func (r *Runtime) spec(b *box, process *specs.Process) *specs.Spec {
	mounts := []specs.Mount{
		// Read-only: the Sentry's /proc has nothing of the host's, but a
		// writable one would let the program set what the host's kernel
		// guards (an oom_score_adj lowered without CAP_SYS_RESOURCE,
		// which gVisor does not check).
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"ro", "nosuid", "noexec", "nodev"}},
	}
	for _, src := range r.binds {
		mounts = append(mounts, specs.Mount{Destination: src, Type: "bind", Source: src,
			Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	for _, d := range []struct{ dir, at string }{{"work", sandbox.WorkDir}, {"tmp", "/tmp"}, {"shm", "/dev/shm"}} {
		mounts = append(mounts, specs.Mount{Destination: d.at, Type: "bind", Source: filepath.Join(b.ws.dir, d.dir),
			Options: []string{"rbind", "rw", "nosuid", "nodev"}})
	}
	// Devices gVisor offers that the other runtimes do not: FUSE (an
	// unreadable file over it) and TUN (an empty directory over /dev/net);
	// and runsc, where the read-only /usr would show it.
	for _, f := range append([]string{"/dev/fuse"}, r.hidden.files...) {
		mounts = append(mounts, specs.Mount{Destination: f, Type: "bind", Source: r.hidden.file, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
	}
	for _, d := range append([]string{"/dev/net"}, r.hidden.dirs...) {
		mounts = append(mounts, specs.Mount{Destination: d, Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=0555"}})
	}
	return &specs.Spec{
		Version:  specs.Version,
		Process:  process,
		Root:     &specs.Root{Path: r.root, Readonly: true},
		Hostname: hostname,
		Mounts:   mounts,
		Linux: &specs.Linux{
			CgroupsPath: b.cg.runscPath(),
			Seccomp:     seccompProfile(),
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
		},
	}
}

// process is the OCI process running argv as the sandbox's user under
// limits l: no capabilities, no_new_privs, the open-file limit, no core
// files.
//
// CPU time has no rlimit: the host stops the program at its limit by the
// box's cgroup (the Sentry's own accounting of a task's CPU time, on
// systrap, counts time the host did not run it, and would stop it early
// on a busy host). The process limit is RLIMIT_NPROC, which the Sentry
// holds (a fork or clone past it fails with EAGAIN) counting the tasks,
// threads included, of the program's user: the program's alone (a
// long-lived sandbox's init is another user). Neither pids cgroup would
// do: the host's counts the Sentry's own threads; the Sentry's, which
// refuses a fork past its pids.max, is only set from inside the sandbox.
func (r *Runtime) process(argv, env []string, l sandbox.Limits) *specs.Process {
	oomScoreAdj := 1000
	return &specs.Process{
		User:            specs.User{UID: uint32(r.opts.UID), GID: uint32(r.opts.UID)},
		Args:            argv,
		Env:             env,
		Cwd:             sandbox.WorkDir,
		Capabilities:    &specs.LinuxCapabilities{},
		NoNewPrivileges: true,
		// The host's OOM killer sees the Sentry: a sandbox goes first.
		OOMScoreAdj: &oomScoreAdj,
		Rlimits: []specs.POSIXRlimit{
			{Type: "RLIMIT_NOFILE", Hard: uint64(l.OpenFiles), Soft: uint64(l.OpenFiles)},
			{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
			{Type: "RLIMIT_NPROC", Hard: uint64(l.Processes), Soft: uint64(l.Processes)},
		},
	}
}

// writeSpec writes s as the bundle's config.json in dir.
func writeSpec(dir string, s *specs.Spec) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("OCI config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		return fmt.Errorf("OCI config: %w", err)
	}
	return nil
}
