package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
)

// Paths inside the container.
const (
	codeDir     = "/.coderun"                 // read-only: the payload of the program to run
	payloadPath = codeDir + "/payload"        // what the bootstrap reads on fd 3
	labelKey    = "io.github.coderun.sandbox" // marks the containers this runtime made
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

// idleProcesses are the container's own processes (its init, docker-init,
// and the idle command it keeps alive), which its pids limit allows on top
// of the program's.
const idleProcesses = 2

// box is one container with its host-side workspace: a tmpfs under the
// runtime's state directory holding work/, tmp/ and shm/, bind-mounted at
// /work, /tmp and /dev/shm, and code/, bind-mounted read-only at /.coderun.
// (All four in the tmpfs, the container's mount table names only paths
// inside it, never the host's.)
type box struct {
	name   string
	id     string // the container's ID
	dir    string // host: the box's state directory
	cg     cgroup
	limits sandbox.Limits // the container-level limits it now has
}

func (b *box) ws() string   { return filepath.Join(b.dir, "ws") }
func (b *box) work() string { return filepath.Join(b.dir, "ws", "work") }
func (b *box) code() string { return filepath.Join(b.dir, "ws", "code") }

// newBox creates and starts a container under limits (Memory, Processes,
// WorkspaceBytes and OpenFiles apply to the container; the rest to each
// program). On failure nothing is left behind.
func (r *Runtime) newBox(ctx context.Context, limits sandbox.Limits) (*box, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	b := &box{name: "coderun-" + hex.EncodeToString(rnd[:]), limits: limits}
	b.dir = filepath.Join(r.opts.StateDir, b.name)
	if err := r.startBox(ctx, b); err != nil {
		_ = r.destroy(b)
		return nil, err
	}
	return b, nil
}

// startBox makes b's workspace and starts its container.
func (r *Runtime) startBox(ctx context.Context, b *box) error {
	limits := b.limits
	if err := os.MkdirAll(r.opts.StateDir, 0o711); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := os.Mkdir(b.dir, 0o711); err != nil {
		return fmt.Errorf("box directory: %w", err)
	}
	if err := os.Mkdir(b.ws(), 0o711); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", b.ws(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		"mode=0711,"+tmpfsSize(limits.WorkspaceBytes)); err != nil {
		return fmt.Errorf("mounting the workspace tmpfs: %w", err)
	}
	uid := r.opts.UID
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}} {
		p := filepath.Join(b.ws(), d.name)
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
	if err := os.Mkdir(b.code(), 0o755); err != nil { // in the tmpfs: root's
		return err
	}
	if err := writeBootID(b.code()); err != nil {
		return err
	}
	// The container's own processes run as another unprivileged user
	// than programs (uid-1), so that a program cannot signal them.
	user := strconv.Itoa(uid-1) + ":" + strconv.Itoa(uid-1)
	pids := int64(limits.Processes + idleProcesses)
	yes := true
	cfg := &container.Config{
		Image:           r.opts.Image,
		User:            user,
		Cmd:             []string{"sleep", "infinity"},
		WorkingDir:      sandbox.WorkDir,
		Env:             baseEnv,
		Hostname:        "sandbox",
		NetworkDisabled: true,
		Labels:          map[string]string{labelKey: "1"},
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + r.seccomp},
		// The kernel's OOM killer takes the program first; Landlock (the
		// container's init) keeps the program from lowering it.
		OomScoreAdj:  1000,
		Init:         &yes,
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
	if err := bindBootID(info.State.Pid); err != nil {
		return err
	}
	cg, err := cgroupOf(info.State.Pid)
	if err != nil {
		return err
	}
	b.cg = cg
	return nil
}

// fit gives b the container-level limits of a request: the memory and
// process limits by an update, the workspace's size by remounting its tmpfs.
func (r *Runtime) fit(ctx context.Context, b *box, l sandbox.Limits) error {
	if l.Memory != b.limits.Memory || l.Processes != b.limits.Processes {
		pids := int64(l.Processes + idleProcesses)
		_, err := r.cli.ContainerUpdate(ctx, b.id, container.UpdateConfig{Resources: container.Resources{
			Memory: l.Memory, MemorySwap: l.Memory, PidsLimit: &pids,
		}})
		if err != nil {
			return fmt.Errorf("updating the container's limits: %w", err)
		}
		b.limits.Memory, b.limits.Processes = l.Memory, l.Processes
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
	if b.dir != "" {
		if err := unix.Unmount(b.ws(), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting the workspace: %w", err))
		}
		errs = append(errs, os.RemoveAll(b.dir))
	}
	return errors.Join(errs...)
}
