package docker

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// The host's identity. /proc/sys/kernel/random/boot_id names the host's
// current boot: the same in every container, it would tell a program which
// machine it runs on and link one tenant's runs to another's. Programs read
// it, so it is not masked (an empty file is no boot id) but replaced: each
// container gets a random id of its own, bind-mounted over the kernel's
// from the container's read-only /.coderun. The engine's mount
// configuration refuses a mount inside /proc, so the runtime makes it
// itself in the container's mount namespace once the container runs,
// before any program does. (/proc/cmdline, which names the host's boot
// disk and image, is among the masked paths.)

// bootIDPath is the kernel's boot id file.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// writeBootID writes a fresh random boot id into the box's code directory.
func writeBootID(codeDir string) error {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return err
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	id := fmt.Sprintf("%x-%x-%x-%x-%x\n", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	return os.WriteFile(filepath.Join(codeDir, "boot_id"), []byte(id), 0o444)
}

// sentryArgv0 is the name runsc gives its sandbox process, gVisor's
// Sentry: the host process of a container of the OCI runtime runsc.
const sentryArgv0 = "runsc-sandbox"

// isSentry reports whether the host process pid is gVisor's Sentry (the
// container runs on the OCI runtime runsc): then its programs' /proc is
// the Sentry's own, boot id included (one of the sandbox's own), and no
// mount on the host reaches it.
func isSentry(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return argv0 == sentryArgv0
}

// bindBootID mounts the container's /.coderun/boot_id over its
// /proc/sys/kernel/random/boot_id, in the mount namespace of pid (a
// process of the container).
func bindBootID(pid int) error {
	return inMountNamespace(pid, func() error {
		if err := unix.Mount(codeDir+"/boot_id", bootIDPath, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting the container's boot id: %w", err)
		}
		if err := unix.Mount("", bootIDPath, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making the container's boot id read-only: %w", err)
		}
		return nil
	})
}

// inMountNamespace runs fn on a thread of its own that has joined pid's
// mount namespace. The thread is never given back to the Go scheduler: it
// ends with fn, and its namespace with it.
func inMountNamespace(pid int, fn func() error) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return fmt.Errorf("the container's mount namespace: %w", err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: see above
		// A thread shares its file system context (root, working
		// directory) with the process's others until it unshares it, and
		// setns into a mount namespace refuses a shared one.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare CLONE_FS: %w", err)
			return
		}
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("joining the container's mount namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
