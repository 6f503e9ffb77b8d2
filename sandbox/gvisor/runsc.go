package gvisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RunscVersion is the version of gvisor.dev/gvisor whose runsc this
// package is written and tested against: a pseudo-version of gVisor's
// "go" branch on the Go module proxy. scripts/runsc.sh reads it from here
// and builds that runsc with the go tool into RunscCache.
const RunscVersion = "v0.0.0-20260905035102-160fafc42237"

// RunscCache is where scripts/runsc.sh installs the pinned runsc.
const RunscCache = "/usr/local/lib/coderun/gvisor/" + RunscVersion

// FindRunsc returns the runsc to use: path when it is given, else the
// pinned build in RunscCache, else the first runsc on PATH.
func FindRunsc(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("gvisor: runsc: %w", err)
		}
		return path, nil
	}
	pinned := filepath.Join(RunscCache, "runsc")
	if _, err := os.Stat(pinned); err == nil {
		return pinned, nil
	}
	if p, err := exec.LookPath("runsc"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("gvisor: no runsc: neither %s (build it with scripts/runsc.sh) nor a runsc on PATH", pinned)
}

// Version reports runsc's version (the first line of `runsc --version`)
// at path (empty: FindRunsc's), for a health check.
func Version(ctx context.Context, path string) (string, error) {
	p, err := FindRunsc(path)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("gvisor: %s --version: %w", p, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first + " (" + p + ")", nil
}

// globalFlags are runsc's flags for every command of one runtime: its
// state root, the platform, no network, no overlay on the (read-only)
// root, and the cgroups runsc makes below the box's own.
func (r *Runtime) globalFlags() []string {
	return []string{
		"--root=" + r.runscRoot,
		"--platform=" + r.opts.Platform,
		"--network=none",
		"--overlay2=none",
		"--oci-seccomp",
	}
}

// runsc returns a command running runsc with the runtime's global flags
// and args. It is killed (SIGKILL) if this process dies.
func (r *Runtime) runsc(args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, append(r.globalFlags(), args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// runscQuiet runs a runsc command that is not a program (delete, kill,
// run --detach) and returns its error with what it wrote. Its output goes
// to a file, not a pipe: a detached sandbox keeps runsc's descriptors,
// and a pipe would never end.
func (r *Runtime) runscQuiet(ctx context.Context, args ...string) error {
	out, err := os.CreateTemp(r.dir, "runsc-out-")
	if err != nil {
		return fmt.Errorf("runsc %s: %w", args[0], err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := r.runsc(args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("runsc %s: %w", args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		err = ctx.Err()
	}
	if err != nil {
		said, _ := os.ReadFile(out.Name())
		return fmt.Errorf("runsc %s: %w: %s", args[0], err, strings.TrimSpace(string(said)))
	}
	return nil
}

// exitStatusPrefix begins the line runsc logs (at level Info) as it exits
// with a container's status: the raw wait status, which, unlike runsc's
// own exit code (128+N for signal N, as a shell reports it), tells a
// program that exited with 137 from one that SIGKILL ended.
const exitStatusPrefix = "Exiting with status: "

// readExitStatus reads the wait status runsc recorded in its log file.
func readExitStatus(logFile string) (syscall.WaitStatus, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return 0, fmt.Errorf("runsc's log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		_, v, ok := strings.Cut(sc.Text(), exitStatusPrefix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("runsc's log: exit status %q: %w", v, err)
		}
		return syscall.WaitStatus(n), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("runsc's log: %w", err)
	}
	return 0, errors.New("runsc recorded no exit status")
}

// lastLogError returns the last warning or error line of runsc's log (why
// a container could not start), or "".
func lastLogError(logFile string) string {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return ""
	}
	var last string
	for _, l := range strings.Split(string(data), "\n") {
		if len(l) > 0 && (l[0] == 'W' || l[0] == 'E') {
			last = l
		}
	}
	return last
}
