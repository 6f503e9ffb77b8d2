package linux

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

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/hostdir"
	"github.com/coderun/coderun/sandbox/internal/procfs"
)

var _ sandbox.Interactive = (*Runtime)(nil)

// NewSandbox creates a long-lived sandbox: a workspace and its limits, in
// which programs are started one at a time, each in a fresh box.
func (rt *Runtime) NewSandbox(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if rt.closed.Load() {
		return nil, ErrClosed
	}
	if err := spec.Validate(rt.opts.Defaults); err != nil {
		return nil, err
	}
	lim := spec.Limits
	s := &longSandbox{rt: rt, id: newID(), slot: rt.nextSlot(), lim: lim}
	uidMap, _ := idMappings(rt.opts.UIDBase, s.slot)
	var err error
	if s.ws, err = rt.newWorkspace(s.id, lim.WorkspaceBytes, uidMap[1].HostID); err != nil {
		return nil, err
	}
	if _, err := hostdir.WriteFiles(s.ws.work(), spec.Files, s.ws.hostUID, s.ws.hostUID); err != nil {
		s.ws.remove(rt.logf)
		return nil, err
	}
	rt.mu.Lock()
	rt.sandboxes[s] = true
	rt.mu.Unlock()
	return s, nil
}

// longSandbox implements sandbox.Sandbox.
type longSandbox struct {
	rt   *Runtime
	id   string
	slot int // the same host ids for every program, so files stay theirs
	lim  sandbox.Limits
	ws   *workspace

	mu      sync.Mutex
	current *process
	beside  map[*process]bool // the programs StartBeside started, until they end
	closed  bool
	// files is held (shared) by usingFiles while it takes hold of the
	// workspace and (exclusive) by Close while it lets go of it.
	files sync.RWMutex
}

// usingFiles holds the workspace for a file operation and returns its
// work/ directory, or fails when the sandbox is closed; the caller calls
// done when it has finished. The workspace is a detached mount reached by
// a descriptor's number (/proc/self/fd/N), a number that, once Close has
// closed it, the next descriptor opened takes: another sandbox's workspace
// among them. So each operation goes through a descriptor of its own,
// duplicated while Close cannot run, which keeps this workspace (and no
// other) for as long as the operation needs it.
func (s *longSandbox) usingFiles() (work string, done func(), err error) {
	s.files.RLock()
	defer s.files.RUnlock()
	if s.isClosed() {
		return "", nil, errors.New("sandbox closed")
	}
	fd, err := unix.FcntlInt(s.ws.mnt.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("workspace: %w", err)
	}
	return filepath.Join("/proc/self/fd", strconv.Itoa(fd), "work"), func() { unix.Close(fd) }, nil
}

func (s *longSandbox) ID() string { return s.id }

func (s *longSandbox) Start(ctx context.Context, prog sandbox.Program) (sandbox.Process, error) {
	return s.start(ctx, prog, false)
}

var _ sandbox.SideBySide = (*longSandbox)(nil)

// StartBeside starts prog in a box of its own over the sandbox's
// workspace, whatever else runs.
func (s *longSandbox) StartBeside(ctx context.Context, prog sandbox.Program) (sandbox.Process, error) {
	return s.start(ctx, prog, true)
}

func (s *longSandbox) start(ctx context.Context, prog sandbox.Program, beside bool) (sandbox.Process, error) {
	req := sandbox.Request{Language: prog.Language, Code: prog.Code, Env: prog.Env}
	interp, err := req.Validate(s.rt.opts.Defaults)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("sandbox closed")
	}
	if !beside && s.current != nil && !s.current.done() {
		return nil, errors.New("a program is still running in this sandbox")
	}
	lim := s.lim
	if prog.Limits != nil {
		lim = prog.Limits.WithDefaults(s.lim)
		lim.WorkspaceBytes = s.lim.WorkspaceBytes
		if err := lim.Validate(); err != nil {
			return nil, err
		}
	}
	b, err := s.rt.create(ctx, interp, prog.Env, false, s.ws, s.slot)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	ex, err := b.launch(lim, nil, prog.Env, "", prog.Code, false)
	if err != nil {
		b.destroy()
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	b.keepOutputs = true // the caller reads them to the end; see eofCloser
	stdin, err := procfs.IDOf(b.stdin)
	if err != nil {
		b.kill()
		ex.wait(context.Background())
		b.destroy()
		return nil, fmt.Errorf("start %s: %w", prog.Language, err)
	}
	p := &process{ex: ex, finished: make(chan struct{}), stdout: &eofCloser{f: b.stdout}, stderr: &eofCloser{f: b.stderr}, stdin: stdin}
	if !beside {
		s.current = p
		return p, nil
	}
	if s.beside == nil {
		s.beside = map[*process]bool{}
	}
	s.beside[p] = true
	p.onEnd = func() {
		s.mu.Lock()
		delete(s.beside, p)
		s.mu.Unlock()
	}
	return p, nil
}

func (s *longSandbox) WriteFile(path string, data []byte, mode os.FileMode) error {
	if _, err := sandbox.CleanPath(path); err != nil {
		return err
	}
	work, done, err := s.usingFiles()
	if err != nil {
		return err
	}
	defer done()
	_, err = hostdir.WriteFiles(work, []sandbox.File{{Path: path, Content: data, Mode: mode}}, s.ws.hostUID, s.ws.hostUID)
	return err
}

func (s *longSandbox) ReadFile(path string, max int64) ([]byte, bool, error) {
	p, err := sandbox.CleanPath(path)
	if err != nil {
		return nil, false, err
	}
	work, done, err := s.usingFiles()
	if err != nil {
		return nil, false, err
	}
	defer done()
	return hostdir.ReadFile(work, p, max)
}

func (s *longSandbox) Files() ([]sandbox.FileInfo, bool, error) {
	work, done, err := s.usingFiles()
	if err != nil {
		return nil, false, err
	}
	defer done()
	return hostdir.CollectFiles(work, nil, 0)
}

var _ sandbox.Archiver = (*longSandbox)(nil)

// PutArchive unpacks a tar stream into the workspace (see hostdir.PutArchive).
func (s *longSandbox) PutArchive(ctx context.Context, r io.Reader) error {
	work, done, err := s.usingFiles()
	if err != nil {
		return err
	}
	defer done()
	return hostdir.PutArchive(ctx, work, r, s.ws.hostUID, s.ws.hostUID)
}

// GetArchive packs workspace paths as a tar stream (see hostdir.GetArchive).
// The stream holds the workspace it opened, whatever happens to the sandbox.
func (s *longSandbox) GetArchive(ctx context.Context, paths []string) (io.ReadCloser, error) {
	work, done, err := s.usingFiles()
	if err != nil {
		return nil, err
	}
	defer done()
	return hostdir.GetArchive(ctx, work, paths)
}

func (s *longSandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *longSandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	running := make([]*process, 0, 1+len(s.beside))
	if s.current != nil {
		running = append(running, s.current)
	}
	for p := range s.beside {
		running = append(running, p)
	}
	s.mu.Unlock()
	for _, p := range running {
		p.Kill()
	}
	for _, p := range running {
		p.Wait(context.Background())
	}
	s.files.Lock() // no file operation is taking hold of the workspace
	s.ws.remove(s.rt.logf)
	s.files.Unlock()
	s.rt.mu.Lock()
	delete(s.rt.sandboxes, s)
	s.rt.mu.Unlock()
	return nil
}

// process implements sandbox.Process.
type process struct {
	ex             *execution
	stdout, stderr *eofCloser
	// stdin is the program's stdin pipe.
	stdin    procfs.ID
	once     sync.Once
	finished chan struct{}
	result   *sandbox.Result
	onEnd    func() // set for a program started beside others
}

func (p *process) Stdin() io.WriteCloser { return p.ex.b.stdin }
func (p *process) Stdout() io.Reader     { return p.stdout }
func (p *process) Stderr() io.Reader     { return p.stderr }

// eofCloser closes the host's end of an output pipe when the reader reaches
// its end: output written just before the program ended is still read after
// Wait has returned, and no descriptor is left behind.
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

func (p *process) done() bool {
	select {
	case <-p.finished:
		return true
	default:
		return false
	}
}

// Signal finds the program (init's child, in its own session) and signals
// its process group from the host.
func (p *process) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v not supported", sig)
	}
	if p.done() {
		return errors.New("program has ended")
	}
	init := p.ex.b.init.pid
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", init, init))
	if err != nil {
		return fmt.Errorf("find program: %w", err)
	}
	var errs []error
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if err := syscall.Kill(-pid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *process) Wait(ctx context.Context) *sandbox.Result {
	p.once.Do(func() {
		p.result = p.ex.wait(ctx)
		b := p.ex.b
		b.destroy()
		close(p.finished)
		if p.onEnd != nil {
			p.onEnd()
		}
	})
	<-p.finished
	return p.result
}

func (p *process) Kill() { p.ex.b.kill() }

// CPUTime reads the sandbox's cgroup: the program's CPU time since it was
// launched (its processes are the only ones in the group).
func (p *process) CPUTime() (time.Duration, error) {
	cg := p.ex.b.cg
	if cg == nil {
		return 0, fmt.Errorf("cpu time without cgroups: %w", errors.ErrUnsupported)
	}
	st, err := cg.stats()
	if err != nil {
		return 0, err
	}
	return max(0, st.cpu-p.ex.base.cpu), nil
}

// AwaitingInput reads, from the host's /proc, the system call the
// program's main thread is blocked in: it must be read(2) on a descriptor
// of the program's stdin pipe. The host holds that pipe's only write end
// (the sandbox cannot open it for writing: the pipe is host root's, mode
// 0600), so a read blocked on it stays blocked until the host writes.
func (p *process) AwaitingInput() (bool, error) {
	if p.done() {
		return false, errors.New("program has ended")
	}
	pid := p.ex.b.program
	if pid <= 0 {
		return false, errors.New("program's host pid unknown")
	}
	return procfs.Reading(pid, p.stdin)
}
