package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
)

// Paths inside the container.
const (
	codeDir  = "/.coderun"                 // read-only: the payload of the program to run
	labelKey = "io.github.coderun.sandbox" // marks the containers this runtime made
)

// maskedPaths are hidden from the container (Docker's default list and
// more kernel and host information: symbols, key users, page and slab
// data, the kernel's command line, the host's block devices).
var maskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
	"/proc/kallsyms", "/proc/key-users", "/proc/kpagecount", "/proc/kpageflags",
	"/proc/kpagecgroup", "/proc/slabinfo", "/proc/vmallocinfo", "/proc/pagetypeinfo",
	"/proc/cmdline", "/sys/block", "/sys/class", "/sys/dev",
	"/sys/kernel", "/sys/fs", "/sys/bus", "/sys/module",
}

// box is one container with its host-side workspace: a tmpfs under the
// runtime's state directory holding work/, tmp/ and shm/, bind-mounted at
// /work, /tmp and /dev/shm, and code/, bind-mounted read-only at /.coderun
// (the boot id, and the pipes to the container's init until the program is
// ready). (All in the tmpfs, the container's mount table names only paths
// inside it, never the host's.) The container's init starts the program's
// interpreter, whose bootstrap waits for its code: a box is made ahead of
// its request (the pool) or at it, and serves one program.
type box struct {
	name    string
	id      string // the container's ID
	dir     string // host: the state directory holding the workspace tmpfs
	shared  bool   // the workspace is a long-lived sandbox's: destroy leaves it
	cg      cgroup
	initPid int // the container's init, as the host numbers it
	lang    sandbox.Language
	limits  sandbox.Limits // the container-level limits it now has
	p       *pipes
	ended   chan struct{} // closed when the program has ended (status set)
	status  unix.WaitStatus
	stErr   error // the init's report could not be read
}

func (b *box) ws() string   { return filepath.Join(b.dir, "ws") }
func (b *box) work() string { return filepath.Join(b.dir, "ws", "work") }
func (b *box) code() string { return filepath.Join(b.dir, "ws", "code-"+b.name) }

// newBox creates and starts a container whose init starts in's interpreter
// under limits (Memory, Processes, WorkspaceBytes and OpenFiles apply to the
// container, CPUTime to the interpreter's rlimit), and waits until its
// bootstrap is ready for the program, or has ended (then the box reports
// that end). On failure nothing is left behind.
func (r *Runtime) newBox(ctx context.Context, in sandbox.Interpreter, limits sandbox.Limits) (*box, error) {
	return r.newBoxIn(ctx, in, limits, "")
}

// newBox is newBox over the workspace of the state directory dir, which
// the box shares and leaves (a long-lived sandbox's: interactive.go); ""
// makes the box a workspace of its own.
func (r *Runtime) newBoxIn(ctx context.Context, in sandbox.Interpreter, limits sandbox.Limits, dir string) (*box, error) {
	name, err := newName()
	if err != nil {
		return nil, err
	}
	b := &box{name: name, limits: limits, lang: in.Language, ended: make(chan struct{})}
	b.dir, b.shared = dir, dir != ""
	if !b.shared {
		b.dir = filepath.Join(r.opts.StateDir, b.name)
	}
	if err := r.startBox(ctx, b, in); err != nil {
		_ = r.destroy(b)
		return nil, err
	}
	return b, nil
}

// newName is a fresh name for a container or a sandbox's state directory.
func newName() (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return "coderun-" + hex.EncodeToString(rnd[:]), nil
}

// makeWorkspace makes the state directory dir and mounts in it the
// workspace tmpfs of size bytes, holding work/, tmp/ and shm/ for uid.
func (r *Runtime) makeWorkspace(dir string, size int64) error {
	if err := os.MkdirAll(r.opts.StateDir, 0o711); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o711); err != nil {
		return fmt.Errorf("box directory: %w", err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o711); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", ws, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		"mode=0711,"+tmpfsSize(size)); err != nil {
		return fmt.Errorf("mounting the workspace tmpfs: %w", err)
	}
	uid := r.opts.UID
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}} {
		p := filepath.Join(ws, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil { // past the umask, with the sticky bit
			return err
		}
		if err := os.Chown(p, uid, uid); err != nil {
			return err
		}
	}
	return nil
}

// removeWorkspace unmounts the workspace tmpfs of the state directory dir
// and removes dir.
func removeWorkspace(dir string) error {
	var errs []error
	if err := unix.Unmount(filepath.Join(dir, "ws"), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("unmounting the workspace: %w", err))
	}
	return errors.Join(append(errs, os.RemoveAll(dir))...)
}

// startBox makes b's workspace (unless it shares one) and pipes, starts
// its container and waits for its program to be ready.
func (r *Runtime) startBox(ctx context.Context, b *box, in sandbox.Interpreter) error {
	limits := b.limits
	uid := r.opts.UID
	if !b.shared {
		if err := r.makeWorkspace(b.dir, limits.WorkspaceBytes); err != nil {
			return err
		}
	}
	if err := os.Mkdir(b.code(), 0o755); err != nil { // in the tmpfs: root's
		return err
	}
	if err := writeBootID(b.code()); err != nil {
		return err
	}
	var err error
	if b.p, err = newPipes(b.code(), uid); err != nil {
		return err
	}
	argv, err := bootstrap.Argv(in)
	if err != nil {
		return err
	}
	// The interpreter's limits: open files (which the engine's ulimit
	// bounds for the container as a whole), no core files, and its CPU
	// time a second past the limit (a backstop: the host's own check of
	// the cgroup's CPU time stops the program at the limit).
	// A long-lived sandbox's program without a CPU limit has no rlimit
	// (its caller bounds it with CPUTime).
	cpu := "unlimited"
	if limits.CPUTime > 0 {
		cpu = strconv.FormatInt(int64(math.Ceil(limits.CPUTime.Seconds()))+1, 10)
	}
	script := "ulimit -n " + strconv.Itoa(limits.OpenFiles) + " && ulimit -c 0 && ulimit -t " + cpu + " && exec \"$@\""
	cmd := []string{initPath, "--supervise"}
	if b.shared {
		// A long-lived sandbox's program reads the host's pipe itself: its
		// AwaitingInput is the host's to see (interactive.go).
		cmd = append(cmd, "--direct-stdin")
	}
	cmd = append(append(cmd, codeDir, "/bin/sh", "-c", script, "sh"), argv...)
	user := strconv.Itoa(uid) + ":" + strconv.Itoa(uid)
	pids := int64(limits.Processes + initTasks)
	if r.sentry {
		pids += sentryTasks
	}
	cfg := &container.Config{
		Image:           r.opts.Image,
		User:            user,
		Cmd:             cmd,
		WorkingDir:      sandbox.WorkDir,
		Env:             baseEnv,
		Hostname:        "sandbox",
		NetworkDisabled: true,
		Labels:          r.labels(filepath.Base(b.dir)),
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + r.seccomp},
		// The kernel's OOM killer takes the program first; Landlock (the
		// container's init) keeps the program from lowering it.
		OomScoreAdj:  1000,
		LogConfig:    container.LogConfig{Type: "none"},
		IpcMode:      "private",
		CgroupnsMode: "private",
		MaskedPaths:  maskedPaths,
		Runtime:      r.opts.OCIRuntime,
		Resources: container.Resources{
			Memory:     limits.Memory,
			MemorySwap: limits.Memory,
			PidsLimit:  &pids,
			NanoCPUs:   int64(r.opts.CPUs * 1e9),
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: int64(limits.OpenFiles), Hard: int64(limits.OpenFiles)},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: filepath.Join(b.ws(), "work"), Target: sandbox.WorkDir},
			{Type: mount.TypeBind, Source: filepath.Join(b.ws(), "tmp"), Target: "/tmp"},
			{Type: mount.TypeBind, Source: filepath.Join(b.ws(), "shm"), Target: "/dev/shm"},
			{Type: mount.TypeBind, Source: b.code(), Target: codeDir, ReadOnly: true},
		},
	}
	if init := r.bin.init(); init != "" {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: init, Target: initPath, ReadOnly: true})
	}
	if r.sentry {
		host.Mounts = append(host.Mounts, r.sentryMounts()...)
	}
	created, err := r.cli.ContainerCreate(ctx, cfg, host, nil, nil, b.name)
	if err != nil {
		return fmt.Errorf("creating the container: %w", err)
	}
	b.id = created.ID
	if err := r.cli.ContainerStart(ctx, b.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting the container: %w", err)
	}
	info, err := r.cli.ContainerInspect(ctx, b.id)
	if err != nil {
		return fmt.Errorf("inspecting the container: %w", err)
	}
	if info.State == nil || info.State.Pid == 0 {
		return errors.New("the container is not running")
	}
	if !isSentry(info.State.Pid) {
		if err := bindBootID(info.State.Pid); err != nil {
			return err
		}
	}
	cg, err := cgroupOf(info.State.Pid)
	if err != nil {
		return err
	}
	b.cg, b.initPid = cg, info.State.Pid
	go func() {
		b.status, b.stErr = readStatus(b.p.status)
		close(b.ended)
	}()
	return r.awaitReady(ctx, b)
}

// initTasks is what the container's init may hold of its pids limit (its
// threads: the program's limit is the rest), until awaitReady counts them.
const initTasks = 8

// awaitReady waits for the bootstrap's "ready" (or the program's end) and
// then lets go of the pipes, and fits the pids limit to the init's threads.
func (r *Runtime) awaitReady(ctx context.Context, b *box) error {
	ready := make(chan error, 1)
	go func() {
		var buf [1]byte
		_, err := b.p.ready.Read(buf[:])
		ready <- err
	}()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("the program did not get ready: %w", err)
		}
	case <-b.ended:
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout.C:
		return errors.New("the program was not ready after a minute")
	}
	b.p.release()
	b.p.ready.Close()
	if r.sentry {
		if err := b.cg.raiseOOMScores(); err != nil {
			return err
		}
	}
	return r.setPids(b, b.limits.Processes)
}

// setPids bounds the program to n processes and threads: the container's
// pids limit is n and the init's own threads.
func (r *Runtime) setPids(b *box, n int) error {
	tasks, err := r.taskCount(b)
	if err != nil {
		return err
	}
	if err := b.cg.setPids(int64(n + tasks)); err != nil {
		return err
	}
	b.limits.Processes = n
	return nil
}

// fit gives b the container-level limits of a request: the memory and
// process limits by an update, the workspace's size by remounting its tmpfs.
func (r *Runtime) fit(ctx context.Context, b *box, l sandbox.Limits) error {
	if l.Memory != b.limits.Memory {
		_, err := r.cli.ContainerUpdate(ctx, b.id, container.UpdateConfig{Resources: container.Resources{
			Memory: l.Memory, MemorySwap: l.Memory,
		}})
		if err != nil {
			return fmt.Errorf("updating the container's memory limit: %w", err)
		}
		b.limits.Memory = l.Memory
	}
	if l.Processes != b.limits.Processes {
		if err := r.setPids(b, l.Processes); err != nil {
			return err
		}
	}
	if l.WorkspaceBytes != b.limits.WorkspaceBytes {
		if err := unix.Mount("", b.ws(), "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV,
			tmpfsSize(l.WorkspaceBytes)); err != nil {
			return fmt.Errorf("resizing the workspace: %w", err)
		}
		b.limits.WorkspaceBytes = l.WorkspaceBytes
	}
	return nil
}

// tmpfsSize is the workspace tmpfs's size option and, in proportion, its
// inode cap (as the linux runtime's): without one, a flood of empty files
// is bounded only by the container's memory, and a run that made a million
// would leave the host a million names to list.
func tmpfsSize(size int64) string {
	inodes := max(4096, min(size/1024, 1<<20))
	return "size=" + strconv.FormatInt(size, 10) + ",nr_inodes=" + strconv.FormatInt(inodes, 10)
}

// destroy kills every process of b, removes its container and its
// workspace. It is safe on a box only partly made.
func (r *Runtime) destroy(b *box) error {
	var errs []error
	if b.cg != (cgroup{}) {
		errs = append(errs, b.cg.killAll())
	}
	if b.id != "" || b.name != "" {
		ref := b.id
		if ref == "" {
			ref = b.name
		}
		ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
		err := r.cli.ContainerRemove(ctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		if err != nil && b.id != "" {
			errs = append(errs, fmt.Errorf("removing container %s: %w", b.name, err))
		}
	}
	if b.p != nil {
		b.p.close()
	}
	switch {
	case b.shared:
		errs = append(errs, os.RemoveAll(b.code()))
	case b.dir != "":
		errs = append(errs, removeWorkspace(b.dir))
	}
	return errors.Join(errs...)
}
