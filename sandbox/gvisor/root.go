package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coderun/coderun/sandbox/linux"
)

// The sandbox's root file system, the linux runtime's (sandbox/linux,
// mount.go) served by gVisor's gofer:
//
//	/            the runtime's template directory, read-only: the mount
//	             points, the links and the files of /etc below
//	/usr         the host's /usr, bound read-only
//	/bin, /lib…  the same links as on the host, or read-only binds
//	/etc         a few copied files (loader cache, time zone…), generated
//	             passwd, group, hosts…; a few of the host's trees (ssl,
//	             fonts, alternatives, python3…) bound read-only; never
//	             shadow or the rest
//	/proc, /dev  the Sentry's own (nothing of the host's)
//	/work, /tmp, /dev/shm  the workspace (workspace.go)
//
// Nothing else of the host is visible: no /home, /root, /sys, host /tmp,
// or the project's files.

// The root's entries taken from the host, and the /etc trees and files
// the sandbox sees, are the linux runtime's (linux.TopLevelEntries,
// EtcDirs, EtcFiles).

// hostname is the sandbox's host name.
const hostname = "sandbox"

// makeRoot builds the template root at dir for programs running as uid,
// and returns the host paths to bind read-only into it, each at the same
// path inside.
func makeRoot(dir string, uid int) (binds []string, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	for _, d := range []string{"usr", "etc", "proc", "dev", "work", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("root: %w", err)
		}
	}
	binds = append(binds, "/usr")
	for _, name := range linux.TopLevelEntries() {
		src := "/" + name
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("root: %w", err)
		}
		dst := filepath.Join(dir, name)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return nil, fmt.Errorf("root: %w", err)
			}
			if err := os.Symlink(target, dst); err != nil {
				return nil, fmt.Errorf("root: %w", err)
			}
		case fi.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return nil, fmt.Errorf("root: %w", err)
			}
			binds = append(binds, src)
		}
	}
	etc := filepath.Join(dir, "etc")
	for _, name := range linux.EtcFiles() {
		src := filepath.Join("/etc", name)
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
				return nil, fmt.Errorf("root: etc/%s: %w", name, err)
			}
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(dst, data, 0o644)
			}
			if err != nil {
				return nil, fmt.Errorf("root: etc/%s: %w", name, err)
			}
		}
	}
	// /etc's trees are copied, not bound: a bind is one more mount the
	// gofer serves and the Sentry makes at every sandbox's start (most
	// of a run's set-up), and these hold some 900 small files.
	for _, name := range linux.EtcDirs() {
		src := filepath.Join("/etc", name)
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		if err := copyTree(src, filepath.Join(etc, name)); err != nil {
			return nil, fmt.Errorf("root: etc/%s: %w", name, err)
		}
	}
	for name, content := range generatedEtc(uid) {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("root: etc/%s: %w", name, err)
		}
	}
	return binds, nil
}

// copyTree copies the directory tree src to dst: directories, links as
// they are, and the regular files everyone may read (those the sandbox's
// user could read through a bind; private keys and the like stay out).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if fi.Mode().Perm()&0o005 != 0o005 {
				return filepath.SkipDir
			}
			return os.Mkdir(to, fi.Mode().Perm())
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular() && fi.Mode().Perm()&0o004 != 0:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, fi.Mode().Perm())
		}
		return nil
	})
}

// hidden are host paths below the read-only binds the sandbox must not
// see: directories covered by an empty tmpfs, files by file (an empty
// file only root may open).
type hidden struct {
	dirs, files []string
	file        string
}

// hide returns what to cover so that the sandbox does not see runsc at
// bin (beneath /usr, say): the pinned build's whole directory tree, else
// the binary itself. file is made for covering files.
func hide(bin, file string, binds []string) (hidden, error) {
	h := hidden{file: file}
	if err := os.WriteFile(file, nil, 0o000); err != nil {
		return h, fmt.Errorf("root: %w", err)
	}
	if parent := filepath.Dir(RunscCache); strings.HasPrefix(bin, parent+"/") {
		h.dirs = append(h.dirs, parent)
		return h, nil
	}
	for _, b := range binds {
		if strings.HasPrefix(bin, b+"/") {
			h.files = append(h.files, bin)
		}
	}
	return h, nil
}

// generatedEtc returns the generated /etc entries naming the sandbox's
// users and host.
func generatedEtc(uid int) map[string]string {
	id := strconv.Itoa(uid)
	return map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"sandbox:x:" + id + ":" + id + ":sandbox:/tmp:/bin/bash\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nsandbox:x:" + id + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      hostname + "\n",
		"resolv.conf":   "# no network in the sandbox\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
	}
}

// baseEnv is the clean environment every program starts from, as the
// linux runtime's.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
	"HOME=/tmp",
	"TMPDIR=/tmp",
	"USER=sandbox",
	"LOGNAME=sandbox",
	"SHELL=/bin/bash",
	"HOSTNAME=" + hostname,
	"LANG=C.UTF-8",
	"MPLBACKEND=Agg",
	"PYTHONDONTWRITEBYTECODE=1",
}
