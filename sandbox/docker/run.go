package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
)

// cpuPoll is how often the container's CPU time is checked against the limit.
const cpuPoll = 20 * time.Millisecond

// Run validates req and runs it in a container of its own (a pooled one
// when one is ready), which is removed afterwards.
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
	b, pooled, err := r.take(ctx, in, req.Limits)
	if err != nil {
		return setupError(err), nil
	}
	defer r.discard(b)
	snap, err := hostdir.WriteFiles(b.work(), req.Files, r.opts.UID, r.opts.UID)
	if err != nil {
		return setupError(fmt.Errorf("placing the input files: %w", err)), nil
	}
	res := r.launch(ctx, b, bootstrap.Payload(req.Env, req.Name, req.Code), req.Stdin, req.Limits)
	res.Pooled = pooled
	if res.Reason == sandbox.ReasonSetupError {
		return res, nil
	}
	if err := hostdir.Collect(res, b.work(), snap, req.FileContents); err != nil {
		res.Error = joinNote(res.Error, "reading the output files: "+err.Error())
	}
	return res, nil
}

// pipeBuffer is Linux's default pipe capacity.
const pipeBuffer = 64 << 10

// launch hands b's waiting bootstrap its payload and stdin under limits,
// and reports how the program ended. Every process in b is dead when it
// returns.
func (r *Runtime) launch(ctx context.Context, b *box, payload, stdin []byte, l sandbox.Limits) *sandbox.Result {
	overflow := make(chan struct{})
	var once sync.Once
	over := func() { once.Do(func() { close(overflow) }) }
	stdout := sandbox.NewOutputBuffer(l.OutputBytes, over)
	stderr := sandbox.NewOutputBuffer(l.OutputBytes, over)
	var copies sync.WaitGroup
	for _, c := range []struct {
		w *sandbox.OutputBuffer
		f *os.File
	}{{stdout, b.p.out}, {stderr, b.p.err}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(c.w, c.f)
		}()
	}
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()

	base := b.cg.stats()
	// The program's peak, not its interpreter's start, made ahead (where
	// the kernel can reset it).
	b.cg.ResetPeak()
	start := time.Now()
	go func() {
		// A program may never read its input; that is its business.
		if len(stdin) > 0 {
			_, _ = b.p.in.Write(stdin)
		}
		b.p.in.Close()
	}()
	send := func() {
		_, _ = b.p.payload.Write(payload)
		b.p.payload.Close()
	}
	if len(payload) <= pipeBuffer {
		send() // fits in the pipe: no need to wait for the reader
	} else {
		go send()
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
		case <-b.ended:
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
			if u, s, err := b.cg.CPU(); err == nil && u+s-base.user-base.system >= l.CPUTime {
				reason = sandbox.ReasonCPULimit
			}
		}
		if reason != "" {
			break
		}
	}
	res.Usage.Wall = time.Since(start)
	if reason == "" {
		// The program ended by itself: its output ends with it unless a
		// background process holds the stream.
		select {
		case <-copied:
		case <-time.After(100 * time.Millisecond):
		}
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
	st = st.later(b.cg.stats())
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	res.Usage.CPUUser, res.Usage.CPUSystem = st.user-base.user, st.system-base.system
	res.Usage.PeakMemory = st.peak

	if reason == "" && (stdout.Truncated() || stderr.Truncated()) {
		// The program ended, after writing past the limit, before the
		// watch saw it overflow.
		reason = sandbox.ReasonOutputLimit
	}
	outcome(res, b, reason, st.oomKills-base.oomKills, l)
	return res
}

// outcome sets how the program of b ended: by reason, when the host
// stopped it, else as its init reported, told apart by the cgroup's oom
// kills since its start and its CPU time against l's limit (zero:
// unbounded). res.Usage is set already.
func outcome(res *sandbox.Result, b *box, reason sandbox.Reason, oom int64, l sandbox.Limits) {
	if reason != "" {
		res.Reason, res.ExitCode, res.Signal = reason, -1, "SIGKILL"
		return
	}
	if b.stErr != nil && oom > 0 {
		// The kernel's OOM killer took the container's init with the
		// program (under runsc: the Sentry, which holds every process's
		// memory), so no status came.
		res.Reason, res.ExitCode, res.Signal = sandbox.ReasonMemoryLimit, -1, "SIGKILL"
		res.Error = joinNote(res.Error, "the container hit its memory limit and the kernel killed it (OOM), its init with it")
		return
	}
	if b.stErr != nil {
		res.Reason, res.ExitCode = sandbox.ReasonKilled, -1
		res.Error = joinNote(res.Error, b.stErr.Error())
		return
	}
	res.Reason = sandbox.ReasonExited
	switch ws := b.status; {
	case ws.Signaled():
		res.ExitCode, res.Signal = -1, unix.SignalName(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	switch {
	case oom > 0 && (res.ExitCode != 0 || res.Signal != ""):
		res.Reason = sandbox.ReasonMemoryLimit
	case oom > 0:
		// A process of the program's was killed, and the program went on
		// to succeed.
		res.Error = joinNote(res.Error, "a process hit the memory limit and the kernel killed it (OOM)")
	case (res.Signal == "SIGXCPU" || res.Signal == "SIGKILL") && l.CPUTime > 0 && res.Usage.CPU() >= l.CPUTime:
		res.Reason = sandbox.ReasonCPULimit
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
