package gvisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What a coderun process leaves behind when it is killed with SIGKILL (it
// cannot clean up), or when runsc is: under StateDir, its directory
// <pid>-<random> with runsc's state of the containers that were running,
// their bundles and their workspaces' tmpfs mounts; in every cgroup
// hierarchy, its group coderun-gvisor/<pid>-<random> with its boxes' and
// runsc's groups, and possibly a Sentry or gofer still in them. A runtime
// reclaims, as it starts, what runtimes whose process no longer exists
// left: it kills what is left in their groups, has runsc delete their
// containers, unmounts their workspaces and removes the rest. Nothing of a
// live process is touched.

// reclaim removes what dead runtimes left under the state directory and
// the cgroup tree. Failures are left for the next runtime to retry.
func (r *Runtime) reclaim() {
	entries, _ := os.ReadDir(r.opts.StateDir)
	for _, e := range entries {
		if e.IsDir() && ownerDead(e.Name()) {
			r.reclaimOwner(e.Name())
		}
	}
	for _, mnt := range cgroupRoots() {
		groups, _ := os.ReadDir(filepath.Join(mnt, cgroupParent))
		for _, g := range groups {
			if g.IsDir() && ownerDead(g.Name()) {
				dir := filepath.Join(mnt, cgroupParent, g.Name())
				_ = killTree(dir)
				_ = removeGroupTree(dir)
			}
		}
	}
}

// ownerDead reports whether name is a runtime's <pid>-<random> whose
// process no longer exists.
func ownerDead(name string) bool {
	p, _, ok := strings.Cut(name, "-")
	pid, err := strconv.Atoi(p)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// reclaimOwner removes a dead runtime's state directory: its Sentries and
// gofers are killed through its cgroups, runsc deletes its containers,
// its workspaces are unmounted.
func (r *Runtime) reclaimOwner(owner string) {
	dir := filepath.Join(r.opts.StateDir, owner)
	for _, mnt := range cgroupRoots() {
		_ = killTree(filepath.Join(mnt, cgroupParent, owner))
	}
	boxes, _ := os.ReadDir(filepath.Join(dir, "boxes"))
	for _, b := range boxes {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		args := append(r.globalFlags(), "delete", "--force", b.Name())
		args[0] = "--root=" + filepath.Join(dir, "runsc")
		_ = exec.CommandContext(ctx, r.bin, args...).Run()
		cancel()
		ws := filepath.Join(dir, "boxes", b.Name(), "ws")
		if err := unix.Unmount(ws, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			continue // keep what cannot be unmounted rather than delete into it
		}
	}
	for _, m := range mountsUnder(dir) {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	if len(mountsUnder(dir)) == 0 {
		_ = os.RemoveAll(dir)
	}
}

// mountsUnder lists the mount points at or below dir, deepest last.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := unescapeMount(f[4]); mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
