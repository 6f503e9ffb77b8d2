package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
	"github.com/coderun/coderun/sandbox/internal/procfs"
)

// Long-lived sandboxes (sandbox.Interactive), what sessions run on. A
// sandbox is a workspace tmpfs on the host, made at NewSandbox, with its
// limits; each program started in it runs in a container of its own over
// that workspace (its /work, /tmp and /dev/shm), made as a one-shot run's
// (the same init, confinement and pipes) but living as long as its
// program: a session's interpreter is one program, so its container lives
// as long as the session, and a restarted interpreter gets a fresh
// container, fresh namespaces and a fresh process tree, as the linux
// runtime gives it a fresh box. The program talks to the caller through
// the init's pipes (its standard streams flow, unbuffered by the host:
// a reader that does not read stops a writer), is signalled in its process
// group from the host, and ends with every process of its container
// (killed through the cgroup), which the runtime then removes.
//
// AwaitingInput reads the host's /proc, as the linux runtime does: the
// program's main thread blocked in read(2) on its stdin pipe. A long-lived
// sandbox's program gets the host's named pipe itself as fd 0 (the init's
// --direct-stdin; a one-shot run's gets a copy in a pipe of the init's),
// root's and read-only to others, whose only writer is the host: the
// program cannot open it for writing (/proc/self/fd/0 included) to wake
// itself, so a read the host sees blocked stays blocked until the host
// writes. The host knows the pipe by its device and inode.

var (
	_ sandbox.Interactive = (*Runtime)(nil)
	_ sandbox.Archiver    = (*longSandbox)(nil)
)

// NewSandbox creates a long-lived sandbox: its workspace, with spec's
// files, and its limits. No container runs until a program starts.
func (r *Runtime) NewSandbox(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if r.sentry {
		return nil, ErrNoSessionsOnRunsc
	}
	if err := spec.Validate(sandbox.DefaultLimits); err != nil {
		return nil, err
	}
	name, err := newName()
	if err != nil {
		return nil, err
	}
	s := &longSandbox{r: r, id: name, dir: filepath.Join(r.opts.StateDir, name), lim: spec.Limits}
	if err := r.makeWorkspace(s.dir, s.lim.WorkspaceBytes); err != nil {
		return nil, errors.Join(fmt.Errorf("docker: new sandbox: %w", err), removeWorkspace(s.dir))
	}
	if _, err := hostdir.WriteFiles(s.work(), spec.Files, r.opts.UID, r.opts.UID); err != nil {
		return nil, errors.Join(fmt.Errorf("docker: new sandbox: placing the files: %w", err), removeWorkspace(s.dir))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.closed:
		return nil, errors.Join(errors.New("docker runtime: closed"), removeWorkspace(s.dir))
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
	r   *Runtime
	id  string
	dir string // the state directory: the workspace tmpfs is its ws/
	lim sandbox.Limits

	mu      sync.Mutex
	current *process
	closed  bool
	// files is held (shared) by each file operation and (exclusive) by
	// Close while it removes the workspace.
	files sync.RWMutex
}

func (s *longSandbox) work() string { return filepath.Join(s.dir, "ws", "work") }

func (s *longSandbox) ID() string { return s.id }

// Start starts prog in a container of its own over the sandbox's
// workspace, under the sandbox's limits or prog's.
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
	if prev := s.current; prev != nil {
		if !prev.ended() {
			return nil, errors.New("a program is still running in this sandbox")
		}
		// Ended, but perhaps not waited for: what it left running ends
		// before the next program starts.
		_ = prev.b.cg.killAll()
	}
	b, err := s.r.newBoxIn(ctx, in, lim, s.dir)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	b.p.keepOutputs = true // the caller reads them to their end: eofCloser
	p := &process{s: s, b: b, lim: lim, killed: make(chan struct{}), finished: make(chan struct{}),
		stdout: &eofCloser{f: b.p.out}, stderr: &eofCloser{f: b.p.err}}
	if p.stdin, err = procfs.IDOf(b.p.in); err != nil {
		s.r.discard(b)
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	select {
	case <-b.ended: // before it was ready: Wait reports how
	default:
		if err := p.find(); err != nil {
			s.r.discard(b)
			return nil, fmt.Errorf("start %s: %w", prog.Language, err)
		}
	}
	p.base = b.cg.stats()
	b.cg.ResetPeak()
	p.start = time.Now()
	payload := bootstrap.Payload(prog.Env, "", prog.Code)
	send := func() {
		_, _ = b.p.payload.Write(payload)
		b.p.payload.Close()
	}
	if len(payload) <= pipeBuffer {
		send()
	} else {
		go send()
	}
	s.current = p
	return p, nil
}

// using holds the workspace for a file operation, or fails when the
// sandbox is closed; the caller calls done when it has finished.
func (s *longSandbox) using() (done func(), err error) {
	s.files.RLock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.files.RUnlock()
		return nil, errors.New("sandbox closed")
	}
	return s.files.RUnlock, nil
}

func (s *longSandbox) WriteFile(path string, data []byte, mode os.FileMode) error {
	if _, err := sandbox.CleanPath(path); err != nil {
		return err
	}
	done, err := s.using()
	if err != nil {
		return err
	}
	defer done()
	_, err = hostdir.WriteFiles(s.work(), []sandbox.File{{Path: path, Content: data, Mode: mode}}, s.r.opts.UID, s.r.opts.UID)
	return err
}

func (s *longSandbox) ReadFile(path string, max int64) ([]byte, bool, error) {
	p, err := sandbox.CleanPath(path)
	if err != nil {
		return nil, false, err
	}
	done, err := s.using()
	if err != nil {
		return nil, false, err
	}
	defer done()
	return hostdir.ReadFile(s.work(), p, max)
}

func (s *longSandbox) Files() ([]sandbox.FileInfo, bool, error) {
	done, err := s.using()
	if err != nil {
		return nil, false, err
	}
	defer done()
	return hostdir.CollectFiles(s.work(), nil, 0)
}

// PutArchive unpacks a tar stream into the workspace (see hostdir.PutArchive).
func (s *longSandbox) PutArchive(ctx context.Context, r io.Reader) error {
	done, err := s.using()
	if err != nil {
		return err
	}
	defer done()
	return hostdir.PutArchive(ctx, s.work(), r, s.r.opts.UID, s.r.opts.UID)
}

// GetArchive packs workspace paths as a tar stream (see hostdir.GetArchive).
func (s *longSandbox) GetArchive(ctx context.Context, paths []string) (io.ReadCloser, error) {
	done, err := s.using()
	if err != nil {
		return nil, err
	}
	defer done()
	return hostdir.GetArchive(ctx, s.work(), paths)
}

// Close kills the running program (its Wait reports ReasonKilled) and
// removes the workspace.
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
	s.files.Lock()
	err := removeWorkspace(s.dir)
	s.files.Unlock()
	s.r.mu.Lock()
	delete(s.r.live, s)
	s.r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("docker: closing sandbox %s: %w", s.id, err)
	}
	return nil
}

// process is a program running in a long-lived sandbox's container.
type process struct {
	s              *longSandbox
	b              *box
	lim            sandbox.Limits
	stdout, stderr *eofCloser
	pid            int       // the program (the init's child), as the host numbers it
	stdin          procfs.ID // its stdin pipe
	base           usage     // the cgroup's usage when it started
	start          time.Time

	killOnce sync.Once
	killed   chan struct{} // closed by Kill
	waitOnce sync.Once
	finished chan struct{} // closed when Wait has its result
	result   *sandbox.Result
}

// find learns the program's host pid: the init's only child.
func (p *process) find() error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.b.initPid))
	if err != nil {
		return fmt.Errorf("finding the program: %w", err)
	}
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p.b.initPid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			p.pid, _ = strconv.Atoi(f[0])
			break
		}
	}
	if p.pid <= 0 {
		return errors.New("finding the program: the container's init has no child")
	}
	return nil
}

func (p *process) Stdin() io.WriteCloser { return p.b.p.in }
func (p *process) Stdout() io.Reader     { return p.stdout }
func (p *process) Stderr() io.Reader     { return p.stderr }

// ended reports whether the program has ended (its init reported it, or
// died) or Wait has returned.
func (p *process) ended() bool {
	select {
	case <-p.b.ended:
		return true
	case <-p.finished:
		return true
	default:
		return false
	}
}

// Signal sends sig to the program's process group, from the host.
func (p *process) Signal(sig os.Signal) error {
	n, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v not supported", sig)
	}
	if p.ended() || p.pid <= 0 {
		return errors.New("program has ended")
	}
	if err := syscall.Kill(-p.pid, n); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling the program: %w", err)
	}
	return nil
}

// Kill kills every process of the program's container at once.
func (p *process) Kill() {
	p.killOnce.Do(func() { close(p.killed) })
	_ = p.b.cg.killAll()
}

// AwaitingInput reports whether the program's main thread is blocked in
// read(2) on its stdin pipe, as the host's /proc shows it.
func (p *process) AwaitingInput() (bool, error) {
	if p.ended() || p.pid <= 0 {
		return false, errors.New("program has ended")
	}
	return procfs.Reading(p.pid, p.stdin)
}

// CPUTime is the CPU time the container's processes have used since the
// program started.
func (p *process) CPUTime() (time.Duration, error) {
	u, s, err := p.b.cg.CPU()
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	return max(0, u+s-p.base.user-p.base.system), nil
}

// Wait waits for the program's end, holding it to its wall and CPU limits
// (zero: unbounded) meanwhile, then kills what is left of its container
// and removes it.
func (p *process) Wait(ctx context.Context) *sandbox.Result {
	p.waitOnce.Do(func() {
		p.result = p.wait(ctx)
		close(p.finished)
	})
	<-p.finished
	return p.result
}

func (p *process) wait(ctx context.Context) *sandbox.Result {
	b, r := p.b, p.s.r
	res := &sandbox.Result{Runtime: Name}
	var reason sandbox.Reason
	var wall <-chan time.Time
	if p.lim.WallTime > 0 {
		t := time.NewTimer(p.lim.WallTime - time.Since(p.start))
		defer t.Stop()
		wall = t.C
	}
	tick := time.NewTicker(cpuPoll)
	defer tick.Stop()
wait:
	for reason == "" {
		select {
		case <-b.ended:
			break wait
		case <-p.killed:
			reason = sandbox.ReasonKilled
		case <-wall:
			reason = sandbox.ReasonTimeout
		case <-ctx.Done():
			reason, res.Error = sandbox.ReasonKilled, "stopped: "+ctx.Err().Error()
		case <-r.closed:
			reason, res.Error = sandbox.ReasonKilled, "stopped: the runtime closed"
		case <-tick.C:
			if c, err := p.CPUTime(); err == nil && p.lim.CPUTime > 0 && c >= p.lim.CPUTime {
				reason = sandbox.ReasonCPULimit
			}
		}
	}
	res.Usage.Wall = time.Since(p.start)
	if reason == "" {
		select {
		case <-p.killed: // Kill's, before the end it caused
			reason = sandbox.ReasonKilled
		default:
		}
	}
	// Read before the kill: the engine may remove the cgroup once the
	// container's init is gone.
	st := b.cg.stats()
	if err := b.cg.killAll(); err != nil {
		res.Error = joinNote(res.Error, err.Error())
	}
	select {
	case <-b.ended: // the init's report, or its end, is read
	case <-time.After(5 * time.Second):
		res.Error = joinNote(res.Error, "the container's init was not seen to end")
	}
	st = st.later(b.cg.stats())
	res.Usage.CPUUser, res.Usage.CPUSystem = st.user-p.base.user, st.system-p.base.system
	res.Usage.PeakMemory = st.peak
	outcome(res, b, reason, st.oomKills-p.base.oomKills, p.lim)
	r.discard(b)
	return res
}

// eofCloser closes the host's end of an output pipe when the reader
// reaches its end: output written just before the program ended is still
// read after Wait has returned, and no descriptor is left behind.
type eofCloser struct {
	f    *os.File
	once sync.Once
}

func (e *eofCloser) Read(b []byte) (int, error) {
	n, err := e.f.Read(b)
	if err != nil {
		e.once.Do(func() { e.f.Close() })
	}
	return n, err
}
