package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
)

// cpuPoll is how often the container's CPU time is checked against the limit.
const cpuPoll = 20 * time.Millisecond

// Run validates req and runs it in a container of its own, which is
// removed afterwards.
func (r *Runtime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	in, err := req.Validate(sandbox.DefaultLimits)
	if err != nil {
		return nil, err
	}
	select {
	case <-r.closed:
		return nil, errors.New("docker runtime: closed")
	default:
	}
	b, pooled, err := r.take(ctx, req.Limits)
	if err != nil {
		return setupError(err), nil
	}
	defer r.discard(b)
	snap, err := hostdir.WriteFiles(b.work(), req.Files, r.opts.UID, r.opts.UID)
	if err != nil {
		return setupError(fmt.Errorf("placing the input files: %w", err)), nil
	}
	argv, err := bootstrap.Argv(in)
	if err != nil {
		return setupError(err), nil
	}
	if err := os.WriteFile(filepath.Join(b.code(), "payload"), bootstrap.Payload(req.Env, req.Name, req.Code), 0o644); err != nil {
		return setupError(fmt.Errorf("handing over the program: %w", err)), nil
	}
	res := r.exec(ctx, b, in.Language, argv, req.Stdin, req.Limits)
	res.Pooled = pooled
	if res.Reason == sandbox.ReasonSetupError {
		return res, nil
	}
	res.Files, res.FilesTruncated, err = hostdir.CollectFiles(b.work(), snap, req.FileContents)
	if err != nil {
		res.Error = joinNote(res.Error, "reading the output files: "+err.Error())
	}
	return res, nil
}

// exec runs argv (a bootstrap reading its payload) in b under limits,
// feeds it stdin, and reports how it ended. Every process in b is dead
// when it returns.
func (r *Runtime) exec(ctx context.Context, b *box, lang sandbox.Language, argv []string, stdin []byte, l sandbox.Limits) *sandbox.Result {
	// The container's limits are its own; a program's CPU time and open
	// files are lowered for it (ulimit sets soft and hard limits alike). The
	// CPU rlimit is a backstop a second past the limit: the host's own
	// check of the cgroup's CPU time stops the program at the limit.
	//
	// The payload is a regular file, which the bootstrap reads from fd 3;
	// bash's bootstrap reads what follows the environment by opening
	// /dev/fd/3 anew, which for a file starts over: bash gets a pipe.
	shell, open3 := "/bin/sh", "exec 3<"+payloadPath
	if lang == sandbox.Bash {
		shell, open3 = "/bin/bash", "exec 3< <(exec cat "+payloadPath+")"
	}
	script := "ulimit -n " + strconv.Itoa(l.OpenFiles) +
		" && ulimit -c 0 && ulimit -t " + strconv.FormatInt(int64(math.Ceil(l.CPUTime.Seconds()))+1, 10) +
		" && " + open3 + " 4>/dev/null && exec \"$@\""
	cmd := append([]string{shell, "-c", script, "sh"}, argv...)
	if r.bin.init() != "" {
		cmd = append([]string{initPath}, cmd...)
	}
	user := strconv.Itoa(r.opts.UID) + ":" + strconv.Itoa(r.opts.UID)
	ex, err := r.cli.ContainerExecCreate(ctx, b.id, container.ExecOptions{
		User: user, Cmd: cmd, Env: baseEnv, WorkingDir: sandbox.WorkDir,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return setupError(fmt.Errorf("creating the exec: %w", err))
	}
	start := time.Now()
	hj, err := r.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return setupError(fmt.Errorf("starting the program: %w", err))
	}
	defer hj.Close()

	overflow := make(chan struct{})
	var once sync.Once
	over := func() { once.Do(func() { close(overflow) }) }
	stdout := &capped{max: l.OutputBytes, over: over}
	stderr := &capped{max: l.OutputBytes, over: over}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	}()
	go func() {
		if len(stdin) > 0 {
			_, _ = hj.Conn.Write(stdin)
		}
		_ = hj.CloseWrite()
	}()

	ended, err := r.watch(ctx, ex.ID)
	if err != nil {
		_ = b.cg.killAll()
		return setupError(err)
	}
	res := &sandbox.Result{Runtime: Name}
	var reason sandbox.Reason
	tick := time.NewTicker(cpuPoll)
	defer tick.Stop()
	wall := time.NewTimer(l.WallTime)
	defer wall.Stop()
wait:
	for {
		select {
		case <-ended:
			break wait
		case <-overflow:
			reason = sandbox.ReasonOutputLimit
		case <-wall.C:
			reason = sandbox.ReasonTimeout
		case <-ctx.Done():
			reason = sandbox.ReasonKilled
			res.Error = "stopped: " + ctx.Err().Error()
		case <-r.closed:
			reason = sandbox.ReasonKilled
			res.Error = "stopped: the runtime closed"
		case <-tick.C:
			if u, s, err := b.cg.cpu(); err == nil && u+s >= l.CPUTime {
				reason = sandbox.ReasonCPULimit
			}
		}
		if reason != "" {
			break
		}
	}
	res.Usage.Wall = time.Since(start)
	code, codeErr := -1, error(nil)
	if reason == "" {
		// The program ended by itself: its output ends with it unless a
		// background process holds the stream, and the engine has its exit
		// code. Both are read before the container is killed, whose
		// stopping the engine then handles.
		select {
		case <-copied:
		case <-time.After(100 * time.Millisecond):
		}
		code, codeErr = r.exitCode(ex.ID)
	}
	// What the container used, and whether the kernel killed a process of
	// it for its memory, is read before the kill too: the engine may remove
	// the cgroup as soon as the container's init is gone.
	st := b.cg.stats()
	// The program, its background processes and the container's init end
	// here: nothing of the run outlives it.
	if err := b.cg.killAll(); err != nil {
		res.Error = joinNote(res.Error, err.Error())
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		res.Error = joinNote(res.Error, "the output stream did not end after the program's")
	}
	res.Stdout, res.StdoutTruncated = stdout.buf.String(), stdout.truncated
	res.Stderr, res.StderrTruncated = stderr.buf.String(), stderr.truncated
	st = st.later(b.cg.stats())
	res.Usage.CPUUser, res.Usage.CPUSystem, res.Usage.PeakMemory = st.user, st.system, st.peak

	if reason == "" && (stdout.truncated || stderr.truncated) {
		// The program ended, after writing past the limit, before the
		// watch saw it overflow.
		reason = sandbox.ReasonOutputLimit
	}
	if reason != "" {
		res.Reason, res.ExitCode, res.Signal = reason, -1, "SIGKILL"
		return res
	}
	if codeErr != nil {
		res.Reason, res.ExitCode = sandbox.ReasonKilled, -1
		res.Error = joinNote(res.Error, codeErr.Error())
		return res
	}
	res.Reason, res.ExitCode = sandbox.ReasonExited, code
	// The engine reports a program a signal ended as 128+N, as a shell does.
	if code > 128 && code < 128+65 {
		res.ExitCode, res.Signal = -1, unix.SignalName(syscall.Signal(code-128))
	}
	oom := st.oomKills
	switch {
	case oom > 0 && (res.ExitCode != 0 || res.Signal != ""):
		res.Reason = sandbox.ReasonMemoryLimit
	case oom > 0:
		// A process of the program's was killed, and the program went on
		// to succeed.
		res.Error = joinNote(res.Error, "a process hit the memory limit and the kernel killed it (OOM)")
	case (res.Signal == "SIGXCPU" || res.Signal == "SIGKILL") && res.Usage.CPU() >= l.CPUTime:
		res.Reason = sandbox.ReasonCPULimit
	}
	return res
}

// watch returns a channel closed when the exec's process has ended, seen
// on the host through a pidfd.
func (r *Runtime) watch(ctx context.Context, execID string) (<-chan struct{}, error) {
	ended := make(chan struct{})
	var pid int
	for i := 0; ; i++ {
		ins, err := r.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return nil, fmt.Errorf("inspecting the exec: %w", err)
		}
		if ins.Pid != 0 && ins.Running {
			pid = ins.Pid
			break
		}
		if !ins.Running && ins.Pid != 0 || i > 500 {
			close(ended) // it has ended already
			return ended, nil
		}
		time.Sleep(time.Millisecond)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		close(ended)
		return ended, nil
	}
	if err != nil {
		return nil, fmt.Errorf("watching the program: %w", err)
	}
	go func() {
		defer unix.Close(fd)
		defer close(ended)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				return
			}
		}
	}()
	return ended, nil
}

// exitCode waits for the engine to record the exec's exit and returns its code.
func (r *Runtime) exitCode(execID string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ins, err := r.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return -1, fmt.Errorf("reading the exit code: %w", err)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, errors.New("the engine did not record the program's exit")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// capped keeps the first max bytes written to it and calls over once more
// come; it accepts everything, so the stream goes on being drained.
type capped struct {
	buf       bytes.Buffer
	max       int64
	truncated bool
	over      func()
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) > room {
		c.buf.Write(p[:max(room, 0)])
		c.truncated = true
		c.over()
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
