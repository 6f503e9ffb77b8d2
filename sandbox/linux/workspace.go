package linux

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// workspace is the writable storage of a sandbox: one tmpfs on the host,
// mounted under the runtime's state directory, holding work/ (the program's
// /work), tmp/ (its /tmp) and shm/ (its /dev/shm) under one size cap. The
// host writes input files into it and reads results out of it without
// entering the sandbox. A one-shot run's box owns its workspace; a
// long-lived Sandbox keeps one across the programs it starts.
type workspace struct {
	dir     string // mount point
	size    int64
	hostUID int // owner of work/, tmp/, shm/: the program's id on the host
}

// newWorkspace mounts a fresh workspace named id.
func (rt *Runtime) newWorkspace(id string, size int64, hostUID int) (*workspace, error) {
	w := &workspace{dir: filepath.Join(rt.wsDir, id), hostUID: hostUID}
	if err := os.Mkdir(w.dir, 0o711); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if err := unix.Mount("tmpfs", w.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions(size)); err != nil {
		os.Remove(w.dir)
		return nil, fmt.Errorf("workspace: mount tmpfs: %w", err)
	}
	w.size = size
	if err := w.populate(); err != nil {
		w.remove(rt.logf)
		return nil, err
	}
	return w, nil
}

func (w *workspace) populate() error {
	if err := os.Chmod(w.dir, 0o711); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}} {
		p := filepath.Join(w.dir, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := os.Chmod(p, d.mode); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := os.Chown(p, w.hostUID, w.hostUID); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

// work is the host path of the program's /work.
func (w *workspace) work() string { return filepath.Join(w.dir, "work") }

// tmpfsOptions caps bytes and, in proportion, inodes (so that a flood of
// empty files is bounded too).
func tmpfsOptions(size int64) string {
	inodes := size / 1024
	inodes = max(4096, min(inodes, 1<<20))
	return fmt.Sprintf("size=%d,nr_inodes=%d,mode=0711", size, inodes)
}

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

func (w *workspace) remove(logf func(string, ...any)) {
	if err := unix.Unmount(w.dir, unix.MNT_DETACH); err != nil {
		logf("coderun: unmount workspace %s: %v", w.dir, err)
	}
	if err := os.Remove(w.dir); err != nil {
		logf("coderun: %v", err)
	}
}
