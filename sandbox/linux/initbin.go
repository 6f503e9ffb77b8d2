package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox/linux/internal/initsrc"
	"golang.org/x/sys/unix"
)

//go:generate go run ./internal/geninit

// The program the runtime starts as a sandbox's init. Re-executing the
// binary that embeds the runtime works anywhere, but that binary may be
// large (coderun's CLI is 75 MB, with model SDKs, telemetry and a
// database): each init would page it in and initialise every package it
// links before init.go's code runs, which costs a cold sandbox several
// milliseconds of CPU and, where page faults go through a hypervisor,
// more. So the runtime carries a small program built from this package
// alone (cmd/coderun-sandbox-init: the same init code, the same order of
// set-up, no other code), generated into initbin/ and embedded for the
// architectures initbin_*.go name, and writes it once into the state
// directory, root's and not writable by anyone else, as
// init-<first 16 hex digits of its SHA-256>. Elsewhere the runtime
// re-executes its own binary.
//
// `go generate ./sandbox/linux` rebuilds the program after a change to
// this package's sources. Until it has been, the runtime does not use it:
// the digest of the sources the program was built from differs from that
// of the sources embedded beside it (ownSources), and the runtime
// re-executes its own binary, which runs the init code as it is now. A
// stale program costs speed, never isolation; TestEmbeddedInitIsCurrent
// fails until it is rebuilt.

// embeddedInitUsable reports whether the embedded init program was built
// from this package's sources as compiled into this binary.
var embeddedInitUsable = sync.OnceValue(func() bool {
	return len(embeddedInit) > 0 && sourcesMatch(ownSources, embeddedInitSources)
})

// sourcesMatch reports whether the sources in fsys have the digest recorded.
func sourcesMatch(fsys fs.FS, recorded string) bool {
	got, err := initsrc.Digest(fsys)
	return err == nil && got == strings.TrimSpace(recorded)
}

// openInitExecutable opens the program to start as a sandbox's init: the
// embedded one, written into stateDir if not already there, or this
// process's own executable.
func openInitExecutable(stateDir string) (*os.File, error) {
	sum := strings.TrimSpace(embeddedInitSum)
	if len(sum) < 16 || !initUsable(stateDir, sum) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return os.Open(exe)
	}
	path := filepath.Join(stateDir, initFilePrefix+sum[:16])
	if f, err := openInitFile(path, int64(len(embeddedInit))); err == nil {
		return f, nil
	}
	if err := writeInitFile(stateDir, path); err != nil {
		return nil, err
	}
	return openInitFile(path, int64(len(embeddedInit)))
}

// initFilePrefix starts the name of the init program in the state directory.
const initFilePrefix = "init-"

// verifiedInfix follows the init program's name in that of a file in
// the state directory that says that an executable's sources match the
// program's (initUsable).
const verifiedInfix = ".verified-"

// checkSources is embeddedInitUsable (a variable for tests).
var checkSources = embeddedInitUsable

// initUsable is embeddedInitUsable, remembered in stateDir for this
// process's executable file. The check digests the package's sources
// embedded in the binary (some 180 KB, copied and hashed): 0.36 ms of CPU
// and some 30 page faults at every start of a runtime, on the path of
// every one-shot `coderun exec` (perf, 40 runs on a PVM guest). Its
// answer is the same for every process of one executable, so a yes is
// written once, as an empty file beside the init program named after the
// executable's identity (device, inode, size, modification and change
// times, which a rebuilt or replaced binary does not keep), and
// later processes of the same executable find it there. Only root can
// write in the state directory; a file there that is not root's, or that
// others may write, is not believed.
func initUsable(stateDir, sum string) bool {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return checkSources()
	}
	id := sha256.Sum256(fmt.Appendf(nil, "%d %d %d %d.%d %d.%d %s", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, sum))
	marker := filepath.Join(stateDir, initFilePrefix+sum[:16]+verifiedInfix+hex.EncodeToString(id[:8]))
	var ms unix.Stat_t
	if err := unix.Lstat(marker, &ms); err == nil && ms.Mode&unix.S_IFMT == unix.S_IFREG && ms.Uid == 0 && ms.Mode&0o022 == 0 {
		return true
	}
	if !checkSources() {
		return false
	}
	if f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o444); err == nil {
		f.Close()
		// Those of executables gone or rebuilt go after a day.
		old, _ := filepath.Glob(filepath.Join(stateDir, initFilePrefix+"*"+verifiedInfix+"*"))
		for _, o := range old {
			if fi, err := os.Lstat(o); err == nil && o != marker && time.Since(fi.ModTime()) > 24*time.Hour {
				_ = os.Remove(o)
			}
		}
	}
	return true
}

// openInitFile opens the init program at path when it is what the runtime
// wrote: a regular file of size bytes, root's, that no one else may write.
func openInitFile(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o022 != 0 || st.Size != size {
		f.Close()
		return nil, fmt.Errorf("sandbox init %s: not the runtime's (mode %o, owner %d, %d bytes)", path, st.Mode, st.Uid, st.Size)
	}
	return f, nil
}

// writeInitFile writes the embedded init program to path, through a
// temporary file renamed into place (another runtime may be doing the
// same), and removes the programs of other versions written more than a
// day ago: a runtime still using one holds it open, and starts it through
// that descriptor (a recent one may be about to be opened by a runtime
// just starting).
func writeInitFile(stateDir, path string) error {
	tmp, err := os.CreateTemp(stateDir, ".init-*")
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(embeddedInit)
	err = errors.Join(err, tmp.Chmod(0o555), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(stateDir, initFilePrefix+"*"))
	for _, o := range old {
		if fi, err := os.Lstat(o); err == nil && o != path && time.Since(fi.ModTime()) > 24*time.Hour {
			_ = os.Remove(o)
		}
	}
	return nil
}
