package gvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
)

// Long-lived sandboxes (sandbox.Interactive), what sessions run on: a box
// whose container lives as long as the sandbox, its init an idle process
// of another user than programs (which cannot signal it), and each
// program started in it with `runsc exec`, its standard streams the
// caller's pipes. When a program ends, or is killed, every process of its
// process group is killed with it (`runsc kill --pgid`), so the next
// program starts beside none of them; the workspace (/work, /tmp,
// /dev/shm: the host tmpfs) carries over. A container that died (an OOM
// kill takes the Sentry, Kill takes every process) is made again, over
// the same workspace, when the next program starts. Its Sentry reports
// its tasks' reads to the host (readWatch), which sees through them when
// a program awaits input.

var (
	_ sandbox.Interactive = (*Runtime)(nil)
	_ sandbox.Archiver    = (*longSandbox)(nil)
)

// NewSandbox creates a long-lived sandbox with spec's workspace, files
// and limits, its container started.
func (r *Runtime) NewSandbox(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if err := spec.Validate(sandbox.DefaultLimits); err != nil {
		return nil, err
	}
	lim := spec.Limits
	b, err := r.newBox(lim)
	if err != nil {
		return nil, fmt.Errorf("gvisor: new sandbox: %w", err)
	}
	s := &longSandbox{r: r, b: b, lim: lim}
	if s.watch, err = newReadWatch(filepath.Join(b.dir, "trace.sock")); err != nil {
		_ = r.destroy(b)
		return nil, fmt.Errorf("gvisor: new sandbox: %w", err)
	}
	if _, err := hostdir.WriteFiles(b.ws.work(), spec.Files, r.opts.UID, r.opts.UID); err != nil {
		_ = s.destroy()
		return nil, err
	}
	if err := s.boot(ctx); err != nil {
		_ = s.destroy()
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.closed:
		_ = s.destroy()
		return nil, errors.New("gvisor runtime: closed")
	default:
	}
	if r.live == nil {
		r.live = map[*longSandbox]bool{}
	}
	r.live[s] = true
	return s, nil
}

// longSandbox implements sandbox.Sandbox.
type longSandbox struct {
	r     *Runtime
	b     *box
	lim   sandbox.Limits
	watch *readWatch // the reads of the container's threads

	mu      sync.Mutex
	alive   bool // the container runs
	current *process
	closed  bool
	n       int   // programs started, for their log files
	oom     int64 // the OOM kills of the box's cgroup already reported
}

func (s *longSandbox) oomSeen() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oom
}

func (s *longSandbox) setOOMSeen(n int64) {
	s.mu.Lock()
	s.oom = n
	s.mu.Unlock()
}

// boot starts the box's container: its init sleeps, as uid UID-1,
// ignoring SIGCHLD (bash's trap sets SIG_IGN, which exec keeps; dash's
// does not) so that the processes of ended programs, orphans it inherits,
// are reaped as they die: a zombie would count against the next
// program's process limit. Its Sentry sends the reads of its
// threads to s.watch.
func (s *longSandbox) boot(ctx context.Context) error {
	_ = s.r.runscQuiet(ctx, "delete", "--force", s.b.id) // a dead one's state
	proc := s.r.process([]string{"/bin/bash", "-c", "trap '' CHLD; exec /bin/sleep infinity"}, baseEnv, s.lim)
	proc.User.UID, proc.User.GID = uint32(s.r.opts.UID-1), uint32(s.r.opts.UID-1)
	if err := writeSpec(s.b.dir, s.r.spec(s.b, proc)); err != nil {
		return err
	}
	trace, err := s.watch.initConfig()
	if err != nil {
		return err
	}
	traceFile := filepath.Join(s.b.dir, "trace.json")
	if err := os.WriteFile(traceFile, trace, 0o600); err != nil {
		return fmt.Errorf("gvisor: trace session: %w", err)
	}
	err = s.watch.accept(ctx, func() error {
		return s.r.runscQuiet(ctx, "--pod-init-config="+traceFile, "run", "--detach", "--bundle="+s.b.dir, s.b.id)
	})
	if err != nil {
		return fmt.Errorf("gvisor: starting the sandbox: %w", err)
	}
	s.alive = true
	return nil
}

// destroy stops following the container's reads and removes the box.
func (s *longSandbox) destroy() error {
	return errors.Join(s.watch.close(), s.r.destroy(s.b))
}

func (s *longSandbox) ID() string { return s.b.id }

// Start starts prog with runsc exec in the sandbox's container.
func (s *longSandbox) Start(ctx context.Context, prog sandbox.Program) (sandbox.Process, error) {
	req := sandbox.Request{Language: prog.Language, Code: prog.Code, Env: prog.Env}
	in, err := req.Validate(sandbox.DefaultLimits)
	if err != nil {
		return nil, err
	}
	lim := s.lim
	if prog.Limits != nil {
		lim = prog.Limits.WithDefaults(s.lim)
		lim.WorkspaceBytes = s.lim.WorkspaceBytes
		if err := lim.Validate(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("sandbox closed")
	}
	if s.current != nil && !s.current.ended() {
		return nil, errors.New("a program is still running in this sandbox")
	}
	if lim.Memory != s.lim.Memory || !s.alive {
		if err := s.b.cg.setMemory(lim.Memory); err != nil {
			return nil, err
		}
	}
	if !s.alive {
		if err := s.boot(ctx); err != nil {
			return nil, err
		}
	}
	argv, err := bootstrap.Argv(in)
	if err != nil {
		return nil, err
	}
	s.n++
	p, err := s.exec(argv, bootstrap.Payload(prog.Env, "", prog.Code), lim)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	s.current = p
	return p, nil
}

// exec starts argv in the container with runsc exec.
func (s *longSandbox) exec(argv []string, payload []byte, lim sandbox.Limits) (*process, error) {
	base := filepath.Join(s.b.dir, "exec-"+strconv.Itoa(s.n))
	procFile, pidFile, logFile := base+".json", base+".pid", base+".log"
	data, err := json.Marshal(s.r.process(argv, baseEnv, lim))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(procFile, data, 0o600); err != nil {
		return nil, err
	}
	cmd := s.r.runsc("--debug-log="+logFile, "--debug-command=exec",
		"exec", "--process="+procFile, "--internal-pid-file="+pidFile, "--pass-fd=3:3", "--pass-fd=4:4", s.b.id)
	var closeAfter []*os.File
	pipe := func() (*os.File, *os.File) {
		r, w, perr := os.Pipe()
		if perr != nil && err == nil {
			err = perr
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	payR, payW := pipe()
	readyR, readyW := pipe()
	if err != nil {
		return nil, err
	}
	closeAfter = append(closeAfter, inR, outW, errW, payR, readyW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = []*os.File{payR, readyW}
	s.b.cg.ResetPeak()
	u, sy, _ := s.b.cg.CPU()
	start := time.Now()
	err = cmd.Start()
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		payW.Close()
		readyR.Close()
		return nil, err
	}
	p := &process{s: s, cmd: cmd, lim: lim, stdin: inW, stdout: outR, stderr: errR,
		pidFile: pidFile, logFile: logFile, start: start, cpuBase: u + sy, exited: make(chan struct{}), ready: make(chan struct{})}
	// The program's clock starts when its bootstrap says it is ready (on
	// its descriptor 4), as the linux runtime's starts at the program's
	// start: runsc exec's own start and the interpreter's are not the
	// program's. Its code follows at once.
	go func() {
		defer payW.Close()
		defer readyR.Close()
		var one [1]byte
		if n, _ := readyR.Read(one[:]); n == 1 {
			p.readyAt = time.Now()
			close(p.ready)
		}
		_, _ = payW.Write(payload)
	}()
	go func() {
		p.runErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (s *longSandbox) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sandbox closed")
	}
	return nil
}

func (s *longSandbox) WriteFile(path string, data []byte, mode os.FileMode) error {
	if err := s.usable(); err != nil {
		return err
	}
	_, err := hostdir.WriteFiles(s.b.ws.work(), []sandbox.File{{Path: path, Content: data, Mode: mode}}, s.r.opts.UID, s.r.opts.UID)
	return err
}

func (s *longSandbox) ReadFile(path string, max int64) ([]byte, bool, error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	return hostdir.ReadFile(s.b.ws.work(), path, max)
}

func (s *longSandbox) Files() ([]sandbox.FileInfo, bool, error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	return hostdir.CollectFiles(s.b.ws.work(), nil, 0)
}

func (s *longSandbox) PutArchive(ctx context.Context, r io.Reader) error {
	if err := s.usable(); err != nil {
		return err
	}
	return hostdir.PutArchive(ctx, s.b.ws.work(), r, s.r.opts.UID, s.r.opts.UID)
}

func (s *longSandbox) GetArchive(ctx context.Context, paths []string) (io.ReadCloser, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return hostdir.GetArchive(ctx, s.b.ws.work(), paths)
}

// Close kills the running program and removes the sandbox.
func (s *longSandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("sandbox already closed")
	}
	s.closed = true
	p := s.current
	s.mu.Unlock()
	if p != nil {
		p.Kill()
		p.Wait(context.Background())
	}
	s.r.mu.Lock()
	delete(s.r.live, s)
	s.r.mu.Unlock()
	return s.destroy()
}

// process is a program runsc exec started in a long-lived sandbox.
type process struct {
	s      *longSandbox
	cmd    *exec.Cmd
	lim    sandbox.Limits
	stdin  *os.File
	stdout *os.File
	stderr *os.File

	pidFile, logFile string
	start            time.Time
	cpuBase          time.Duration
	exited           chan struct{} // runsc exec has returned
	runErr           error
	ready            chan struct{} // the bootstrap is ready; readyAt is set
	readyAt          time.Time

	mu       sync.Mutex
	sbxPid   int // the program's pid in the sandbox, once known
	killed   bool
	result   *sandbox.Result
	waitOnce sync.Once
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.Reader     { return p.stdout }
func (p *process) Stderr() io.Reader     { return p.stderr }

func (p *process) ended() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// pid is the program's pid in the sandbox, once runsc exec has written it.
func (p *process) pid() (int, error) {
	p.mu.Lock()
	known := p.sbxPid
	p.mu.Unlock()
	if known > 0 {
		return known, nil
	}
	for i := 0; i < 500; i++ {
		data, err := os.ReadFile(p.pidFile)
		if err == nil && len(strings.TrimSpace(string(data))) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				return 0, fmt.Errorf("the program's pid: %w", err)
			}
			if pid <= 0 {
				return 0, fmt.Errorf("the program's pid: %d", pid)
			}
			p.mu.Lock()
			p.sbxPid = pid
			p.mu.Unlock()
			return pid, nil
		}
		if p.ended() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, errors.New("the program's pid is unknown")
}

// Signal sends sig to the program's process group.
func (p *process) Signal(sig os.Signal) error {
	if p.ended() {
		return errors.New("the program has ended")
	}
	n, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: not a syscall.Signal", sig)
	}
	pid, err := p.pid()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.s.r.runscQuiet(ctx, "kill", "--pgid="+strconv.Itoa(pid), p.s.b.id, strconv.Itoa(int(n)))
}

// Kill stops the program and every process of the container: the
// container is made again for the next program.
func (p *process) Kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.killContainer()
}

func (p *process) killContainer() {
	p.s.mu.Lock()
	p.s.alive = false
	p.s.mu.Unlock()
	_ = p.s.b.cg.killAll()
	if !p.ended() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Wait waits for the program's end, holding it to its wall and CPU limits.
func (p *process) Wait(ctx context.Context) *sandbox.Result {
	p.waitOnce.Do(func() { p.result = p.wait(ctx) })
	return p.result
}

func (p *process) wait(ctx context.Context) *sandbox.Result {
	res := &sandbox.Result{Runtime: Name}
	var reason sandbox.Reason
	var wall <-chan time.Time
	ready := p.ready
	tick := time.NewTicker(cpuPoll)
	defer tick.Stop()
loop:
	for {
		select {
		case <-p.exited:
			break loop
		case <-ready:
			ready = nil
			if p.lim.WallTime > 0 {
				t := time.NewTimer(p.lim.WallTime - time.Since(p.readyAt))
				defer t.Stop()
				wall = t.C
			}
		case <-wall:
			reason = sandbox.ReasonTimeout
		case <-ctx.Done():
			reason, res.Error = sandbox.ReasonKilled, "stopped: "+ctx.Err().Error()
		case <-p.s.r.closed:
			reason, res.Error = sandbox.ReasonKilled, "stopped: the runtime closed"
		case <-tick.C:
			if c, err := p.CPUTime(); err == nil && p.lim.CPUTime > 0 && c >= p.lim.CPUTime {
				reason = sandbox.ReasonCPULimit
			}
		}
		if reason != "" {
			break
		}
	}
	res.Usage.Wall = time.Since(p.start)
	if ready == nil {
		res.Usage.Wall = time.Since(p.readyAt)
	}
	if reason != "" {
		p.killContainer()
		<-p.exited
	}
	p.mu.Lock()
	killed := p.killed
	p.mu.Unlock()
	u, sy, _ := p.s.b.cg.CPU()
	total := u + sy - p.cpuBase
	if u+sy > 0 {
		res.Usage.CPUUser = time.Duration(float64(total) * float64(u) / float64(u+sy))
		res.Usage.CPUSystem = total - res.Usage.CPUUser
	}
	res.Usage.PeakMemory, _ = p.s.b.cg.PeakMemory()
	oom, _ := p.s.b.cg.OOMKills()
	oomNew := oom > p.s.oomSeen()
	switch {
	case reason != "":
		res.Reason, res.ExitCode, res.Signal = reason, -1, "SIGKILL"
		return res
	case killed:
		res.Reason, res.ExitCode, res.Signal = sandbox.ReasonKilled, -1, "SIGKILL"
		return res
	}
	ws, err := readExitStatus(p.logFile)
	if oomNew && (err != nil || ws.Signaled() || ws.ExitStatus() != 0) {
		p.s.setOOMSeen(oom)
		p.killContainer()
		res.Reason, res.ExitCode, res.Signal = sandbox.ReasonMemoryLimit, -1, "SIGKILL"
		return res
	}
	if err != nil {
		// The container died under the program (its Sentry killed).
		p.killContainer()
		res.Reason, res.ExitCode = sandbox.ReasonKilled, -1
		res.Error = "the program ended without a status: " + err.Error()
		return res
	}
	// The program's background processes end with it.
	if pid, err := p.pid(); err == nil {
		kctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = p.s.r.runscQuiet(kctx, "kill", "--pgid="+strconv.Itoa(pid), p.s.b.id, "KILL")
		cancel()
	}
	res.Reason = sandbox.ReasonExited
	if ws.Signaled() {
		res.ExitCode, res.Signal = -1, unix.SignalName(ws.Signal())
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	if oomNew {
		p.s.setOOMSeen(oom)
		res.Error = "a process hit the memory limit and the kernel killed it (OOM)"
	}
	return res
}

// CPUTime is the box's CPU time since the program started.
func (p *process) CPUTime() (time.Duration, error) {
	u, s, err := p.s.b.cg.CPU()
	if err != nil {
		return 0, err
	}
	return u + s - p.cpuBase, nil
}

// AwaitingInput reports whether the program's main thread (the task whose
// id is the program's pid) is in read(2) on its stdin, as the Sentry
// reports its tasks' reads to the host (readWatch). The host holds the
// stdin pipe's only write end, so such a read stays blocked until the
// host writes.
func (p *process) AwaitingInput() (bool, error) {
	if p.ended() {
		return false, errors.New("the program has ended")
	}
	pid, err := p.pid()
	if err != nil {
		return false, fmt.Errorf("awaiting input: %w", err)
	}
	ok, err := p.s.watch.inStdinRead(int32(pid), readSettle)
	if err != nil {
		return false, fmt.Errorf("awaiting input: %w", err)
	}
	return ok, nil
}
