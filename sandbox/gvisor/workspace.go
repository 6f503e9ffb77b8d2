package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// workspace is a box's writable storage: one size-capped tmpfs, mounted
// on the host in the box's state directory (which only root can enter),
// holding work/ (the program's /work), tmp/ (its /tmp) and shm/ (its
// /dev/shm), owned by the sandbox's user. The gofer binds the three into
// the sandbox; the host writes input files and reads results with
// sandbox/hostdir. A mount a killed coderun leaves is reclaimed by the
// next runtime (leftovers.go).
type workspace struct {
	dir  string // the tmpfs's mount point
	size int64
}

// workspaceDirs are the workspace's directories, with their modes.
var workspaceDirs = []struct {
	name string
	mode os.FileMode
}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}}

// newWorkspace mounts a workspace of size bytes at dir for uid.
func newWorkspace(dir string, size int64, uid int) (*workspace, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	w := &workspace{dir: dir, size: size}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions(size)); err != nil {
		return nil, fmt.Errorf("workspace: mount tmpfs: %w", err)
	}
	for _, d := range workspaceDirs {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return w, fmt.Errorf("workspace: %w", err)
		}
		if err := os.Chmod(p, d.mode); err != nil { // past the umask, with the sticky bit
			return w, fmt.Errorf("workspace: %w", err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			return w, fmt.Errorf("workspace: %w", err)
		}
	}
	return w, nil
}

// tmpfsOptions caps a workspace's size and, in proportion, its inodes
// (so that a flood of empty files is bounded too): one per 4 KiB, a
// quarter of the linux runtime's, since every file a program creates
// crosses to the host (the gofer, or the Sentry's own host call) at some
// 0.4 to 1 ms here, and a workspace full of empty files should take
// seconds to make, not tens of them. The default 256 MiB holds 65,536.
func tmpfsOptions(size int64) string {
	inodes := max(4096, min(size/4096, 1<<20))
	return "mode=0711,size=" + strconv.FormatInt(size, 10) + ",nr_inodes=" + strconv.FormatInt(inodes, 10)
}

// work is the host path of the program's /work.
func (w *workspace) work() string { return filepath.Join(w.dir, "work") }

// resize changes the workspace's size cap.
func (w *workspace) resize(size int64) error {
	if size == w.size {
		return nil
	}
	if err := unix.Mount("", w.dir, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions(size)); err != nil {
		return fmt.Errorf("workspace: resize to %d bytes: %w", size, err)
	}
	w.size = size
	return nil
}

// remove unmounts the workspace (lazily: the gofer of a killed sandbox
// may still hold it a moment) and removes its mount point.
func (w *workspace) remove() error {
	err := unix.Unmount(w.dir, unix.MNT_DETACH)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("workspace: unmount: %w", err)
	}
	if err := os.Remove(w.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
