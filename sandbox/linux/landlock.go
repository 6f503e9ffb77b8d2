package linux

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Write access by path (Landlock). The mount namespace makes the system
// read-only, but not what the kernel lets a process write about itself:
// /proc/self/oom_score_adj first (the host sets it to 1000 so that sandboxed
// code dies first when the machine runs out of memory, and a process may
// lower its own score back to the floor, 0 here, since only a privileged
// writer raises that floor), then comm, coredump_filter, clear_refs and
// the rest of /proc/<pid>. A Landlock domain, laid on the program before it
// runs (by init on the thread it forks from, by the zygote's program fork
// on itself), denies every kind of write by path except beneath /work, /tmp
// and /dev/shm and to the character devices of /dev. Reads, execution and
// descriptors the program already holds are untouched (a pipe reopened
// through /proc/self/fd is no path on a file system, and Landlock leaves it
// alone). The domain is inherited across fork and exec and nothing can lift
// it.
//
// A kernel without Landlock (before 5.13, or booted without it among its
// LSMs) runs sandboxes without this layer rather than refusing them: what it
// adds is the host's OOM preference and the program's own /proc entries,
// not a boundary the other layers rely on. "coderun doctor" reports it
// (Probe's LayerLandlock).

// landlockRules is the Landlock domain for this kernel: the rights it
// handles, and which of them are allowed on which paths. Zero Handled
// means the kernel has no Landlock.
type landlockRules struct {
	Handled    uint64   `json:"handled"`
	Dirs       []string `json:"dirs"`        // writable trees
	DirAccess  uint64   `json:"dir_access"`  // every handled right
	Files      []string `json:"files"`       // writable device files
	FileAccess uint64   `json:"file_access"` // the handled rights a file can have
}

// landlockWritableDirs are the trees the program may write beneath.
var landlockWritableDirs = []string{"/work", "/tmp", "/dev/shm"}

// landlockABI returns the kernel's Landlock ABI version, 0 when it has none.
func landlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

// landlockWriteRights are the rights that write, create, remove, link or
// truncate by path in ABI version abi (each version adds some).
func landlockWriteRights(abi int) (handled, file uint64) {
	if abi < 1 {
		return 0, 0
	}
	file = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	handled = file | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		file |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return handled, file
}

// sandboxLandlockRules is the domain every sandbox's program runs in.
func sandboxLandlockRules() landlockRules {
	handled, file := landlockWriteRights(landlockABI())
	if handled == 0 {
		return landlockRules{}
	}
	var files []string
	for _, n := range devNodes {
		files = append(files, filepath.Join("/dev", n))
	}
	return landlockRules{Handled: handled, Dirs: landlockWritableDirs, DirAccess: handled, Files: files, FileAccess: file}
}

// restrictWrites lays the sandbox's Landlock domain on the calling thread
// (locked, inside the sandbox's root), which its children inherit. The
// thread must have no_new_privs or CAP_SYS_ADMIN in its user namespace.
func restrictWrites() error {
	return sandboxLandlockRules().apply()
}

// landlockPathBeneath is struct landlock_path_beneath_attr (packed: 12 bytes).
type landlockPathBeneath struct {
	allowed  uint64
	parentFD int32
}

// apply makes the ruleset and restricts the calling thread with it.
func (r landlockRules) apply() error {
	if r.Handled == 0 {
		return nil
	}
	handled := r.Handled // struct landlock_ruleset_attr, as of ABI 1
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&handled)), unsafe.Sizeof(handled), 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, d := range r.Dirs {
		if err := landlockAllow(ruleset, d, r.DirAccess); err != nil {
			return err
		}
	}
	for _, f := range r.Files {
		if err := landlockAllow(ruleset, f, r.FileAccess); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict: %w", errno)
	}
	return nil
}

// landlockAllow adds the rule "access beneath path" to ruleset; a path that
// does not exist is skipped.
func landlockAllow(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock: %s: %w", path, err)
	}
	defer unix.Close(fd)
	attr := landlockPathBeneath{allowed: access, parentFD: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: allow writes beneath %s: %w", path, errno)
	}
	return nil
}
