package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/coderun/coderun/sandbox"
)

// Name is the runtime's name in the registry and in results.
const Name = "docker"

// DefaultImage is the image tag a runtime uses unless told otherwise: the
// one Import builds.
const DefaultImage = "coderun-python:latest"

// removeTimeout bounds the daemon's removal of a container.
const removeTimeout = 30 * time.Second

// baseEnv is the clean environment every program starts from, as the
// linux runtime's.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
	"HOME=/tmp",
	"TMPDIR=/tmp",
	"USER=sandbox",
	"LOGNAME=sandbox",
	"SHELL=/bin/bash",
	"HOSTNAME=sandbox",
	"LANG=C.UTF-8",
	"MPLBACKEND=Agg",
	"PYTHONDONTWRITEBYTECODE=1",
}

// Options configure the runtime. The zero value talks to the daemon
// DOCKER_HOST names (or the default socket) and runs DefaultImage.
type Options struct {
	// Host is the Docker Engine's address (unix:///run/docker.sock);
	// empty means DOCKER_HOST's, or the client's default.
	Host string
	// Image is the image tag programs run in; empty means DefaultImage.
	Image string
	// OCIRuntime is the daemon's OCI runtime for the containers (runc,
	// runsc); empty means the daemon's default.
	OCIRuntime string
	// StateDir holds the workspaces' host-side mounts; empty means
	// /run/coderun/docker.
	StateDir string
	// Pool is the number of started containers kept ready for one-shot runs.
	Pool int
	// UID is the user (and group) programs run as; zero means 10001. The
	// container's init runs as UID too, as its pid 1.
	UID int
	// CPUs bounds the CPUs a container may use at once; zero means 1.
	CPUs float64
}

// Runtime runs programs in Docker containers. It is safe for concurrent use.
type Runtime struct {
	opts    Options
	cli     *client.Client
	pool    *pool
	seccomp string // the containers' seccomp profile (seccomp.go), as JSON
	bin     binDir // the init program every container runs its programs under
	owner   string // this process, as its containers' labelOwner names it
	sentry  bool   // the OCI runtime is gVisor's runsc (gvisor.go)

	closeOnce sync.Once
	closed    chan struct{}
	bg        sync.WaitGroup // removals of used containers

	mu   sync.Mutex
	live map[*longSandbox]bool // long-lived sandboxes not closed yet
}

// New connects to the Docker Engine and checks that the image is there.
func New(opts Options) (*Runtime, error) {
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	if opts.StateDir == "" {
		opts.StateDir = "/run/coderun/docker"
	}
	if opts.UID == 0 {
		opts.UID = 10001
	}
	if opts.UID < 1 {
		return nil, fmt.Errorf("docker runtime: uid %d: want 1 or more (programs never run as root)", opts.UID)
	}
	if opts.CPUs == 0 {
		opts.CPUs = 1
	}
	if opts.Pool < 0 {
		return nil, fmt.Errorf("docker runtime: pool size %d is negative", opts.Pool)
	}
	profile, err := seccompProfile()
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	cli, err := newClient(opts.Host)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: the Docker Engine does not answer: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, opts.Image); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: image %s: %w (build it with: coderun image build)", opts.Image, err)
	}
	sentry, err := engineRuntimeIsGVisor(ctx, cli, opts.OCIRuntime)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: oci_runtime: %w", err)
	}
	if sentry {
		if profile, err = sentrySeccompProfile(); err != nil {
			cli.Close()
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
	}
	owner, err := processID(os.Getpid())
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	r := &Runtime{opts: opts, cli: cli, seccomp: profile, owner: owner, sentry: sentry, closed: make(chan struct{})}
	if _, err := r.reclaim(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: removing what killed processes left: %w", err)
	}
	if r.bin, err = newBinDir(opts.StateDir); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	if opts.Pool > 0 {
		r.pool = newPool(r, opts.Pool)
	}
	return r, nil
}

// newClient makes a client of the Engine API at host (empty: DOCKER_HOST
// or the default), negotiating the API version with the daemon.
func newClient(host string) (*client.Client, error) {
	o := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		o = append(o, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(o...)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	return cli, nil
}

// Name returns "docker".
func (r *Runtime) Name() string { return Name }

// Close stops the pool, closes the long-lived sandboxes the caller left
// open (their programs report killed), kills running programs' containers
// and waits for every container this runtime made to be removed.
func (r *Runtime) Close() error {
	var err error
	r.closeOnce.Do(func() {
		close(r.closed)
		r.mu.Lock()
		live := make([]*longSandbox, 0, len(r.live))
		for s := range r.live {
			live = append(live, s)
		}
		r.mu.Unlock()
		for _, s := range live {
			err = errors.Join(err, s.Close())
		}
		if r.pool != nil {
			err = errors.Join(err, r.pool.close())
		}
		r.bg.Wait()
		err = errors.Join(err, r.cli.Close(), r.bin.remove())
	})
	return err
}

// take returns a container whose in's interpreter waits for its program
// under limits l: a pooled one when the pool has one ready that fits (the
// interpreter's open-file and CPU rlimits were set at its start), else a
// new one.
func (r *Runtime) take(ctx context.Context, in sandbox.Interpreter, l sandbox.Limits) (*box, bool, error) {
	if r.pool != nil && in.Language == sandbox.Python {
		if b := r.pool.get(); b != nil && (l.OpenFiles != b.limits.OpenFiles || l.CPUTime != b.limits.CPUTime) {
			r.discard(b)
		} else if b != nil {
			if err := r.fit(ctx, b, l); err != nil {
				r.discard(b)
				return nil, false, err
			}
			return b, true, nil
		}
	}
	b, err := r.newBox(ctx, in, l)
	return b, false, err
}

// discard kills b's processes now and removes its container and
// workspace in the background (Close waits for it).
func (r *Runtime) discard(b *box) {
	if b.cg != (cgroup{}) {
		_ = b.cg.killAll()
	}
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
