package linux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"github.com/coderun/coderun/sandbox/hostdir"
	"golang.org/x/sys/unix"
)

// run executes req in b, which it consumes, and reports what happened.
func (b *box) run(ctx context.Context, req *sandbox.Request) *sandbox.Result {
	ex, err := b.launch(req.Limits, req.Files, req.Env, req.Name, req.Code, true)
	if err != nil {
		b.destroy()
		return &sandbox.Result{Runtime: Name, Pooled: b.pooled, ExitCode: -1, Reason: sandbox.ReasonSetupError, Error: err.Error()}
	}
	// Output: each stream captured up to the limit; one byte more stops the run.
	var outputs sync.WaitGroup
	var stdout, stderr []byte
	var outTrunc, errTrunc bool
	capture := func(f *os.File, out *[]byte, truncated *bool) {
		defer outputs.Done()
		*out, *truncated = readCapped(f, req.Limits.OutputBytes, ex.overflow)
	}
	outputs.Add(2)
	go capture(b.stdout, &stdout, &outTrunc)
	go capture(b.stderr, &stderr, &errTrunc)
	go func() {
		if len(req.Stdin) > 0 {
			_, _ = b.stdin.Write(req.Stdin) // EPIPE when the program does not read it
		}
		b.stdin.Close()
	}()
	res := ex.wait(ctx)
	outputs.Wait()
	res.Stdout, res.Stderr = string(stdout), string(stderr)
	res.StdoutTruncated, res.StderrTruncated = outTrunc, errTrunc
	if res.Reason == sandbox.ReasonExited && (outTrunc || errTrunc) {
		// The program passed the limit and exited before the overflow was
		// noticed: its output was still cut, and the limit is why.
		res.Reason = sandbox.ReasonOutputLimit
		res.Error = joinErr(res.Error, outputLimitError(req.Limits))
	}
	if err := hostdir.Collect(res, b.ws.work(), ex.snap, req.FileContents); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	b.rt.destroyLater(b)
	return res
}

// execution is a program running in a box.
type execution struct {
	b        *box
	lim      sandbox.Limits
	snap     hostdir.Snapshot
	base     cgroupStats
	start    time.Time
	exited   chan event
	overflow chan struct{} // a stream passed the output limit
}

// launch applies the limits, places the files and hands the program its
// code. A zero WallTime or CPUTime means no such limit (long-lived programs).
func (b *box) launch(lim sandbox.Limits, files []sandbox.File, env map[string]string, name, code string, resizeWS bool) (*execution, error) {
	b.setPriority(0)
	ex := &execution{b: b, lim: lim, exited: make(chan event, 1), overflow: make(chan struct{}, 2)}
	if resizeWS {
		if err := b.ws.resize(lim.WorkspaceBytes); err != nil {
			return nil, err
		}
	}
	var err error
	if ex.snap, err = hostdir.WriteFiles(b.ws.work(), files, b.ws.hostUID, b.ws.hostUID); err != nil {
		return nil, err
	}
	// The program has only waited for its code so far: from here on it runs
	// under the request's limits.
	// A program that has already exited (b.program 0: it was never found;
	// or a pid that is gone) runs nothing: its exit is the run's result.
	// (Never prlimit(0, ...): that is the host itself.)
	for _, rl := range rlimits(lim, b.cg == nil) {
		if b.program <= 0 {
			break
		}
		if err := unix.Prlimit(b.program, rl.resource, &unix.Rlimit{Cur: rl.value, Max: rl.value}, nil); err != nil {
			if b.programGone(err) {
				break
			}
			return nil, fmt.Errorf("set rlimit %d: %w", rl.resource, err)
		}
	}
	if b.cg != nil {
		if err := b.setLimits(lim.Memory, lim.Processes); err != nil {
			return nil, err
		}
		if ex.base, err = b.cg.resetPeak(); err != nil {
			return nil, err
		}
	}
	go func() {
		var ev event
		if err := b.events.Decode(&ev); err != nil {
			ev.Error = "sandbox init ended: " + err.Error()
		}
		ex.exited <- ev
	}()
	ex.start = time.Now()
	payload := bootstrap.Payload(env, name, code)
	send := func() {
		// The program may exit without reading its code; that is its business.
		_, _ = b.request.Write(payload)
		b.request.Close()
	}
	if len(payload) <= pipeBuffer {
		send() // fits in the pipe: no need to wait for the reader
	} else {
		go send()
	}
	return ex, nil
}

// pipeBuffer is Linux's default pipe capacity.
const pipeBuffer = 64 << 10

// wait waits for the program to end or be stopped by a limit or ctx, kills
// everything left in the box, and reports the outcome and usage (not the
// output, which the caller reads).
func (ex *execution) wait(ctx context.Context) *sandbox.Result {
	b, lim := ex.b, ex.lim
	res := &sandbox.Result{Runtime: Name, Pooled: b.pooled, ExitCode: -1}
	var wall <-chan time.Time
	if lim.WallTime > 0 {
		t := time.NewTimer(lim.WallTime)
		defer t.Stop()
		wall = t.C
	}
	cpuLimit := make(chan struct{})
	stopCPU := make(chan struct{})
	defer close(stopCPU)
	if b.cg != nil && lim.CPUTime > 0 {
		go watchCPU(b.cg, ex.base, lim.CPUTime, cpuLimit, stopCPU)
	}

	var ev event
	select {
	case ev = <-ex.exited:
		res.Reason = sandbox.ReasonExited
	case <-wall:
		res.Reason = sandbox.ReasonTimeout
		res.Error = fmt.Sprintf("wall time limit of %s reached", lim.WallTime)
	case <-cpuLimit:
		res.Reason = sandbox.ReasonCPULimit
		res.Error = fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	case <-ex.overflow:
		res.Reason = sandbox.ReasonOutputLimit
		res.Error = outputLimitError(lim)
	case <-ctx.Done():
		res.Reason = sandbox.ReasonKilled
		res.Error = "cancelled: " + context.Cause(ctx).Error()
	}
	res.Usage.Wall = time.Since(ex.start)
	// Whatever the reason, nothing of the run may outlive it. When the
	// program exited and left no process behind (its group is empty), only
	// init remains, which is exiting: a signal makes sure, and reaping it is
	// left to destroy. Otherwise everything is killed and waited for.
	if ev.Exit != nil && b.cg != nil && b.cg.programProcs() == 0 {
		b.signalInit()
	} else {
		b.kill()
		if b.init != nil {
			b.init.wait()
		}
	}

	if ev.Exit != nil {
		res.ExitCode = ev.Exit.Code
		if ev.Exit.Signal != 0 {
			res.Signal = unix.SignalName(syscall.Signal(ev.Exit.Signal))
		}
	} else if ev.Error != "" && res.Reason == sandbox.ReasonExited {
		// Init died before reporting: only the kernel kills it, for memory.
		res.Reason, res.Signal, res.Error = sandbox.ReasonKilled, "SIGKILL", ev.Error
	}
	if b.cg != nil {
		if st, err := b.cg.stats(); err == nil {
			res.Usage.CPUUser, res.Usage.CPUSystem = st.cpuSince(ex.base)
			res.Usage.PeakMemory = st.peakMemory
			if st.oomKills > ex.base.oomKills {
				classifyOOM(res, lim)
			}
		}
	}
	if res.Reason == sandbox.ReasonExited && lim.CPUTime > 0 && (res.Signal == "SIGXCPU" ||
		(res.Signal == "SIGKILL" && res.Usage.CPU() >= lim.CPUTime)) {
		res.Reason = sandbox.ReasonCPULimit
		res.Error = fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	}
	if res.Reason == sandbox.ReasonExited && res.Signal == "SIGXFSZ" {
		res.Error = "a file exceeded the workspace size"
	}
	return res
}

// classifyOOM turns an OOM kill into the memory_limit reason when it ended
// the program (or made it fail); a program that survived the loss of a
// child and succeeded keeps its exit, with a note.
func classifyOOM(res *sandbox.Result, lim sandbox.Limits) {
	note := fmt.Sprintf("a process exceeded the memory limit of %s and was killed", sandbox.FormatBytes(lim.Memory))
	if res.Reason == sandbox.ReasonExited && res.ExitCode == 0 && res.Signal == "" {
		res.Error = joinErr(res.Error, note)
		return
	}
	if res.Reason == sandbox.ReasonExited || res.Reason == sandbox.ReasonKilled {
		res.Reason, res.Error = sandbox.ReasonMemoryLimit, note
	}
}

func outputLimitError(lim sandbox.Limits) string {
	return fmt.Sprintf("output exceeded %s", sandbox.FormatBytes(lim.OutputBytes))
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// watchCPU signals limit when the group's CPU time since base reaches budget.
// It sleeps as long as the remaining budget allows on all CPUs at once, so a
// long run costs a handful of reads.
func watchCPU(cg cgroup, base cgroupStats, budget time.Duration, limit, stop chan struct{}) {
	ncpu := time.Duration(runtime.NumCPU())
	for {
		st, err := cg.stats()
		if err != nil {
			return
		}
		left := budget - (st.cpu - base.cpu)
		if left <= 0 {
			close(limit)
			return
		}
		wait := left / ncpu
		wait = min(wait, time.Second)
		wait = max(wait, 2*time.Millisecond)
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
	}
}

// readCapped reads f to its end, keeping the first limit bytes; past them it
// signals overflow once and discards the rest.
func readCapped(f *os.File, limit int64, overflow chan<- struct{}) ([]byte, bool) {
	var buf []byte
	chunk := make([]byte, 32<<10)
	truncated := false
	for {
		n, err := f.Read(chunk)
		if n > 0 {
			room := limit - int64(len(buf))
			if int64(n) > room {
				buf = append(buf, chunk[:room]...)
				if !truncated {
					truncated = true
					overflow <- struct{}{}
				}
			} else {
				buf = append(buf, chunk[:n]...)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !truncated {
				return buf, false
			}
			return buf, truncated
		}
	}
}

// rlimits are set on the program by the host. CPU time is a per-process
// backstop to the cgroup watch (whole seconds, rounded up, plus one); core
// dumps are off. Without cgroups (explicitly waived), address space stands
// in for the memory limit and the process limit for pids.
type rlimit struct {
	resource int
	value    uint64
}

func rlimits(l sandbox.Limits, noCgroup bool) []rlimit {
	out := []rlimit{
		{unix.RLIMIT_NOFILE, uint64(l.OpenFiles)},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_FSIZE, uint64(l.WorkspaceBytes)},
	}
	if l.CPUTime > 0 {
		out = append(out, rlimit{unix.RLIMIT_CPU, uint64(math.Ceil(l.CPUTime.Seconds())) + 1})
	}
	if noCgroup {
		out = append(out, rlimit{unix.RLIMIT_AS, uint64(l.Memory)}, rlimit{unix.RLIMIT_NPROC, uint64(l.Processes)})
	}
	return out
}

// mergeEnv returns base with extra's variables added or replaced.
func mergeEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}
