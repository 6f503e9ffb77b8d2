package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// run executes req in b, which it consumes, and reports what happened.
func (b *box) run(ctx context.Context, req *sandbox.Request) *sandbox.Result {
	res := &sandbox.Result{Runtime: Name, Pooled: b.prestart, ExitCode: -1}
	b.setPriority(0)
	setupErr := func(err error) *sandbox.Result {
		b.destroy()
		res.Reason, res.Error = sandbox.ReasonSetupError, err.Error()
		return res
	}
	lim := req.Limits
	if err := b.resizeWorkspace(lim.WorkspaceBytes); err != nil {
		return setupErr(err)
	}
	work := filepath.Join(b.ws, "work")
	snap, err := sandbox.WriteFiles(work, req.Files, b.hostUID, b.hostUID)
	if err != nil {
		return setupErr(err)
	}
	var base cgroupStats
	if b.cg != nil {
		if err := b.cg.setLimits(lim.Memory, lim.Processes+1); err != nil { // +1: init
			return setupErr(err)
		}
		if base, err = b.cg.resetPeak(); err != nil {
			return setupErr(err)
		}
	}

	// Output: each stream captured up to the limit; one byte more stops the run.
	overflow := make(chan struct{}, 2)
	var outputs sync.WaitGroup
	capture := func(f *os.File, out *string, truncated *bool) {
		defer outputs.Done()
		var buf []byte
		buf, *truncated = readCapped(f, lim.OutputBytes, overflow)
		*out = string(buf)
	}
	outputs.Add(2)
	go capture(b.stdout, &res.Stdout, &res.StdoutTruncated)
	go capture(b.stderr, &res.Stderr, &res.StderrTruncated)
	go func() {
		if len(req.Stdin) > 0 {
			_, _ = b.stdin.Write(req.Stdin) // EPIPE when the program does not read it
		}
		b.stdin.Close()
	}()

	msg := goMessage{Payload: sandbox.Payload(req.Env, req.Code), Rlimits: rlimits(lim, b.cg == nil)}
	if !b.prestart {
		msg.Env = mergeEnv(baseEnv("sandbox"), req.Env)
	}
	start := time.Now()
	if err := json.NewEncoder(b.control).Encode(&msg); err != nil {
		return setupErr(fmt.Errorf("send request to sandbox init: %w", err))
	}
	exited := make(chan event, 1)
	go func() {
		var ev event
		if err := b.events.Decode(&ev); err != nil {
			ev.Error = "sandbox init ended: " + err.Error()
		}
		exited <- ev
	}()

	wall := time.NewTimer(lim.WallTime)
	defer wall.Stop()
	cpuLimit := make(chan struct{})
	stopCPU := make(chan struct{})
	defer close(stopCPU)
	if b.cg != nil {
		go watchCPU(b.cg, base, lim.CPUTime, cpuLimit, stopCPU)
	}

	var ev event
	select {
	case ev = <-exited:
		res.Reason = sandbox.ReasonExited
	case <-wall.C:
		res.Reason = sandbox.ReasonTimeout
		res.Error = fmt.Sprintf("wall time limit of %s reached", lim.WallTime)
	case <-cpuLimit:
		res.Reason = sandbox.ReasonCPULimit
		res.Error = fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	case <-overflow:
		res.Reason = sandbox.ReasonOutputLimit
		res.Error = fmt.Sprintf("output exceeded %s", sandbox.FormatBytes(lim.OutputBytes))
	case <-ctx.Done():
		res.Reason = sandbox.ReasonKilled
		res.Error = "cancelled: " + context.Cause(ctx).Error()
	}
	res.Usage.Wall = time.Since(start)
	// Whatever the reason, nothing of the run may outlive it.
	b.kill()
	if b.cmd != nil {
		_ = b.cmd.Wait()
	}
	outputs.Wait()

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
			res.Usage.CPUUser = st.cpuUser - base.cpuUser
			res.Usage.CPUSystem = st.cpuSystem - base.cpuSystem
			res.Usage.PeakMemory = st.peakMemory
			if st.oomKills > base.oomKills {
				b.classifyOOM(res, lim)
			}
		}
	}
	if res.Reason == sandbox.ReasonExited && (res.Signal == "SIGXCPU" ||
		(res.Signal == "SIGKILL" && res.Usage.CPU() >= lim.CPUTime)) {
		res.Reason = sandbox.ReasonCPULimit
		res.Error = fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	}
	if res.Reason == sandbox.ReasonExited && res.Signal == "SIGXFSZ" {
		res.Error = "a file exceeded the workspace size"
	}
	if files, truncated, err := sandbox.CollectFiles(work, snap, req.FileContents); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	} else {
		res.Files, res.FilesTruncated = files, truncated
	}
	b.rt.cleanup.Add(1)
	go func() {
		defer b.rt.cleanup.Done()
		b.destroy()
	}()
	return res
}

// classifyOOM turns an OOM kill into the memory_limit reason when it ended
// the program (or made it fail); a program that survived the loss of a
// child and succeeded keeps its exit, with a note.
func (b *box) classifyOOM(res *sandbox.Result, lim sandbox.Limits) {
	note := fmt.Sprintf("a process exceeded the memory limit of %s and was killed", sandbox.FormatBytes(lim.Memory))
	if res.Reason == sandbox.ReasonExited && res.ExitCode == 0 && res.Signal == "" {
		res.Error = joinErr(res.Error, note)
		return
	}
	if res.Reason == sandbox.ReasonExited || res.Reason == sandbox.ReasonKilled {
		res.Reason, res.Error = sandbox.ReasonMemoryLimit, note
	}
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
		left := budget - (st.cpuUser + st.cpuSystem - base.cpuUser - base.cpuSystem)
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

// rlimits are set on the program by init. CPU time is a per-process
// backstop to the cgroup watch (whole seconds, rounded up, plus one); core
// dumps are off. Without cgroups (explicitly waived), address space stands
// in for the memory limit and the process limit for pids.
func rlimits(l sandbox.Limits, noCgroup bool) []rlimitValue {
	out := []rlimitValue{
		{unix.RLIMIT_NOFILE, uint64(l.OpenFiles)},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_CPU, uint64(math.Ceil(l.CPUTime.Seconds())) + 1},
		{unix.RLIMIT_FSIZE, uint64(l.WorkspaceBytes)},
	}
	if noCgroup {
		out = append(out, rlimitValue{unix.RLIMIT_AS, uint64(l.Memory)}, rlimitValue{unix.RLIMIT_NPROC, uint64(l.Processes)})
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
