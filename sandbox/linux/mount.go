package linux

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's file system, built by init inside its own mount namespace:
//
//	/            tmpfs, read-only once built
//	/usr         the system's /usr (or the alternative root's), read-only,
//	             through an overlay the runtime made for all its sandboxes
//	             (systree.go; mountSystemTree where it made none)
//	/bin, /lib…  the same links or read-only binds as on the source root
//	/etc         a few copied files (loader cache, time zone, fonts…) and
//	             generated passwd, group, hosts; never shadow or the rest
//	/proc        a fresh procfs of the sandbox's PID namespace, with the
//	             entries that describe the host masked
//	/dev         null, zero, full, random, urandom, tty-less; /dev/shm
//	/work        the workspace (read-write, the working directory)
//	/home/user   a link to /work: the home and working directory of E2B's
//	             sandboxes, where code written for them looks for its files
//	/tmp         scratch space (read-write)
//
// /work, /tmp and /dev/shm are directories of one size-capped tmpfs that the
// host makes per sandbox (a detached mount, see workspace.go) and hands
// init as detached clones, so the run's writable storage has one limit and
// the host can read the results without entering the sandbox. Nothing else
// of the host is visible: no /home, /root, /sys, host /tmp, host /proc, or
// the project's files.

// topLevel are the root entries taken from the source root: merged-/usr
// systems have them as links into /usr, others as directories.
var topLevel = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcDirs are read-only overlays of the host's (see mountSystemTree);
// etcFiles are copied. Missing entries are skipped.
var (
	etcDirs = []string{"alternatives", "fonts", "ssl", "ca-certificates", "ld.so.conf.d", "python3", "python3.11", "python3.12", "python3.13", "nodejs",
		"java-17-openjdk", "java-21-openjdk", "R", "php"}
	etcFiles = []string{"ld.so.cache", "ld.so.conf", "localtime", "timezone", "mime.types", "protocols", "services",
		"os-release", "debian_version", "matplotlibrc", "inputrc", "gai.conf", "bash.bashrc", "environment"}
)

// procMasked hide host details (cmdline names the host's boot image and
// root disk); procReadOnly may be read but never written.
var (
	procMasked   = []string{"cmdline", "kcore", "keys", "key-users", "timer_list", "sched_debug", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger"}
	procReadOnly = []string{"sys", "irq", "bus", "fs", "acpi", "scsi"}
)

// devNodes are bound from the host's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

func mountErr(what string, err error) error { return fmt.Errorf("mount: %s: %w", what, err) }

// buildRoot assembles the sandbox root at cfg.RootMount and pivots into it.
func buildRoot(cfg *setupConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return mountErr("make / private", err)
	}
	root := cfg.RootMount
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=8m,mode=0755"); err != nil {
		return mountErr("root tmpfs", err)
	}
	src := cfg.SourceRoot
	for _, d := range []string{"usr", "etc", "proc", "dev", "work", "tmp", "home"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return mountErr("mkdir "+d, err)
		}
	}
	if err := os.Symlink("/work", filepath.Join(root, "home", "user")); err != nil {
		return mountErr("link /home/user to /work", err)
	}
	trees := cfg.systemTrees()
	if err := trees.mount("usr", filepath.Join(src, "usr"), filepath.Join(root, "usr")); err != nil {
		return err
	}
	for _, name := range topLevel {
		if err := mirrorEntry(trees, name, filepath.Join(src, name), filepath.Join(root, name)); err != nil {
			return err
		}
	}
	if err := buildEtc(cfg, trees, filepath.Join(root, "etc")); err != nil {
		return err
	}
	if err := buildDev(cfg, filepath.Join(root, "dev")); err != nil {
		return err
	}
	// A template leaves /proc and the workspace to each sandbox made from
	// it (zygote.py mounts them as buildProc and these binds do).
	if !cfg.Template {
		if err := buildProc(filepath.Join(root, "proc"), filepath.Join(root, "dev", "null")); err != nil {
			return err
		}
		if err := mountWorkspace(fdWork, filepath.Join(root, "work")); err != nil {
			return err
		}
		if err := mountWorkspace(fdTmp, filepath.Join(root, "tmp")); err != nil {
			return err
		}
	}
	if err := pivotRoot(root); err != nil {
		return err
	}
	if err := setAttr("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
		return mountErr("make / read-only", err)
	}
	return os.Chdir("/work")
}

// mountWorkspace mounts a directory of the workspace, which the host passed
// as a detached mount on descriptor fd, on dst (nosuid, nodev), and closes
// fd. The workspace is in no mount table of the host: it lives in this
// sandbox's mount namespace, and dies with it.
func mountWorkspace(fd int, dst string) error {
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("workspace on "+dst, err)
	}
	if err := setAttr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true); err != nil {
		return mountErr("restrict workspace on "+dst, err)
	}
	return nil
}

// bind mounts src on dst (recursively) and applies attrs to the whole tree.
func bind(src, dst string, attrs uint64) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return mountErr("bind "+src, err)
	}
	if attrs != 0 {
		if err := setAttr(dst, attrs, true); err != nil {
			return mountErr("restrict "+src, err)
		}
	}
	return nil
}

func bindReadOnly(src, dst string) error {
	return bind(src, dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// setAttr adds mount attributes with mount_setattr(2), which, unlike a
// remount, needs no knowledge of the flags the kernel locked on the source.
func setAttr(path string, attrs uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: attrs})
}

// mirrorEntry reproduces the top-level entry name of the source root: a
// link as the same link, a directory as its system tree.
func mirrorEntry(trees treeMounts, name, src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return mountErr(src, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return mountErr(src, err)
		}
		return os.Symlink(target, dst)
	}
	if !fi.IsDir() {
		return nil
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return mountErr(dst, err)
	}
	return trees.mount(name, src, dst)
}

// treeMounts are the system trees the host made (systree.go), by where
// they go in the root, each a descriptor from fdSystemTrees on; nil when
// it made none.
type treeMounts map[string]int

func (cfg *setupConfig) systemTrees() treeMounts {
	if len(cfg.SystemTrees) == 0 {
		return nil
	}
	m := make(treeMounts, len(cfg.SystemTrees))
	for i, rel := range cfg.SystemTrees {
		m[rel] = fdSystemTrees + i
	}
	return m
}

// mount puts the system tree rel, whose source is src, on dst: the
// host's shared tree when it made them, else an overlay of this
// sandbox's own. A tree the host found absent stays absent (dst empty).
func (trees treeMounts) mount(rel, src, dst string) error {
	if trees == nil {
		return mountSystemTree(src, dst)
	}
	fd, ok := trees[rel]
	if !ok {
		return nil
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr("system tree "+rel, err)
	}
	return nil
}

// mountSystemTree mounts the system tree src (/usr, or a top-level
// directory of a root without merged /usr) read-only on dst, as an overlay
// whose one layer with content is src (the other is dst's own empty
// directory: an overlay without an upper layer needs two). A bind would
// share src's inodes with the host, and with them what attaches to an
// inode: a flock the program takes on a /usr file would block the host's
// lock on it, and the host's locks would show in the sandbox. The
// overlay's inodes are its own (file contents and the page cache are
// still src's). The runtime makes one per tree for all its sandboxes
// (systree.go), so their locks are shared between those sandboxes, but
// never with the host; inotify, the other thing that attaches to inodes,
// is refused by the seccomp filter. Init makes its own only where the
// runtime made none. A kernel without overlayfs gets the read-only bind
// ("coderun doctor" says so).
func mountSystemTree(src, dst string) error {
	// The mount table shows the layers as the options name them, and dst
	// lies in the runtime's state directory, a host path no sandbox may
	// learn: dst is named relative to its parent.
	prev, err := os.Getwd()
	if err != nil {
		return mountErr("overlay "+src, err)
	}
	if err := os.Chdir(filepath.Dir(dst)); err != nil {
		return mountErr("overlay "+src, err)
	}
	defer os.Chdir(prev)
	opts := "lowerdir=" + overlayEscape(src) + ":" + overlayEscape(filepath.Base(dst))
	err = unix.Mount("overlay", filepath.Base(dst), "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts)
	if errors.Is(err, unix.ENODEV) {
		return bindReadOnly(src, dst)
	}
	if err != nil {
		return mountErr("overlay "+src, err)
	}
	return nil
}

// overlayEscape escapes the characters that separate overlayfs options
// and layers in a path.
func overlayEscape(path string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`, ",", `\,`).Replace(path)
}

func buildEtc(cfg *setupConfig, trees treeMounts, etc string) error {
	srcEtc := filepath.Join(cfg.SourceRoot, "etc")
	for _, name := range etcFiles {
		src := filepath.Join(srcEtc, name)
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		dst := filepath.Join(etc, name)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, dst)
			}
			if err != nil {
				return mountErr("etc/"+name, err)
			}
		case fi.Mode().IsRegular():
			if err := copyFile(src, dst, 0o644); err != nil {
				return mountErr("etc/"+name, err)
			}
		}
	}
	for _, name := range etcDirs {
		src := filepath.Join(srcEtc, name)
		fi, err := os.Stat(src)
		if err != nil || !fi.IsDir() {
			continue
		}
		dst := filepath.Join(etc, name)
		if err := os.Mkdir(dst, 0o755); err != nil {
			return mountErr("etc/"+name, err)
		}
		// As /usr: inodes of the sandboxes' own, so that their locks on
		// these host files neither block nor see the host's.
		if err := trees.mount(filepath.Join("etc", name), src, dst); err != nil {
			return err
		}
	}
	for name, content := range cfg.EtcFiles {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return mountErr("etc/"+name, err)
		}
	}
	return nil
}

// copyFile copies the regular file src to a new file dst with mode perm
// (less the umask), in the kernel (sendfile(2)): read into this process
// and written out, the copies of /etc were a third of every cold sandbox's
// root (init's buildEtc, 1.0 ms of CPU per run; mime.types alone is 73 KB,
// all of it heap this process then faulted in).
func copyFile(src, dst string, perm uint32) error {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return &os.PathError{Op: "stat", Path: src, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file", src)
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, perm)
	if err != nil {
		return &os.PathError{Op: "open", Path: dst, Err: err}
	}
	defer unix.Close(out)
	for left := st.Size; left > 0; {
		n, err := unix.Sendfile(out, in, nil, int(min(left, 1<<30)))
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "copy", Path: dst, Err: err}
		}
		if n == 0 {
			break // the file shrank meanwhile
		}
		left -= int64(n)
	}
	return nil
}

func buildDev(cfg *setupConfig, dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return mountErr("dev tmpfs", err)
	}
	for _, n := range devNodes {
		dst := filepath.Join(dev, n)
		if err := os.WriteFile(dst, nil, 0o666); err != nil {
			return mountErr("dev/"+n, err)
		}
		if err := bind("/dev/"+n, dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return mountErr("dev/"+name, err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o755); err != nil {
		return mountErr("dev/shm", err)
	}
	if !cfg.Template {
		if err := mountWorkspace(fdShm, shm); err != nil {
			return err
		}
	}
	if err := setAttr(dev, unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return mountErr("make /dev read-only", err)
	}
	return nil
}

// buildProc mounts a fresh procfs of the sandbox's PID namespace on proc,
// masks the entries that describe the host (procMasked, and the boot id:
// see stageBootID) and makes the system's tunables read-only.
func buildProc(proc, devNull string) error {
	bootID, err := stageBootID(proc)
	if err != nil {
		return err
	}
	defer unix.Close(bootID)
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return mountErr("proc", err)
	}
	for _, name := range procMasked {
		p := filepath.Join(proc, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := unix.Mount(devNull, p, "", unix.MS_BIND, ""); err != nil {
			return mountErr("mask /proc/"+name, err)
		}
	}
	for _, name := range procReadOnly {
		p := filepath.Join(proc, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := bindReadOnly(p, p); err != nil {
			return err
		}
	}
	return coverBootID(proc, bootID)
}

// procBootID is the kernel's boot id, under /proc: a random id made at
// the host's boot, the same for every process of the machine until it
// reboots, so it names the host (and links runs to one another). Programs
// read it (systemd's libraries, some telemetry and caching code), so the
// sandbox gets one of its own rather than none.
const procBootID = "sys/kernel/random/boot_id"

// stageBootID makes the sandbox's own boot id, before procfs is mounted
// on proc: a file holding a fresh random id, on a tiny read-only tmpfs
// mounted on proc itself, which procfs then covers (no path leads to it).
// It returns an O_PATH descriptor of the file, for coverBootID to bind
// (a bind's source must be a mount of this namespace, which it is).
func stageBootID(proc string) (int, error) {
	if err := unix.Mount("tmpfs", proc, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=4,mode=0755"); err != nil {
		return -1, mountErr("boot id tmpfs", err)
	}
	id, err := newBootID()
	if err != nil {
		return -1, mountErr("boot id", err)
	}
	file := filepath.Join(proc, "boot_id")
	if err := os.WriteFile(file, []byte(id+"\n"), 0o444); err != nil {
		return -1, mountErr("boot id", err)
	}
	if err := setAttr(proc, unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return -1, mountErr("make boot id tmpfs read-only", err)
	}
	fd, err := unix.Open(file, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, mountErr("boot id", err)
	}
	return fd, nil
}

// coverBootID binds the staged boot id (an O_PATH descriptor) over the
// kernel's, read-only.
func coverBootID(proc string, staged int) error {
	target := filepath.Join(proc, procBootID)
	if _, err := os.Stat(target); err != nil {
		return nil // a kernel without one
	}
	src := filepath.Join(proc, "self", "fd", strconv.Itoa(staged))
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return mountErr("mask /proc/"+procBootID, err)
	}
	if err := setAttr(target, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
		return mountErr("make /proc/"+procBootID+" read-only", err)
	}
	return nil
}

// newBootID is a random (version 4) UUID in the kernel's boot_id format.
func newBootID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}

// pivotRoot makes root the new "/" and detaches the old one entirely, so no
// path leads back to the host's file system.
func pivotRoot(root string) error {
	if err := os.Chdir(root); err != nil {
		return mountErr("chdir new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return mountErr("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return mountErr("detach old root", err)
	}
	return os.Chdir("/")
}
