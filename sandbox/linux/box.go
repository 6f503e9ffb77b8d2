package linux

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"golang.org/x/sys/unix"
)

// box is one sandbox seen from the host: its init process, its cgroup, its
// workspace and the pipes to them. Its life is create → (wait in the pool) →
// run once → destroy; it is never reused.
type box struct {
	rt     *Runtime
	id     string
	interp sandbox.Interpreter
	pooled bool // made ahead of its request, at low priority
	ws     *workspace
	ownsWS bool   // destroy removes the workspace (one-shot runs)
	cg     cgroup // nil when cgroups are explicitly waived
	init   *initProc
	// forked: made by the zygote whose generation (see zygote.outlived)
	// is given.
	forked     bool
	generation uint64
	control    *os.File
	eventsR    *os.File
	events     *json.Decoder
	stdin      *os.File
	stdout     *os.File
	stderr     *os.File
	request    *os.File // the program's fd 3: the payload goes here
	program    int      // the program's host pid
	// memory and pids are the cgroup limits in force.
	memory int64
	pids   int
	// keepOutputs leaves stdout and stderr open at destroy: their reader
	// closes them at end of file (interactive programs).
	keepOutputs bool
	once        sync.Once
}

// initProc is a sandbox's init as the host holds it: a sandbox init the
// host started (its child), or the PID 1 a zygote forked (held by a pidfd,
// the only safe handle on a process that is not the host's child).
//
// The pidfd is closed once init has been waited for, and its number is
// then the next descriptor's: another sandbox's pidfd, say. So every use
// of it holds mu and finds it -1 once closed: a kill after the wait (a
// run's end waits, then its destroy kills again) must not reach whatever
// process the number has come to stand for.
type initProc struct {
	pid   int
	cmd   *exec.Cmd
	mu    sync.Mutex
	pidfd int // -1 for the host's child, and once closed
	once  sync.Once
	ended atomic.Bool // wait has returned: init has exited and is reaped
}

// kill sends SIGKILL, which ends init's PID namespace. It does nothing to
// an init already waited for.
func (p *initProc) kill() {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill() // os.Process knows when it has been waited for
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	}
}

// dead reports whether the sandbox has ended (or is ending) on its own:
// its init has exited, or the zygote that made it has.
func (b *box) dead() bool {
	return b.init.exited() || (b.forked && b.rt.zygote.outlived(b.generation))
}

// exited reports, without waiting, whether init has exited.
func (p *initProc) exited() bool {
	if p.ended.Load() {
		return true // and reaped: its pid may be another process's by now
	}
	if p.cmd != nil {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// wait returns once init has exited (and with it its PID namespace).
func (p *initProc) wait() {
	p.once.Do(func() {
		defer p.ended.Store(true)
		if p.cmd != nil {
			_ = p.cmd.Wait()
			return
		}
		// Only this function closes the pidfd, once: polling it without mu
		// is safe, and holding mu meanwhile would block kill.
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		p.mu.Lock()
		unix.Close(p.pidfd)
		p.pidfd = -1
		p.mu.Unlock()
	})
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pipe makes a pipe whose end host (0: the read end, 1: the write end, -1:
// neither) the host keeps: that end is non-blocking and served by the
// runtime's poller; the child's ends are plain descriptors, which the host
// only passes on and closes.
func pipe(host int) ([2]*os.File, error) {
	var fds [2]int
	var p [2]*os.File
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return p, fmt.Errorf("pipes: %w", err)
	}
	for i, fd := range fds {
		if i == host {
			_ = unix.SetNonblock(fd, true)
		}
		p[i] = os.NewFile(uintptr(fd), "pipe")
	}
	return p, nil
}

func closeAll(p [][2]*os.File) {
	for _, q := range p {
		q[0].Close()
		q[1].Close()
	}
}

// create starts a sandbox for interp, with env added to the clean
// environment, and waits until its interpreter has started and waits for
// code. A pooled sandbox is made at low priority. The sandbox uses ws if
// given (and leaves it be when destroyed), else a workspace of its own.
func (rt *Runtime) create(ctx context.Context, interp sandbox.Interpreter, env map[string]string, pooled bool, ws *workspace, slot int) (_ *box, err error) {
	b := &box{rt: rt, id: newID(), interp: interp, pooled: pooled, ws: ws}
	defer func() {
		if err != nil {
			b.destroy()
		}
	}()
	if ws == nil {
		slot = rt.nextSlot()
	}
	uidMap, gidMap := idMappings(rt.opts.UIDBase, slot)
	if ws == nil {
		if b.ws, err = rt.newWorkspace(b.id, rt.opts.Defaults.WorkspaceBytes, uidMap[1].HostID); err != nil {
			return nil, err
		}
		b.ownsWS = true
	}
	// Python is forked from the zygote when there is one, unless a variable
	// that only acts at interpreter start-up asks for a fresh one. The
	// zygote's programs start from its own (base) environment; what a
	// request adds reaches the program with its code (bootstrap.Payload), so
	// that nothing of one run stays in the memory of the process every later
	// run is forked from.
	forked := rt.zygote != nil && interp.Language == sandbox.Python && !interp.NeedsColdStart(env)
	makeGroups := func() error {
		cg, err := rt.cgroups.create(b.id)
		if err != nil {
			return err
		}
		b.cg = cg
		if !forked {
			// Bound the interpreter's start; the run sets its own limits. (A
			// forked program runs nothing of its own before its run.)
			return b.setLimits(rt.opts.Defaults.Memory, rt.opts.Defaults.Processes)
		}
		return nil
	}
	// A sandbox init born in its groups (v2: CLONE_INTO_CGROUP) needs them
	// before it starts. One that is moved there (v1, or a zygote's) gets
	// them made while it starts and builds the sandbox, which it does
	// before it waits to be moved: making a group (four directories on v1)
	// takes the kernel's cgroup lock, which every container on the host
	// takes too, and was on the path of every cold run.
	late := rt.cgroups != nil && (forked || rt.cgroups.version() == 1)
	if rt.cgroups != nil && !late {
		if err := makeGroups(); err != nil {
			return nil, err
		}
	}
	if forked {
		err = b.startForked(zygoteRequest{IDs: [2]int{uidMap[0].HostID, uidMap[1].HostID}})
	} else {
		err = b.startInit(uidMap, gidMap, mergeEnv(baseEnv(sandboxHostname), env))
	}
	if err != nil {
		return nil, err
	}
	if late {
		if err := makeGroups(); err != nil {
			return nil, err
		}
	}
	// Where init cannot be born in its cgroup (v1, or a zygote's), it is
	// moved there while it builds the sandbox: a migration can wait for an
	// RCU grace period, which then overlaps with the set-up. Init starts
	// the program once it is in.
	attached := make(chan error, 1)
	if b.cg != nil && (b.init.cmd == nil || b.cg.fd() < 0) {
		go func() { attached <- b.cg.attach(b.init.pid) }()
	} else {
		attached <- nil
	}
	if pooled {
		// Refilling the pool yields the CPU to runs in progress.
		b.setPriority(poolNice)
	}
	if err := <-attached; err != nil {
		if errors.Is(err, unix.ESRCH) && b.init.exited() {
			// Init is gone (a zygote's is reaped at once): what ended it
			// is what it reported, not that it could not be moved.
			if _, evErr := b.nextEvent(ctx); evErr != nil {
				return nil, b.setupFailure(evErr)
			}
		}
		return nil, err
	}
	if _, err := b.control.Write([]byte("{}\n")); err != nil {
		return nil, fmt.Errorf("sandbox init: %w", err)
	}
	// The program is placed (placeProgram) while its interpreter starts,
	// off the path to "ready": a cgroup migration can wait for an RCU grace
	// period, which a one-shot run would otherwise wait for in full.
	ready := make(chan struct{})
	placed := make(chan error, 1)
	go func() { placed <- b.placeProgram(ready) }()
	_, err = b.nextEvent(ctx)
	close(ready)
	placeErr := <-placed
	if err != nil {
		return nil, b.setupFailure(err)
	}
	if placeErr != nil {
		return nil, placeErr
	}
	return b, nil
}

// placeProgram finds the program once init has forked it, and before it
// runs any code of the run's: it raises its OOM score and moves it into its
// own group. It looks until it finds it; once ready is closed (init has
// reported, so the program exists or has ended), once more.
//
// A program that ends before it is found or placed (an interpreter that
// fails at its start, found under load) is no failure of the set-up: it ran
// nothing of the run's, whose code it gets only after the box is made, and
// init reports its exit, which the run then answers. b.program stays 0
// (not found) or names a pid that is gone; every later use of it expects
// that (launch, setPriority). It is never taken for gone while it lives:
// only a pid that init no longer lists as its child is.
func (b *box) placeProgram(ready <-chan struct{}) error {
	kids, err := openChildren(b.init.pid)
	if err != nil {
		return err
	}
	defer kids.close()
	wait := 100 * time.Microsecond
	for {
		last := false
		select {
		case <-ready:
			last = true
		default:
		}
		pid, err := kids.first()
		if err != nil {
			if last {
				if errors.Is(err, errProgramGone) {
					return nil
				}
				return err
			}
			select {
			case <-ready:
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Millisecond)
			continue
		}
		b.program = pid
		break
	}
	// Init shares the sandbox's memory group with the program; when the
	// group runs out, the OOM killer must pick the program (and what it
	// starts, which inherits this), never init. Raising a score needs no
	// privilege (lowering init's would need CAP_SYS_RESOURCE); it also
	// puts sandboxed code first in line when the host runs out.
	err = writeFile(fmt.Sprintf("/proc/%d/oom_score_adj", b.program), "1000")
	if err == nil && b.cg != nil {
		err = b.cg.attachProgram(b.program)
	}
	if err != nil && b.programGone(err) {
		return nil
	}
	return err
}

// errProgramGone is programPID's answer when init has no child.
var errProgramGone = errors.New("find program: it has exited")

// programGone reports whether err, from an operation on b.program, is
// because the program has exited and been reaped: the pid is unknown
// (ESRCH, or its /proc directory is gone) and init no longer lists it.
func (b *box) programGone(err error) bool {
	if !errors.Is(err, unix.ESRCH) && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	pid, perr := b.programPID()
	return errors.Is(perr, errProgramGone) || (perr == nil && pid != b.program)
}

// hostEnds keeps the host's ends of init's pipes: control, events, stdin,
// stdout, stderr, request (in that order).
func (b *box) hostEnds(p [][2]*os.File) {
	b.control, b.eventsR, b.stdin, b.stdout, b.stderr, b.request = p[0][1], p[1][0], p[2][1], p[3][0], p[4][0], p[5][1]
	b.events = json.NewDecoder(bufio.NewReader(b.eventsR))
}

// sandboxPipes makes init's pipes (control, events, stdin, stdout, stderr,
// request, then extra more that the host does not use) and returns them
// with the child's ends.
func sandboxPipes(extra int) ([][2]*os.File, []*os.File, error) {
	hosts := []int{1, 0, 1, 0, 0, 1} // the end each of the six the host keeps
	for range extra {
		hosts = append(hosts, -1)
	}
	var p [][2]*os.File
	for _, host := range hosts {
		q, err := pipe(host)
		if err != nil {
			closeAll(p)
			return nil, nil, err
		}
		p = append(p, q)
	}
	// The program may reopen its request pipe by path (/dev/fd/3: bash's
	// bootstrap does), which the pipe's owner, host root, would refuse it.
	if err := unix.Fchmod(int(p[5][0].Fd()), 0o666); err != nil {
		closeAll(p)
		return nil, nil, fmt.Errorf("pipes: %w", err)
	}
	return p, []*os.File{p[0][0], p[1][1], p[2][0], p[3][1], p[4][1], p[5][0]}, nil
}

// initCmd re-executes this binary as a sandbox init (init.go), with files
// as its descriptors 3 on. The binary is reached through /proc/self/fd, so
// that an init with an unprivileged host id need not reach its directory.
func (rt *Runtime) initCmd(name string, files []*os.File, attr *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{
		Path:        fmt.Sprintf("/proc/self/fd/%d", fdExe),
		Args:        []string{name},
		Env:         []string{initMarker + "=1", "GOMAXPROCS=1"},
		ExtraFiles:  files,
		SysProcAttr: attr,
		// What an init that dies says on its way out (the Go runtime's
		// fatal errors): the host quotes it when set-up fails.
		Stderr: &tailWriter{max: 2048},
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = w.buf[over:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// setupFailure adds to err, when a sandbox init ended during set-up
// without saying why, how it ended: its exit status or signal and, for an
// init the host started, the end of what it wrote on its standard error;
// for one a zygote forked, whether the zygote had exited (which kills it).
func (b *box) setupFailure(err error) error {
	p := b.init
	if p == nil {
		return err
	}
	for deadline := time.Now().Add(200 * time.Millisecond); !p.exited(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return err // still running: the set-up timed out or was cancelled
		}
	}
	if p.cmd == nil {
		how := "init " + p.endedStatus()
		if b.forked && b.rt != nil && b.rt.zygote != nil && b.rt.zygote.outlived(b.generation) {
			how += "; the zygote that made it has exited"
		}
		return fmt.Errorf("%w (%s)", err, how)
	}
	p.wait()
	how := "init " + p.cmd.ProcessState.String()
	if w, ok := p.cmd.Stderr.(*tailWriter); ok {
		if tail := strings.TrimSpace(w.String()); tail != "" {
			how += ": " + tail
		}
	}
	return fmt.Errorf("%w (%s)", err, how)
}

// endedStatus says how an init held by its pidfd (not the host's child:
// its parent reaps it) ended, as os.ProcessState says it ("exit status 1",
// "signal: killed"), from the exit status the kernel keeps with the pidfd
// (PIDFD_INFO_EXIT, Linux 6.15). The status is there once its parent has
// reaped it, which is waited for a moment.
func (p *initProc) endedStatus() string {
	var status syscall.WaitStatus
	var err error
	for deadline := time.Now().Add(200 * time.Millisecond); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		if p.pidfd < 0 {
			err = errors.New("its pidfd is closed")
		} else {
			status, err = pidfdExitStatus(p.pidfd)
		}
		p.mu.Unlock()
		if err == nil || !errors.Is(err, errNoExitInfo) || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case err != nil:
		return "ended; how is unknown: " + err.Error()
	case status.Signaled():
		return "signal: " + status.Signal().String()
	default:
		return fmt.Sprintf("exit status %d", status.ExitStatus())
	}
}

// startInit starts a sandbox init (init.go) in new namespaces, which builds
// the sandbox and starts the interpreter in it.
func (b *box) startInit(uidMap, gidMap []syscall.SysProcIDMap, env []string) error {
	rt := b.rt
	p, ends, err := sandboxPipes(1) // and the program's ready pipe
	if err != nil {
		return err
	}
	b.hostEnds(p)
	// Then the runtime's own executable (see initCmd), and the workspace's
	// directories. The child's ends become its fds 3.. in the order of
	// init.go's constants.
	childEnds := []*os.File{ends[0], ends[1], ends[2], ends[3], ends[4], rt.exe, ends[5], p[6][0], p[6][1]}
	defer func() {
		for _, f := range childEnds {
			if f != rt.exe {
				f.Close()
			}
		}
	}()
	trees, err := b.ws.clones()
	if err != nil {
		return err
	}
	childEnds = append(childEnds, trees...)
	system, systemPaths, err := rt.trees.clones()
	if err != nil {
		return err
	}
	childEnds = append(childEnds, system...)
	argv, err := bootstrap.Argv(b.interp)
	if err != nil {
		return err
	}
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings:                uidMap,
		GidMappings:                gidMap,
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
		Pdeathsig:                  syscall.SIGKILL,
		// Its own process group: a terminal's Ctrl-C reaches coderun,
		// which decides what to interrupt, and not every sandbox's init.
		Setpgid: true,
	}
	if b.cg != nil && b.cg.fd() >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, b.cg.fd()
	}
	cmd := rt.initCmd("coderun-sandbox-init", childEnds, attr)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sandbox init: %w", err)
	}
	b.init = &initProc{pid: cmd.Process.Pid, cmd: cmd, pidfd: -1}
	cfg := setupConfig{
		RootMount:   rt.rootMount,
		SourceRoot:  rt.opts.RootFS,
		SystemTrees: systemPaths,
		Hostname:    sandboxHostname,
		EtcFiles:    generatedEtc(sandboxHostname),
		UID:         sandboxUID,
		Path:        b.interp.Path, // resolved inside the sandbox's root
		Argv:        argv,
		Env:         env,
		NoSeccomp:   !rt.seccomp,
	}
	if rt.seccomp {
		// Assembled while init's own runtime starts, once per runtime.
		if cfg.Seccomp, err = rt.filter(); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(b.control).Encode(&cfg); err != nil {
		return fmt.Errorf("send setup to sandbox init: %w", err)
	}
	return nil
}

// startForked has the zygote build the sandbox around a fork of its
// interpreter, in the workspace's directories, which it gets as detached
// mounts (open_tree(2) clones), as a sandbox init does.
func (b *box) startForked(req zygoteRequest) error {
	p, ends, err := sandboxPipes(0)
	if err != nil {
		return err
	}
	b.hostEnds(p)
	trees, err := b.ws.clones()
	if err != nil {
		closeFiles(ends)
		return err
	}
	ends = append(ends, trees...)
	defer func() {
		closeFiles(ends)
	}()
	pid, pidfd, generation, err := b.rt.zygote.spawn(req, ends)
	if err != nil {
		return err
	}
	b.init = &initProc{pid: pid, pidfd: pidfd}
	b.forked, b.generation = true, generation
	return nil
}

// nextEvent reads init's next event, bounded by ctx and the setup timeout;
// an error event becomes an error.
func (b *box) nextEvent(ctx context.Context) (event, error) {
	return readEvent(ctx, b.events, b.rt.opts.SetupTimeout)
}

// readEvent reads an init's next event from dec, bounded by ctx and
// timeout; an error event becomes an error.
func readEvent(ctx context.Context, dec *json.Decoder, timeout time.Duration) (event, error) {
	type result struct {
		ev  event
		err error
	}
	got := make(chan result, 1)
	go func() {
		var ev event
		if err := dec.Decode(&ev); err != nil {
			got <- result{err: fmt.Errorf("sandbox init ended during setup: %w", err)}
			return
		}
		if ev.Error != "" {
			got <- result{err: errors.New(ev.Error)}
			return
		}
		got <- result{ev: ev}
	}()
	select {
	case r := <-got:
		return r.ev, r.err
	case <-ctx.Done():
		return event{}, ctx.Err()
	case <-time.After(timeout):
		return event{}, fmt.Errorf("sandbox setup took longer than %s", timeout)
	}
}

// setLimits changes the cgroup's limits when they differ from those in force.
func (b *box) setLimits(memory int64, pids int) error {
	if memory == b.memory && pids == b.pids {
		return nil
	}
	if err := b.cg.setLimits(memory, pids); err != nil {
		return err
	}
	b.memory, b.pids = memory, pids
	return nil
}

// poolNice is the scheduling priority of sandboxes being pre-started.
const poolNice = 10

// setPriority sets the nice value of init and of everything it has started.
func (b *box) setPriority(nice int) {
	if b.init == nil || !b.pooled {
		return
	}
	_ = unix.Setpriority(unix.PRIO_PROCESS, b.init.pid, nice)
	// A program started before the change keeps its own value.
	if b.program != 0 {
		_ = unix.Setpriority(unix.PRIO_PROCESS, b.program, nice)
	}
}

// programPID finds the program's host pid: init's one child.
func (b *box) programPID() (int, error) {
	c, err := openChildren(b.init.pid)
	if err != nil {
		return 0, err
	}
	defer c.close()
	return c.first()
}

// children is init's list of its children (/proc/<init>/task/<init>/children),
// open to be read again and again while placeProgram looks for the program
// (every 2 ms while init sets the sandbox up): a seq_file, it is listed
// afresh by each read from its start, and the open (a walk of /proc, a
// file the runtime's poller tries to register) costs several times the read.
// It stays bound to init's task whatever becomes of init's pid.
type children struct{ fd int }

func openChildren(init int) (*children, error) {
	fd, err := openRetrying(fmt.Sprintf("/proc/%d/task/%d/children", init, init), unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("find program: %w", err)
	}
	return &children{fd: fd}, nil
}

// first returns the first child's pid, or errProgramGone when there is none.
func (c *children) first() (int, error) {
	var buf [64]byte
	var n int
	err := retryEINTR(func() error {
		var err error
		n, err = unix.Pread(c.fd, buf[:], 0)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("find program: %w", err)
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) == 0 {
		return 0, errProgramGone
	}
	return strconv.Atoi(f[0])
}

func (c *children) close() { unix.Close(c.fd) }

// kill ends every process of the sandbox: init first (the kernel then kills
// the rest of its PID namespace), then whatever the cgroup still holds.
func (b *box) kill() {
	b.signalInit()
	if b.cg != nil {
		_ = b.cg.kill()
	}
}

// signalInit sends SIGKILL to init, which ends its PID namespace.
func (b *box) signalInit() {
	if b.init != nil {
		b.init.kill()
	}
}

// destroy kills the sandbox and releases everything it held. It is safe to
// call more than once.
func (b *box) destroy() {
	b.once.Do(func() {
		// Killing init ends its PID namespace; the cgroup is killed after
		// init is reaped, for anything that could be left outside it.
		b.signalInit()
		files := []*os.File{b.control, b.eventsR, b.stdin, b.request}
		if !b.keepOutputs {
			files = append(files, b.stdout, b.stderr)
		}
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		if b.init != nil {
			b.init.wait()
		}
		if b.cg != nil {
			_ = b.cg.kill()
			if err := b.cg.destroy(); err != nil {
				b.rt.logf("sandbox %s: %v", b.id, err)
			}
		}
		if b.ws != nil && b.ownsWS {
			b.ws.remove(b.rt.logf)
		}
	})
}
