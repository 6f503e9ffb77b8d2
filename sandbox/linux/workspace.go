package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// workspace is the writable storage of a sandbox: one size-capped tmpfs
// holding work/ (the program's /work), tmp/ (its /tmp) and shm/ (its
// /dev/shm). It is a detached mount (fsopen, fsmount): it is in no mount
// table of the host, and exists only as long as a descriptor of it, or a
// sandbox's mount of one of its directories, does. The host reaches its
// files through its descriptor (dir is /proc/self/fd/N); each sandbox gets
// clones of its three directories (clones), which it mounts in its own
// mount namespace. So when coderun is killed, nothing of a workspace stays
// behind: its descriptor goes with the process, its sandboxes' mounts
// with their namespaces. A one-shot run's box owns its workspace; a
// long-lived Sandbox keeps one across the programs it starts.
type workspace struct {
	mnt     *os.File // the detached mount's root
	dir     string   // a path to it for this process: /proc/self/fd/N
	size    int64
	hostUID int // owner of work/, tmp/, shm/: the program's id on the host
}

// workspaceDirs are the workspace's directories, in the order clones
// returns them, with their modes.
var workspaceDirs = []struct {
	name string
	mode os.FileMode
}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}}

// newWorkspace makes a fresh workspace of size bytes for the sandbox
// named id, whose directories belong to hostUID.
func (rt *Runtime) newWorkspace(id string, size int64, hostUID int) (*workspace, error) {
	mnt, err := mountTmpfs(size)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", id, err)
	}
	w := &workspace{mnt: mnt, dir: "/proc/self/fd/" + strconv.Itoa(int(mnt.Fd())), size: size, hostUID: hostUID}
	if err := w.populate(); err != nil {
		w.remove(func(string, ...any) {})
		return nil, err
	}
	return w, nil
}

// mountTmpfs makes a detached tmpfs mount of size bytes, nosuid and nodev.
func mountTmpfs(size int64) (*os.File, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := configureTmpfs(fsfd, size); err != nil {
		return nil, err
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("create tmpfs: %w", err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("fsmount tmpfs: %w", err)
	}
	return os.NewFile(uintptr(fd), "workspace"), nil
}

// configureTmpfs sets a tmpfs context's size cap and, in proportion, its
// inode cap (so that a flood of empty files is bounded too).
func configureTmpfs(fsfd int, size int64) error {
	inodes := size / 1024
	inodes = max(4096, min(inodes, 1<<20))
	for _, o := range [][2]string{{"size", strconv.FormatInt(size, 10)}, {"nr_inodes", strconv.FormatInt(inodes, 10)}, {"mode", "0711"}} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return fmt.Errorf("tmpfs %s=%s: %w", o[0], o[1], err)
		}
	}
	return nil
}

func (w *workspace) populate() error {
	for _, d := range workspaceDirs {
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

// work is the host path of the program's /work (valid in this process).
func (w *workspace) work() string { return filepath.Join(w.dir, "work") }

// clones returns detached copies (open_tree(2) clones) of work/, tmp/ and
// shm/, for one sandbox to mount; the caller closes them.
func (w *workspace) clones() ([]*os.File, error) {
	out := make([]*os.File, 0, len(workspaceDirs))
	for _, d := range workspaceDirs {
		f, err := cloneMount(w.mnt, d.name)
		if err != nil {
			closeFiles(out)
			return nil, fmt.Errorf("workspace: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// cloneMount returns a detached clone (open_tree(2)) of the directory at
// path in the mount mnt, or of its root when path is empty.
func cloneMount(mnt *os.File, path string) (*os.File, error) {
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	name := filepath.Join(mnt.Name(), path)
	fd, err := unix.OpenTree(int(mnt.Fd()), path, uint(flags))
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// resize changes the size cap (reconfiguring the tmpfs every clone shares).
func (w *workspace) resize(size int64) error {
	if size == w.size {
		return nil
	}
	fsfd, err := unix.Fspick(int(w.mnt.Fd()), "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC)
	if err != nil {
		return fmt.Errorf("workspace: resize to %d bytes: %w", size, err)
	}
	defer unix.Close(fsfd)
	if err := configureTmpfs(fsfd, size); err != nil {
		return fmt.Errorf("workspace: resize: %w", err)
	}
	if err := unix.FsconfigReconfigure(fsfd); err != nil {
		return fmt.Errorf("workspace: resize to %d bytes: %w", size, err)
	}
	w.size = size
	return nil
}

// remove lets go of the workspace: the tmpfs is freed once no sandbox's
// mount of it remains either.
func (w *workspace) remove(logf func(string, ...any)) {
	if err := w.mnt.Close(); err != nil {
		logf("coderun: close workspace: %v", err)
	}
}
