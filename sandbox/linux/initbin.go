package linux

import (
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
	if len(sum) < 16 || !embeddedInitUsable() {
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
