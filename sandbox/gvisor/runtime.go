package gvisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
)

// Name is the runtime's name in the registry and in results.
const Name = "gvisor"

// DefaultStateDir holds the runtimes' state unless told otherwise.
const DefaultStateDir = "/run/coderun/gvisor"

// Options configure the runtime. The zero value finds runsc (FindRunsc),
// keeps its state in DefaultStateDir and runs on the systrap platform.
type Options struct {
	// Runsc is the runsc binary; empty means FindRunsc's.
	Runsc string
	// StateDir holds each runtime's state: runsc's, the template root,
	// the boxes' bundles and workspaces. Empty means DefaultStateDir.
	StateDir string
	// Platform is gVisor's platform: systrap (the default) or ptrace.
	Platform string
	// UID is the user (and group) programs run as; zero means 10001.
	UID int
}

// Runtime runs programs in gVisor sandboxes. It is safe for concurrent use.
type Runtime struct {
	opts      Options
	bin       string // runsc
	owner     string // this runtime's name in the state and cgroup trees: <pid>-<random>
	dir       string // StateDir/<owner>
	runscRoot string // runsc's --root
	root      string // the template root
	binds     []string
	hidden    hidden

	cgroupMounts map[string]string
	cgroupV2     bool

	closeOnce sync.Once
	closed    chan struct{}
	bg        sync.WaitGroup // removals of used boxes

	mu   sync.Mutex
	live map[*longSandbox]bool // long-lived sandboxes not closed yet
}

// New checks that runsc and the host's cgroups are there, reclaims what
// dead runtimes left in opts.StateDir and the cgroup tree, and builds the
// template root.
func New(opts Options) (*Runtime, error) {
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.Platform == "" {
		opts.Platform = "systrap"
	}
	if opts.Platform != "systrap" && opts.Platform != "ptrace" {
		return nil, fmt.Errorf("gvisor runtime: platform %q: want systrap or ptrace (kvm hangs on paravirtualized hosts)", opts.Platform)
	}
	if opts.UID == 0 {
		opts.UID = 10001
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("gvisor runtime: needs root (runsc makes namespaces, cgroups and mounts)")
	}
	bin, err := FindRunsc(opts.Runsc)
	if err != nil {
		return nil, err
	}
	mounts, v2, err := cgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("gvisor runtime: %w", err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	r := &Runtime{
		opts: opts, bin: bin, owner: strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:]),
		cgroupMounts: mounts, cgroupV2: v2, closed: make(chan struct{}),
	}
	r.dir = filepath.Join(opts.StateDir, r.owner)
	r.runscRoot = filepath.Join(r.dir, "runsc")
	r.root = filepath.Join(r.dir, "root")
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("gvisor runtime: state directory: %w", err)
	}
	r.reclaim()
	for _, d := range []string{r.dir, r.runscRoot, filepath.Join(r.dir, "boxes")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("gvisor runtime: state directory: %w", err)
		}
	}
	if r.binds, err = makeRoot(r.root, opts.UID); err == nil {
		r.hidden, err = hide(bin, filepath.Join(r.dir, "hidden"), r.binds)
	}
	if err != nil {
		_ = os.RemoveAll(r.dir)
		return nil, fmt.Errorf("gvisor runtime: %w", err)
	}
	return r, nil
}

// Name returns "gvisor".
func (r *Runtime) Name() string { return Name }

// Close stops running programs (their runs report ReasonKilled), closes
// the long-lived sandboxes still open, waits for every box to be removed,
// and removes the runtime's state.
func (r *Runtime) Close() error {
	var err error
	r.closeOnce.Do(func() {
		close(r.closed)
		// Long-lived sandboxes the caller left open end with the runtime.
		r.mu.Lock()
		var live []*longSandbox
		for s := range r.live {
			live = append(live, s)
		}
		r.mu.Unlock()
		for _, s := range live {
			_ = s.Close()
		}
		r.bg.Wait()
		// runsc leaves a mount of its own in its root: the empty
		// network namespace (null-netns) its sandboxes join.
		var errs []error
		for _, m := range mountsUnder(r.dir) {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("gvisor runtime: unmount %s: %w", m, err))
			}
		}
		errs = append(errs, os.RemoveAll(r.dir))
		for _, g := range r.ownerGroups() {
			errs = append(errs, removeGroupTree(g))
		}
		err = errors.Join(errs...)
	})
	return err
}

// ownerGroups are the runtime's groups, one per hierarchy where there is
// one: its boxes' and those runsc made below them in the other
// hierarchies.
func (r *Runtime) ownerGroups() []string {
	var out []string
	for _, mnt := range cgroupRoots() {
		g := filepath.Join(mnt, cgroupParent, r.owner)
		if _, err := os.Stat(g); err == nil {
			out = append(out, g)
		}
	}
	return out
}

// box is one gVisor sandbox on the host: its bundle and runsc's log in
// its directory, its workspace, its cgroup. runsc's container of the
// same id lives while a program runs in it.
type box struct {
	id  string
	dir string // the bundle: config.json, runsc.log, ws/
	ws  *workspace
	cg  cgroup
}

// newBox makes a box with a workspace of l.WorkspaceBytes and a cgroup
// allowing l.Memory. The limit holds gVisor's own memory (the Sentry, the
// user-space kernel, and the gofer, about 20 MiB) with the program's, as
// the linux runtime's holds the interpreter's: what a program may use is
// never more than its limit. On failure nothing is left behind.
func (r *Runtime) newBox(l sandbox.Limits) (*box, error) {
	select {
	case <-r.closed:
		return nil, errors.New("gvisor runtime: closed")
	default:
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	b := &box{id: "coderun-" + hex.EncodeToString(rnd[:])}
	b.dir = filepath.Join(r.dir, "boxes", b.id)
	if err := os.Mkdir(b.dir, 0o700); err != nil {
		return nil, fmt.Errorf("box directory: %w", err)
	}
	var err error
	if b.ws, err = newWorkspace(filepath.Join(b.dir, "ws"), l.WorkspaceBytes, r.opts.UID); err != nil {
		r.destroy(b)
		return nil, err
	}
	if b.cg, err = r.newCgroup(b.id, l.Memory); err != nil {
		r.destroy(b)
		return nil, err
	}
	return b, nil
}

// logFile is where runsc logs the box's container's commands.
func (b *box) logFile() string { return filepath.Join(b.dir, "runsc.log") }

// destroy removes b: runsc's container (forcibly: killed first), every
// process left in its cgroup, the cgroup, the workspace and the bundle.
// It is safe on a box only partly made.
func (r *Runtime) destroy(b *box) error {
	var errs []error
	if b.cg.dirs != nil {
		errs = append(errs, b.cg.killAll())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if hasState(r.runscRoot, b.id) {
		if err := r.runscQuiet(ctx, "delete", "--force", b.id); err != nil {
			errs = append(errs, err)
		}
	}
	if b.cg.dirs != nil {
		errs = append(errs, b.cg.remove())
	}
	if b.ws != nil {
		errs = append(errs, b.ws.remove())
	}
	errs = append(errs, os.RemoveAll(b.dir))
	return errors.Join(errs...)
}

// hasState reports whether runsc keeps state for container id under root.
func hasState(root, id string) bool {
	m, _ := filepath.Glob(filepath.Join(root, "*"+id+"*"))
	return len(m) > 0
}

// discard removes b in the background (Close waits for it).
func (r *Runtime) discard(b *box) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		_ = r.destroy(b)
	}()
}

// setupError is the result of a run whose sandbox could not be prepared.
func setupError(err error) *sandbox.Result {
	return &sandbox.Result{Reason: sandbox.ReasonSetupError, Error: err.Error(), ExitCode: -1, Runtime: Name}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
