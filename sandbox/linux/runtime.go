package linux

import (
	"context"
	"errors"
	"fmt"
	"log"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// Name is this runtime's name.
const Name = "linux"

// Options configure a Runtime. The zero value works: no pool, the host's
// root, state under /run/coderun, every isolation layer required.
type Options struct {
	// Pool is the number of pre-started sandboxes kept ready per language
	// (for each language in PoolLanguages). Zero disables the pool.
	Pool int
	// PoolLanguages defaults to Python.
	PoolLanguages []sandbox.Language
	// Defaults fill the zero fields of each request's limits; zero fields
	// here take sandbox.DefaultLimits.
	Defaults sandbox.Limits
	// RootFS is an alternative root (an unpacked Debian made with
	// debootstrap, say) whose /usr and /etc the sandbox uses instead of the
	// host's. Empty means "/".
	RootFS string
	// StateDir holds the sandboxes' mount points. Default /run/coderun.
	StateDir string
	// UIDBase is the first host uid (and gid) given to sandboxes; each live
	// sandbox takes two ids from here. Default 1000000.
	UIDBase int
	// AllowWeaker lists isolation layers the operator accepts to run without
	// when the host lacks them (see Layers): "seccomp", "cgroup". Any other
	// missing layer, or these unless listed, makes New fail.
	AllowWeaker []string
	// Zygote builds Python sandboxes around forks of one interpreter
	// started ahead (see zygote.py), in copies of a template root, instead
	// of starting a sandbox init and an interpreter for each: the same
	// isolation and file system, at a fraction of the CPU per run. It needs
	// the host's root file system (RootFS empty or "/"). Requests that set
	// PYTHON* variables, and other languages, still get a sandbox init and
	// a fresh interpreter.
	Zygote bool
	// ZygotePreload names the standard-library modules the zygote imports
	// ahead, so that programs forked from it find them imported (as a
	// fork server's preload does): nil means DefaultZygotePreload, empty
	// none. Only modules that keep no per-process state worth a fresh
	// import belong here.
	ZygotePreload []string
	// SetupTimeout bounds the creation of one sandbox. Default 10s.
	SetupTimeout time.Duration
	// Logf receives background problems (cleanup failures). Default: log.Printf.
	Logf func(format string, args ...any)
}

// DefaultZygotePreload are the modules that generated code and its tests
// import most (HumanEval's prompts start with "from typing import List"):
// importing typing alone costs a fresh interpreter several milliseconds.
// Each module also makes every fork a little dearer (its pages are copied
// and torn down with each program), so heavier and rarer ones (decimal,
// statistics, dataclasses with inspect) are left to the programs that use
// them.
var DefaultZygotePreload = []string{
	"typing", "re", "math", "cmath", "collections", "itertools", "functools", "operator",
	"heapq", "bisect", "string", "copy", "random",
}

// Runtime is the embedded Linux runtime. It is safe for concurrent use.
type Runtime struct {
	opts      Options
	exe       *os.File // the sandbox init program, opened once (initbin.go)
	stateDir  string
	rootMount string
	trees     *systemTrees // the system trees every sandbox mounts (systree.go)
	zygote    *zygote      // nil unless Options.Zygote
	cgroups   cgroups      // nil when the host has none and the operator waived them
	seccomp   bool         // false when the host has none and the operator waived it
	// filter is the seccomp filter its sandbox inits load, assembled
	// once (seccompBytes).
	filter   func() ([]byte, error)
	slot     atomic.Int64
	pool     *pool
	closed   atomic.Bool
	closing  context.Context // done when Close starts: runs in progress are killed
	close    context.CancelCauseFunc
	inflight sync.WaitGroup // runs in progress
	cleanup  sync.WaitGroup // sandboxes being destroyed after their run

	mu        sync.Mutex
	sandboxes map[*longSandbox]bool // long-lived sandboxes not yet closed
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks the host, prepares the state directory and starts the pool.
// It fails, naming the layer, when a required isolation layer is missing.
func New(opts Options) (*Runtime, error) {
	opts.Defaults = opts.Defaults.WithDefaults(sandbox.DefaultLimits)
	if err := opts.Defaults.Validate(); err != nil {
		return nil, fmt.Errorf("linux runtime: default limits: %w", err)
	}
	if opts.RootFS == "" {
		opts.RootFS = "/"
	}
	if opts.StateDir == "" {
		opts.StateDir = defaultStateDir
	}
	if opts.UIDBase == 0 {
		opts.UIDBase = defaultBase
	}
	if opts.SetupTimeout == 0 {
		opts.SetupTimeout = 10 * time.Second
	}
	if opts.ZygotePreload == nil {
		opts.ZygotePreload = DefaultZygotePreload
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	if len(opts.PoolLanguages) == 0 {
		opts.PoolLanguages = []sandbox.Language{sandbox.Python}
	}
	for _, l := range opts.PoolLanguages {
		if _, err := sandbox.LookupInterpreter(l); err != nil {
			return nil, fmt.Errorf("linux runtime: pool: %w", err)
		}
	}
	if err := checkRootFS(opts.RootFS); err != nil {
		return nil, err
	}
	rt := &Runtime{opts: opts, sandboxes: map[*longSandbox]bool{}, filter: sync.OnceValues(seccompBytes)}
	rt.closing, rt.close = context.WithCancelCause(context.Background())
	// Start at a random slot, so that several coderun processes on one host
	// are unlikely to hand out the same host ids at the same time.
	rt.slot.Store(int64(mathrand.IntN(uidSlots)))
	// The host is probed with the runtime's own state directory and
	// cgroups (made only as root: without root, the probe says so), not
	// with a probe's made and removed first.
	cgErr := errors.New("not probed: the linux runtime needs root")
	if os.Geteuid() == 0 {
		if err := rt.prepareStateDir(); err != nil {
			return nil, err
		}
		// The runtime's cgroup is named as its state directory: after the
		// pid of the process it lives in, which tells whether it is stale.
		rt.cgroups, cgErr = detectCgroups(filepath.Base(rt.stateDir))
		var err error
		if rt.trees, err = newSystemTrees(opts.RootFS, rt.stateDir); err != nil {
			if rt.cgroups != nil {
				rt.cgroups.close()
			}
			os.RemoveAll(rt.stateDir)
			return nil, fmt.Errorf("linux runtime: %w", err)
		}
	}
	report := probe(func() (string, error) {
		if cgErr != nil {
			return "", cgErr
		}
		return describeCgroups(rt.cgroups)
	})
	if !report.layer(LayerCgroup).Available && rt.cgroups != nil {
		rt.cgroups.close()
		rt.cgroups = nil
	}
	release := func() {
		rt.trees.close()
		if rt.cgroups != nil {
			rt.cgroups.close()
		}
		if rt.stateDir != "" {
			os.RemoveAll(rt.stateDir)
		}
	}
	if err := report.Require(opts.AllowWeaker); err != nil {
		release()
		return nil, err
	}
	rt.seccomp = report.layer(LayerSeccomp).Available
	var err error
	if rt.exe, err = openInitExecutable(opts.StateDir); err != nil {
		release()
		return nil, fmt.Errorf("linux runtime: open the sandbox init program: %w", err)
	}
	if opts.Zygote {
		if opts.RootFS != "/" {
			rt.exe.Close()
			release()
			return nil, errors.New("linux runtime: the zygote needs the host's root; it cannot serve an alternative RootFS")
		}
		rt.zygote = &zygote{rt: rt}
		if err := rt.zygote.spawnReady(); err != nil {
			rt.exe.Close()
			release()
			return nil, fmt.Errorf("linux runtime: %w", err)
		}
	}
	if opts.Pool > 0 {
		rt.pool = newPool(rt, opts.PoolLanguages, opts.Pool)
	}
	return rt, nil
}

// checkRootFS makes sure an alternative root has a /usr and can be reached
// by the sandbox's unprivileged ids, which build the sandbox's root from it.
func checkRootFS(dir string) error {
	if dir == "/" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("linux runtime: rootfs %q: give an absolute path", dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "usr")); err != nil || !fi.IsDir() {
		return fmt.Errorf("linux runtime: rootfs %s has no usr directory: is it an unpacked system image (debootstrap)?", dir)
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("linux runtime: rootfs: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("linux runtime: rootfs: %s (mode %v) is not traversable by the sandbox's unprivileged ids; chmod o+x it", d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// prepareStateDir makes this process's directory under StateDir, whose
// parents the sandbox's unprivileged ids can traverse, and removes what
// earlier processes that died left behind.
func (rt *Runtime) prepareStateDir() error {
	if err := os.MkdirAll(rt.opts.StateDir, 0o711); err != nil {
		return fmt.Errorf("linux runtime: state dir: %w", err)
	}
	if err := os.Chmod(rt.opts.StateDir, 0o711); err != nil {
		return fmt.Errorf("linux runtime: state dir: %w", err)
	}
	cleanStale(rt.opts.StateDir, rt.opts.Logf)
	rt.stateDir = filepath.Join(rt.opts.StateDir, fmt.Sprintf("%d-%s", os.Getpid(), newID()[:6]))
	rt.rootMount = filepath.Join(rt.stateDir, "root")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{rt.stateDir, 0o711}, {rt.rootMount, 0o755}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			return fmt.Errorf("linux runtime: state dir: %w", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("linux runtime: state dir: %w", err)
		}
	}
	return nil
}

// cleanStale removes the directories of processes that no longer exist,
// unmounting workspaces they left mounted.
func cleanStale(dir string, logf func(string, ...any)) {
	for _, stale := range staleStateDirs(dir) {
		if err := removeStateDir(stale); err != nil {
			logf("coderun: remove stale %s: %v", stale, err)
		}
	}
}

// staleStateDirs lists the directories under dir (a StateDir) of
// runtimes whose process no longer exists.
func staleStateDirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		pidStr, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// removeStateDir unmounts what a dead runtime left mounted in its state
// directory (its workspaces, and anything else the mount table lists
// there), so that removing the directory cannot reach into a mount, and
// removes it.
func removeStateDir(stale string) error {
	wss, _ := os.ReadDir(filepath.Join(stale, "ws"))
	for _, ws := range wss {
		_ = unix.Unmount(filepath.Join(stale, "ws", ws.Name()), unix.MNT_DETACH)
	}
	mounts := mountsUnder(stale)
	for i := len(mounts) - 1; i >= 0; i-- { // deepest (mounted last) first
		if err := unix.Unmount(mounts[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount %s: %w", mounts[i], err)
		}
	}
	return os.RemoveAll(stale)
}

// nextSlot picks the id pair for a new sandbox (see user.go).
func (rt *Runtime) nextSlot() int { return int(rt.slot.Add(1) % uidSlots) }

func (rt *Runtime) logf(format string, args ...any) { rt.opts.Logf(format, args...) }

// Name reports "linux".
func (rt *Runtime) Name() string { return Name }

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("linux runtime: closed")

// Run validates req and runs it in a fresh sandbox: a pre-started one from
// the pool when one is ready for the language, else a new one.
func (rt *Runtime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	// Checked and counted under the lock that Close takes to set closed,
	// so that Close's wait covers every run that got past this point.
	rt.mu.Lock()
	if rt.closed.Load() {
		rt.mu.Unlock()
		return nil, ErrClosed
	}
	rt.inflight.Add(1)
	rt.mu.Unlock()
	defer rt.inflight.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(rt.closing, func() { cancel(ErrClosed) })()
	interp, err := req.Validate(rt.opts.Defaults)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(rt.opts.RootFS, interp.Path)); err != nil {
		return nil, fmt.Errorf("%w: %s is not installed (%s not found)", sandbox.ErrInvalid, req.Language, interp.Path)
	}
	if rt.pool != nil && !interp.NeedsColdStart(req.Env) {
		// A sandbox that died while it waited (its zygote was killed,
		// say) is dropped, not handed the request.
		b := rt.pool.take(req.Language)
		for ; b != nil && b.dead(); b = rt.pool.take(req.Language) {
			rt.logf("coderun: pool: a pre-started %s sandbox had ended; dropped", req.Language)
			rt.destroyLater(b)
		}
		if b != nil {
			res := b.run(ctx, &req)
			if res.Reason != sandbox.ReasonSetupError || !b.dead() || ctx.Err() != nil {
				return res, nil
			}
			// It died between the check and the hand-over, before the
			// program saw its code: run the request afresh.
			rt.logf("coderun: pool: a pre-started %s sandbox ended as it was handed a request; starting another", req.Language)
		}
	}
	b, err := rt.create(ctx, interp, req.Env, false, nil, 0)
	if err != nil {
		if ctx.Err() != nil {
			return &sandbox.Result{Runtime: Name, ExitCode: -1, Reason: sandbox.ReasonKilled, Error: "cancelled during setup: " + err.Error()}, nil
		}
		return &sandbox.Result{Runtime: Name, ExitCode: -1, Reason: sandbox.ReasonSetupError, Error: err.Error()}, nil
	}
	return b.run(ctx, &req), nil
}

// destroyLater destroys b in the background; Close waits for it.
func (rt *Runtime) destroyLater(b *box) {
	rt.cleanup.Add(1)
	go func() {
		defer rt.cleanup.Done()
		b.destroy()
	}()
}

// PoolReady reports how many pre-started sandboxes for lang are waiting.
func (rt *Runtime) PoolReady(lang sandbox.Language) int {
	if rt.pool == nil {
		return 0
	}
	return rt.pool.waiting(lang)
}

// Close stops the pool, destroys the sandboxes waiting in it, kills the runs
// in progress (they end with ReasonKilled), closes the long-lived sandboxes
// still open, and waits until all of it is gone.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	already := rt.closed.Swap(true)
	rt.mu.Unlock()
	if already {
		return nil
	}
	rt.close(ErrClosed)
	if rt.pool != nil {
		rt.pool.close()
	}
	rt.mu.Lock()
	var open []*longSandbox
	for s := range rt.sandboxes {
		open = append(open, s)
	}
	rt.mu.Unlock()
	for _, s := range open {
		s.Close()
	}
	rt.inflight.Wait()
	rt.cleanup.Wait()
	if rt.zygote != nil {
		rt.zygote.stop()
	}
	rt.exe.Close()
	rt.trees.close()
	var errs []error
	if rt.cgroups != nil {
		errs = append(errs, rt.cgroups.close())
	}
	return errors.Join(append(errs, os.RemoveAll(rt.stateDir))...)
}
