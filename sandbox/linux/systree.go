package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// The system trees (/usr, the top-level directories of a root without
// merged /usr, the /etc directories of etcDirs) are read-only overlays of
// the source root's (see mountSystemTree for why overlays and not binds).
// A runtime makes each once, as a detached mount (fsopen, fsmount), and
// every sandbox init it starts mounts a clone of it (open_tree(2)), as it
// does the workspace's directories.
//
// An overlay made per sandbox started with cold caches: each of its
// dentries and inodes was built on the sandbox's first lookup, and freed
// with the overlay's superblock at the sandbox's end. A toolchain reads
// hundreds of files of /usr (a Go build hashes its standard library's
// sources): a Go hello world cost 13–15% more than on the host in a fresh
// sandbox, 8–10% from a pool, and 5–7% / 0–1% where the trees were warm
// (`coderun bench languages`). Shared by one runtime's sandboxes, the
// overlay's inodes are theirs together, as the zygote's template already
// has them: a lock on a /usr file is seen by the runtime's other sandboxes
// (never by the host, whose inodes these are not).

// systemTree is one shared tree: where it goes in a sandbox's root
// (relative: "usr", "etc/ssl") and the detached overlay.
type systemTree struct {
	rel string
	mnt *os.File
}

// emptyLayer names the empty directory, in the runtime's state directory,
// that each overlay has as its second layer (one without an upper layer
// needs two).
const emptyLayer = "empty"

// makeSystemTrees makes the system trees of sourceRoot for the runtime
// whose state directory is stateDir. A kernel without overlayfs gets
// none (nil, nil): each init then binds the trees itself (mountSystemTree).
func makeSystemTrees(sourceRoot, stateDir string) ([]systemTree, error) {
	var rels []string
	if fi, err := os.Stat(filepath.Join(sourceRoot, "usr")); err == nil && fi.IsDir() {
		rels = append(rels, "usr")
	}
	// As init's mirrorEntry decides: a link stays a link.
	for _, name := range topLevel {
		if fi, err := os.Lstat(filepath.Join(sourceRoot, name)); err == nil && fi.IsDir() {
			rels = append(rels, name)
		}
	}
	// As init's buildEtc decides: a link to a directory is the directory.
	for _, name := range etcDirs {
		if fi, err := os.Stat(filepath.Join(sourceRoot, "etc", name)); err == nil && fi.IsDir() {
			rels = append(rels, filepath.Join("etc", name))
		}
	}
	empty := filepath.Join(stateDir, emptyLayer)
	if err := os.Mkdir(empty, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("system trees: %w", err)
	}
	var trees []systemTree
	err := inDirectory(stateDir, func() error {
		for _, rel := range rels {
			mnt, err := overlayOf(filepath.Join(sourceRoot, rel))
			if err != nil {
				return err
			}
			trees = append(trees, systemTree{rel: rel, mnt: mnt})
		}
		return nil
	})
	if err != nil {
		closeTrees(trees)
		if errors.Is(err, unix.ENODEV) {
			return nil, nil
		}
		return nil, fmt.Errorf("system trees: %w", err)
	}
	return trees, nil
}

// overlayOf makes a detached read-only overlay of src over the empty
// layer, which is named relative to the working directory: the options
// show in every sandbox's mount table, and the state directory is a host
// path no sandbox may learn.
func overlayOf(src string) (*os.File, error) {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", src, err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{{"source", "overlay"}, {"lowerdir", overlayEscape(src) + ":" + emptyLayer}} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return nil, fmt.Errorf("overlay %s: %s: %w", src, o[0], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", src, err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", src, err)
	}
	return os.NewFile(uintptr(fd), src), nil
}

// inDirectory runs fn with dir as its working directory, on a thread of its
// own whose working directory is its own (unshare(CLONE_FS)): the
// process's, which every goroutine shares, does not change. The thread
// ends with fn (it is never unlocked, so the Go runtime retires it).
func inDirectory(dir string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			done <- fmt.Errorf("unshare the working directory: %w", err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// cloneTrees returns a clone of each tree, in order, for one sandbox to
// mount; the caller closes them.
func cloneTrees(trees []systemTree) ([]*os.File, error) {
	out := make([]*os.File, 0, len(trees))
	for _, t := range trees {
		fd, err := unix.OpenTree(int(t.mnt.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		if err != nil {
			for _, f := range out {
				f.Close()
			}
			return nil, fmt.Errorf("system tree %s: clone: %w", t.rel, err)
		}
		out = append(out, os.NewFile(uintptr(fd), t.rel))
	}
	return out, nil
}

// treePaths lists where each tree goes, in order (setupConfig.SystemTrees).
func treePaths(trees []systemTree) []string {
	out := make([]string, len(trees))
	for i, t := range trees {
		out[i] = t.rel
	}
	return out
}

func closeTrees(trees []systemTree) {
	for _, t := range trees {
		t.mnt.Close()
	}
}
