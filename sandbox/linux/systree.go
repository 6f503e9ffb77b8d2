package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The system trees (/usr, the top-level directories of a root without
// merged /usr, the /etc directories of etcDirs) are read-only overlays of
// the source root's (see mountSystemTree for why overlays and not binds).
// A runtime makes each once (for its second sandbox: see systemTrees), as
// a detached mount (fsopen, fsmount), and every sandbox init it starts
// from then on mounts a clone of it (open_tree(2)), as it does the
// workspace's directories.
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

// treeMaxAge is how long a runtime hands out clones of the same trees.
// Overlayfs leaves changes to a layer under a mounted overlay undefined:
// a package upgraded on the host while a long-lived runtime (a server)
// runs would show its sandboxes old files the overlay cached beside new
// ones it had not. Trees made again this often bound that to the
// sandboxes started within the minute of the change (those already
// running keep what they mounted, as they did with an overlay each);
// remaking them costs about a cold sandbox's lookups once a minute.
const treeMaxAge = time.Minute

// systemTrees are a runtime's trees, made for its second sandbox and
// made again when older than treeMaxAge. Its first sandbox's init makes
// overlays of its own, as it would with no trees: a one-shot runtime
// (coderun exec) starts one sandbox, which shares with no other, and
// making trees on the host (about 1 ms) and letting go of them (0.7 ms,
// each unmount waits for RCU) would be its cost alone. A kernel without
// overlayfs gets none: each init then binds the trees itself
// (mountSystemTree).
type systemTrees struct {
	sourceRoot, stateDir string

	mu    sync.Mutex
	asked bool // a sandbox was handed none, being the first
	made  time.Time
	trees []systemTree
	none  bool // no overlayfs: never made
}

// newSystemTrees prepares the system trees of sourceRoot for the runtime
// whose state directory is stateDir.
func newSystemTrees(sourceRoot, stateDir string) (*systemTrees, error) {
	empty := filepath.Join(stateDir, emptyLayer)
	if err := os.Mkdir(empty, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("system trees: %w", err)
	}
	return &systemTrees{sourceRoot: sourceRoot, stateDir: stateDir}, nil
}

// clones returns a clone of each tree, for one sandbox to mount (the
// caller closes them), and where each goes (setupConfig.SystemTrees); none
// for the runtime's first sandbox and when the runtime has no trees.
func (st *systemTrees) clones() ([]*os.File, []string, error) {
	if st == nil {
		return nil, nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.none {
		return nil, nil, nil
	}
	if !st.asked {
		st.asked = true
		return nil, nil, nil
	}
	if st.trees == nil || time.Since(st.made) > treeMaxAge {
		trees, err := makeSystemTrees(st.sourceRoot, st.stateDir)
		if errors.Is(err, unix.ENODEV) {
			st.none = true
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		// The old trees' clones, mounted in running sandboxes, stay.
		closeTrees(st.trees)
		st.trees, st.made = trees, time.Now()
	}
	out := make([]*os.File, 0, len(st.trees))
	paths := make([]string, 0, len(st.trees))
	for _, t := range st.trees {
		f, err := cloneMount(t.mnt, "")
		if err != nil {
			closeFiles(out)
			return nil, nil, fmt.Errorf("system tree %s: %w", t.rel, err)
		}
		out = append(out, f)
		paths = append(paths, t.rel)
	}
	return out, paths, nil
}

// close lets go of the trees (the sandboxes' clones keep theirs).
func (st *systemTrees) close() {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	closeTrees(st.trees)
	st.trees = nil
}

// emptyLayer names the empty directory, in the runtime's state directory,
// that each overlay has as its second layer (one without an upper layer
// needs two).
const emptyLayer = "empty"

// makeSystemTrees makes an overlay of each system tree sourceRoot has.
// Without overlayfs the error is unix.ENODEV.
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
	// The empty layer by a descriptor's path: the options show in every
	// sandbox's mount table, and the state directory is a host path no
	// sandbox may learn (a relative name would need a working directory
	// of its own: a thread unshared and ended, whose end sends the
	// parent-death signal to every child it had started).
	empty, err := unix.Open(filepath.Join(stateDir, emptyLayer), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("system trees: %w", err)
	}
	defer unix.Close(empty)
	emptyPath := "/proc/self/fd/" + strconv.Itoa(empty)
	var trees []systemTree
	for _, rel := range rels {
		mnt, err := overlayOf(filepath.Join(sourceRoot, rel), emptyPath)
		if err != nil {
			closeTrees(trees)
			return nil, fmt.Errorf("system trees: %w", err)
		}
		trees = append(trees, systemTree{rel: rel, mnt: mnt})
	}
	return trees, nil
}

// overlayOf makes a detached read-only overlay of src over the empty
// layer at empty.
func overlayOf(src, empty string) (*os.File, error) {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", src, err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{{"source", "overlay"}, {"lowerdir", overlayEscape(src) + ":" + empty}} {
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

func closeTrees(trees []systemTree) {
	for _, t := range trees {
		t.mnt.Close()
	}
}
