package docker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// The program every process in a container starts under
// (cmd/coderun-docker-init: Landlock, then the command), built static for
// the architectures initbin_*.go embed it for. `go generate ./sandbox/docker`
// rebuilds it; TestEmbeddedInitIsCurrent fails until it has been.
//
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w -buildid=" -o initbin/coderun-docker-init.linux-amd64 ./cmd/coderun-docker-init

// initPath is where containers see the program.
const initPath = "/.coderun-init"

// binDir is a small tmpfs of the runtime's own, holding the init program
// that every container bind-mounts read-only (a tmpfs of its own, so that
// the containers' mount tables name no host path).
type binDir struct {
	dir string
}

// init returns the host path of the init program.
func (d binDir) init() string { return filepath.Join(d.dir, "init") }

// hidden returns the host path of an empty file no one but root may read
// or write, bound over the devices a container must not have (gvisor.go).
func (d binDir) hidden() string { return filepath.Join(d.dir, "hidden") }

// newBinDir mounts the tmpfs under stateDir and writes the init program
// into it; with no program embedded for this architecture it makes none.
func newBinDir(stateDir string) (binDir, error) {
	if len(initProgram) == 0 {
		return binDir{}, fmt.Errorf("no init program is built for %s: the docker runtime runs on amd64 only", runtime.GOARCH)
	}
	// Named after this process (leftovers.go reclaims those of processes
	// that are gone), and a random part: one process may open several
	// runtimes.
	start, err := startTime(os.Getpid())
	if err != nil {
		return binDir{}, err
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return binDir{}, err
	}
	dir := filepath.Join(stateDir, binDirPrefix+strconv.Itoa(os.Getpid())+"."+start+"."+hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return binDir{}, fmt.Errorf("state directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return binDir{}, fmt.Errorf("the init program's directory: %w", err)
	}
	size := fmt.Sprintf("size=%d", len(initProgram)+(1<<20))
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,"+size); err != nil {
		os.Remove(dir)
		return binDir{}, fmt.Errorf("mounting the init program's tmpfs: %w", err)
	}
	d := binDir{dir: dir}
	if err := os.WriteFile(d.init(), initProgram, 0o555); err != nil {
		d.remove()
		return binDir{}, fmt.Errorf("writing the init program: %w", err)
	}
	if err := os.WriteFile(d.hidden(), nil, 0); err != nil {
		d.remove()
		return binDir{}, fmt.Errorf("writing the hidden file: %w", err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, size); err != nil {
		d.remove()
		return binDir{}, fmt.Errorf("making the init program's tmpfs read-only: %w", err)
	}
	return d, nil
}

// binDirPrefix starts the names of the runtimes' bin directories.
const binDirPrefix = "bin."

// remove unmounts and removes the directory.
func (d binDir) remove() error {
	if d.dir == "" {
		return nil
	}
	if err := unix.Unmount(d.dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmounting %s: %w", d.dir, err)
	}
	return os.Remove(d.dir)
}
