package gvisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
)

// cpuPoll is how often a box's CPU time is checked against the limit.
const cpuPoll = 20 * time.Millisecond

// Run validates req and runs it in a gVisor sandbox of its own, which is
// removed afterwards.
func (r *Runtime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	in, err := req.Validate(sandbox.DefaultLimits)
	if err != nil {
		return nil, err
	}
	select {
	case <-r.closed:
		return nil, errors.New("gvisor runtime: closed")
	default:
	}
	b, err := r.newBox(req.Limits)
	if err != nil {
		return setupError(err), nil
	}
	defer r.discard(b)
	snap, err := hostdir.WriteFiles(b.ws.work(), req.Files, r.opts.UID, r.opts.UID)
	if err != nil {
		return setupError(fmt.Errorf("placing the input files: %w", err)), nil
	}
	argv, err := bootstrap.Argv(in)
	if err != nil {
		return setupError(err), nil
	}
	if err := writeSpec(b.dir, r.spec(b, r.process(argv, baseEnv, req.Limits))); err != nil {
		return setupError(err), nil
	}
	// Nothing but the sandbox touches its workspace while it runs: the
	// Sentry may cache what it knows of the files (exclusive access),
	// which makes creating one some 2.5 times faster than revalidating.
	cmd := r.runsc("--file-access-mounts=exclusive", "--debug-log="+b.logFile(), "--debug-command=run",
		"run", "--bundle="+b.dir, "--pass-fd=3:3", "--pass-fd=4:4", b.id)
	res := r.execute(ctx, b, cmd, bootstrap.Payload(req.Env, req.Name, req.Code), req.Stdin, req.Limits)
	if res.Reason == sandbox.ReasonSetupError {
		return res, nil
	}
	if err := hostdir.Collect(res, b.ws.work(), snap, req.FileContents); err != nil {
		res.Error = joinNote(res.Error, "reading the output files: "+err.Error())
	}
	return res, nil
}

// execute runs cmd (runsc starting a program in b whose bootstrap reads
// payload on its descriptor 3), feeds it stdin, holds it to l, and
// reports how it ended. Every process of b is dead when it returns.
func (r *Runtime) execute(ctx context.Context, b *box, cmd *exec.Cmd, payload, stdin []byte, l sandbox.Limits) *sandbox.Result {
	payloadR, payloadW, err := os.Pipe()
	if err != nil {
		return setupError(fmt.Errorf("handing over the program: %w", err))
	}
	defer payloadR.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		payloadW.Close()
		return setupError(err)
	}
	defer devNull.Close()
	cmd.ExtraFiles = []*os.File{payloadR, devNull}

	overflow := make(chan struct{})
	var once sync.Once
	over := func() { once.Do(func() { close(overflow) }) }
	stdout := sandbox.NewOutputBuffer(l.OutputBytes, over)
	stderr := sandbox.NewOutputBuffer(l.OutputBytes, over)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Stdin = bytes.NewReader(stdin)
	// Output pipes the program's background processes might hold are
	// not waited for past the program's end.
	cmd.WaitDelay = 100 * time.Millisecond

	start := time.Now()
	if err := cmd.Start(); err != nil {
		payloadW.Close()
		return setupError(fmt.Errorf("starting runsc: %w", err))
	}
	payloadR.Close()
	go func() {
		defer payloadW.Close()
		_, _ = payloadW.Write(payload)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	res := &sandbox.Result{Runtime: Name}
	var reason sandbox.Reason
	var runErr error
	tick := time.NewTicker(cpuPoll)
	defer tick.Stop()
	wall := time.NewTimer(l.WallTime)
	defer wall.Stop()
	ended := false
wait:
	for {
		select {
		case runErr = <-exited:
			ended = true
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
			if u, s, err := b.cg.CPU(); err == nil && u+s >= l.CPUTime {
				reason = sandbox.ReasonCPULimit
			}
		}
		if reason != "" {
			break
		}
	}
	res.Usage.Wall = time.Since(start)
	// The Sentry, the gofer and with them every process of the program end
	// here, and runsc with them: nothing of the run outlives it.
	if err := b.cg.killAll(); err != nil {
		res.Error = joinNote(res.Error, err.Error())
	}
	if !ended {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		runErr = <-exited
	}
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	res.Usage.CPUUser, res.Usage.CPUSystem, _ = b.cg.CPU()
	res.Usage.PeakMemory, _ = b.cg.PeakMemory()
	oom, _ := b.cg.OOMKills()

	if reason == "" && (stdout.Truncated() || stderr.Truncated()) {
		// The program ended, after writing past the limit, before the
		// watch saw it overflow.
		reason = sandbox.ReasonOutputLimit
	}
	if reason != "" {
		res.Reason, res.ExitCode, res.Signal = reason, -1, "SIGKILL"
		return res
	}
	ws, statusErr := readExitStatus(b.logFile())
	switch {
	case oom > 0 && (statusErr != nil || ws.Signaled() || ws.ExitStatus() != 0):
		// The kernel killed the Sentry (or a helper) for the box's
		// memory limit, and with it the program.
		res.Reason, res.ExitCode, res.Signal = sandbox.ReasonMemoryLimit, -1, "SIGKILL"
		return res
	case statusErr != nil && killedBySignal(runErr):
		// runsc itself was killed (from outside: the sandbox's processes
		// were killed with it, above).
		res.Reason, res.ExitCode = sandbox.ReasonKilled, -1
		res.Error = joinNote(res.Error, "runsc was killed: "+runErr.Error())
		return res
	case statusErr != nil:
		// runsc ran no program to its end: it could not set the sandbox
		// up, and said why on its standard error.
		msg := strings.TrimSpace(res.Stderr)
		if msg == "" {
			msg = lastLogError(b.logFile())
		}
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		return setupError(fmt.Errorf("runsc: %s (%v)", msg, statusErr))
	}
	res.Reason = sandbox.ReasonExited
	if ws.Signaled() {
		res.ExitCode, res.Signal = -1, unix.SignalName(ws.Signal())
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	switch {
	case oom > 0:
		// A process of the program's was killed, and the program went on.
		res.Error = joinNote(res.Error, "a process hit the memory limit and the kernel killed it (OOM)")
	case (res.Signal == "SIGXCPU" || res.Signal == "SIGKILL") && res.Usage.CPU() >= l.CPUTime:
		res.Reason = sandbox.ReasonCPULimit
	}
	return res
}

// killedBySignal reports whether err says a process was ended by a signal.
func killedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
