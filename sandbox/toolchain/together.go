package toolchain

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// A compiled language's two steps run as one program of the sandbox when
// they can (together): a program start costs a sandbox's set-up (its
// namespaces, mounts and cgroup) and its teardown, tens of milliseconds,
// as much as a small compile. The program is a Bash driver:
//
//	cd BUILD; (ulimit COMPILE; export BUILD-ENV; exec COMPILER) </dev/null
//	report the compiler's status on both streams: a marker with a nonce of
//	  this run (the source cannot know it), the status, the time, and
//	  `times` (the CPU the compiler and the driver used)
//	stop there if it failed; else cd /work; ulimit RUN; exec PROGRAM
//
// The host splits each stream at its marker: what comes before is the
// compile step's output, what comes after the run step's, each bounded by
// its own OutputBytes. The source cannot know the nonce, but a compiler
// that runs code of the request's (its compile arguments are the
// tenant's: gcc -wrapper) can read it in the driver's memory, as the
// driver's user, and write a marker of its own: it then only moves the
// rest of its own output to the run step, since the report's time and CPU
// are bounded by the host's clock and CPU account (twoSteps.compiled). It bounds each step's wall and CPU time itself
// (the sandbox's CPU accounting, Process.CPUTime), and the driver gives
// each step its own open-files, processes and (per process, a backstop)
// CPU rlimits. Memory is the one limit only the sandbox's cgroup holds,
// for the whole program: it is the run step's. So this path is taken only
// when the compile step may use at least as much (the defaults: 2 GiB to
// compile, 512 MiB to run), and a compile step the smaller limit stopped
// (an OOM kill) is compiled again on its own, in two programs (separate),
// under its own limit: a compile step that succeeded within the run's
// memory would have within its own larger one, so the result is the same.

// markerPrefix starts the marker the driver writes on each stream when
// the compile step has ended; a nonce of the run follows.
const markerPrefix = "coderun-compiled-"

// maxHeader bounds what follows the stdout marker (status, time, times).
const maxHeader = 512

// canRunTogether reports whether the two steps may be one program: the
// sandbox's memory limit is the run step's, so the compile step must be
// allowed at least as much.
func canRunTogether(compLim, runLim sandbox.Limits) bool {
	return compLim.Memory >= runLim.Memory
}

// together runs a compiled program's two steps as one program in a new
// sandbox of irt (see above). retry is set when the compile step was
// stopped by the run step's memory limit, smaller than its own: the caller
// runs the steps separately.
func (r *Runtime) together(ctx context.Context, irt sandbox.Interactive, b *language.Build, req sandbox.Request, compLim, runLim sandbox.Limits) (res *sandbox.Result, retry bool, err error) {
	box := boxLimits(compLim, runLim)
	nonce, err := newNonce()
	if err != nil {
		return nil, false, err
	}
	marker := markerPrefix + nonce + ":"
	job := driver(b, req.Env, marker, compLim, runLim)
	var w *waiting
	if r.pool != nil && len(req.Env) == 0 && r.pool.fits(box) {
		w = r.pool.take()
	}
	if w != nil {
		// A sandbox of the pool: its files go in as the source does.
		if err := placeBuild(w.sb, req.Files, b.File, req.Code); err != nil {
			w.close()
			return setupError(r.inner.Name(), fmt.Errorf("write files: %w", err)), false, nil
		}
	} else {
		// A sandbox of its own starts with its job as its code.
		w, err = startProgram(ctx, irt, box, req.Env, req.Files, func(sb sandbox.Sandbox) error { return placeBuild(sb, nil, b.File, req.Code) }, job)
		if err != nil {
			return setupError(r.inner.Name(), err), false, nil
		}
	}
	defer w.close()
	sb, p := w.sb, w.p
	t := &twoSteps{comp: compLim, run: runLim, switched: make(chan struct{})}
	t.out = &splitter{marker: []byte(marker), header: true, before: sandbox.NewOutputBuffer(compLim.OutputBytes, func() { t.stop(compiling, sandbox.ReasonOutputLimit) }),
		after: sandbox.NewOutputBuffer(runLim.OutputBytes, func() { t.stop(running, sandbox.ReasonOutputLimit) }), onMarker: t.compiled,
		onBad: func() { t.p.Kill() }} // a report it cannot read is the compile step's (results)
	t.err = &splitter{marker: []byte(marker), before: sandbox.NewOutputBuffer(compLim.OutputBytes, func() { t.stop(compiling, sandbox.ReasonOutputLimit) }),
		after: sandbox.NewOutputBuffer(runLim.OutputBytes, func() { t.stop(running, sandbox.ReasonOutputLimit) })}
	// The steps' time counts from here, when the driver gets its job; the
	// runtime's from the program's start.
	t.p, t.start, t.launched = p, time.Now(), w.launched
	go func() {
		in := p.Stdin()
		if w.pooled {
			// The job first: the driver reads it byte by byte, the rest
			// is the program's.
			_, _ = in.Write([]byte(strconv.Itoa(len(job)) + "\n" + job))
		}
		if len(req.Stdin) > 0 {
			_, _ = in.Write(req.Stdin) // a program may exit without reading it
		}
		in.Close()
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(t.out, p.Stdout()) }()
	go func() { defer wg.Done(); _, _ = io.Copy(t.err, p.Stderr()) }()
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() { defer close(watched); t.watch(done) }()
	whole := p.Wait(ctx)
	close(done)
	<-watched
	wg.Wait()
	t.out.flush()
	t.err.flush()
	whole.Runtime, whole.Pooled = r.inner.Name(), w.pooled
	if res, retry = t.results(ctx, whole, box); retry || res.Reason == sandbox.ReasonCompileError || res.Compile == nil {
		return res, retry, nil
	}
	if err = collect(res, sb, req.Files, req.FileContents, box.WorkspaceBytes); err != nil {
		res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + "listing files: " + err.Error()
	}
	return res, false, nil
}

// boxLimits are the limits of the sandbox that holds both steps as one
// program: the run step's memory (see above), the larger processes, open
// files and workspace of the two (the driver sets each step's rlimits),
// and as backstops, the sum of their wall and CPU times (the host stops
// each step at its own limits first).
func boxLimits(compLim, runLim sandbox.Limits) sandbox.Limits {
	box := runLim
	box.WorkspaceBytes = max(runLim.WorkspaceBytes, compLim.WorkspaceBytes)
	box.Processes = max(runLim.Processes, compLim.Processes)
	box.OpenFiles = max(runLim.OpenFiles, compLim.OpenFiles)
	box.WallTime = compLim.WallTime + runLim.WallTime
	box.CPUTime = compLim.CPUTime + runLim.CPUTime
	return box
}

// waitDriver is the program a pool's sandbox starts with: it reads its
// job (the driver below, its length first) from its stdin, byte by byte
// so that what follows stays the program's, and runs it. The job is ASCII (see
// quoteASCII), so that characters are bytes whatever the locale.
const waitDriver = "IFS= read -r n && IFS= read -r -N \"$n\" job || exit 125\neval \"$job\"\n"

// waiting is a sandbox whose driver has started: a pool's, waiting for
// its job, or one started with it.
type waiting struct {
	sb       sandbox.Sandbox
	p        sandbox.Process
	launched time.Time
	pooled   bool
	done     func() // called once the sandbox is closed (a pool's: it refills)
}

// startProgram makes a sandbox under box with files, then what place
// writes (when not nil), and starts code in it (a Bash program), with env.
func startProgram(ctx context.Context, irt sandbox.Interactive, box sandbox.Limits, env map[string]string, files []sandbox.File, place func(sandbox.Sandbox) error, code string) (*waiting, error) {
	sb, err := irt.NewSandbox(ctx, sandbox.Spec{Limits: box, Files: files})
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if place != nil {
		if err := place(sb); err != nil {
			sb.Close()
			return nil, fmt.Errorf("write source: %w", err)
		}
	}
	p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: code, Env: env})
	if err != nil {
		sb.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	return &waiting{sb: sb, p: p, launched: time.Now()}, nil
}

// close closes the sandbox (killing its program if it still runs), then
// calls done.
func (w *waiting) close() {
	w.sb.Close()
	if w.done != nil {
		w.done()
		w.done = nil
	}
}

// driver is the Bash program that runs both steps (see above); its
// quoting keeps it ASCII (see waitDriver).
func driver(b *language.Build, env map[string]string, marker string, compLim, runLim sandbox.Limits) string {
	var s strings.Builder
	s.WriteString("cd " + quoteASCII(sandbox.WorkDir+"/"+BuildDir) + " || exit 125\n")
	s.WriteString("(" + ulimits(compLim))
	keys := make([]string, 0, len(b.Env))
	for k := range b.Env {
		if _, ok := env[k]; !ok { // the request's environment wins, as in separate
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		s.WriteString("; export " + k + "=" + quoteASCII(b.Env[k]))
	}
	s.WriteString("; exec " + quoteArgsASCII(b.Compile) + ") </dev/null\n")
	s.WriteString("s=$?\n")
	s.WriteString("printf '%s' " + quoteASCII(marker) + " >&2\n")
	s.WriteString("printf '%s%d %s\\n' " + quoteASCII(marker) + " \"$s\" \"$EPOCHREALTIME\"\n")
	s.WriteString("times\n")
	s.WriteString("[ \"$s\" = 0 ] || exit \"$s\"\n")
	s.WriteString("cd " + quoteASCII(sandbox.WorkDir) + " && " + ulimits(runLim) + " && exec " + quoteArgsASCII(b.Run) + "\n")
	return s.String()
}

// ulimits is the shell that sets a step's open files, processes and CPU
// time (whole seconds, rounded up, plus one: a per-process backstop to the
// host's watch, as the runtime sets its own).
func ulimits(lim sandbox.Limits) string {
	return fmt.Sprintf("ulimit -n %d -u %d -t %d", lim.OpenFiles, lim.Processes, int64(math.Ceil(lim.CPUTime.Seconds()))+1)
}

// placeBuild writes files, the source and the cache directories (HOME,
// TMPDIR) into the workspace, through one archive where the sandbox takes
// one (and no mkdir has to run in the sandbox).
func placeBuild(sb sandbox.Sandbox, files []sandbox.File, file, code string) error {
	a, ok := sb.(sandbox.Archiver)
	if !ok {
		all := append(slices.Clone(files), sandbox.File{Path: BuildDir + "/cache/tmp/.keep"}, sandbox.File{Path: BuildDir + "/cache/home/.keep"},
			sandbox.File{Path: BuildDir + "/" + file, Content: []byte(code)})
		for _, f := range all {
			if err := sb.WriteFile(f.Path, f.Content, f.Mode); err != nil {
				return err
			}
		}
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{BuildDir, BuildDir + "/cache", BuildDir + "/cache/tmp", BuildDir + "/cache/home"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, f := range append(slices.Clone(files), sandbox.File{Path: BuildDir + "/" + file, Content: []byte(code)}) {
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: int64(mode), Size: int64(len(f.Content))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return a.PutArchive(context.Background(), &buf)
}

// quoteASCII quotes s for Bash as $'...', every byte outside printable
// ASCII escaped: the result is ASCII.
func quoteASCII(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("'")
	return b.String()
}

func quoteArgsASCII(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quoteASCII(a)
	}
	return strings.Join(q, " ")
}

func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

type stepName int

const (
	compiling stepName = iota
	running
)

// twoSteps follows the program through its two steps: which one it is in,
// how the compile step ended (from the marker), and which limit of which
// step the host stopped it for.
type twoSteps struct {
	comp, run sandbox.Limits
	p         sandbox.Process
	out, err  *splitter
	start     time.Time // when the driver got its job
	launched  time.Time // when the program started

	mu       sync.Mutex
	step     stepName
	switched chan struct{} // closed when the compile step has reported
	status   int           // the compile step's, as Bash reports it
	ended    time.Time     // when the compile step ended (the driver's clock)
	compCPU  [2]time.Duration
	stopped  bool
	stopStep stepName
	reason   sandbox.Reason
}

// compiled takes the stdout marker's header: "STATUS EPOCHREALTIME\n" and
// `times`' two lines ("0m0.001s 0m0.002s": the driver's user and system
// time, then its children's).
func (t *twoSteps) compiled(header string) error {
	lines := strings.Split(strings.TrimSuffix(header, "\n"), "\n")
	if len(lines) != 3 {
		return fmt.Errorf("compile step's report %q", header)
	}
	f := strings.Fields(lines[0])
	if len(f) != 2 {
		return fmt.Errorf("compile step's report %q", header)
	}
	status, err1 := strconv.Atoi(f[0])
	ended, err2 := epoch(f[1])
	self, err3 := userSystem(lines[1])
	children, err4 := userSystem(lines[2])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("compile step's report %q: %w", header, err)
	}
	// The report's times bound what the host measured, never more: the
	// compile step can read the marker (a compiler runs code of the
	// request's, gcc -wrapper say, as the driver's user, and the driver's
	// memory is readable) and forge a report of its own, and the run step
	// is timed from it. Its end is no later than now nor earlier than the
	// job's start, and its CPU no more than the sandbox had used by now.
	now := time.Now()
	if ended.Before(t.start) {
		ended = t.start
	}
	if ended.After(now) {
		ended = now
	}
	cpu := [2]time.Duration{self[0] + children[0], self[1] + children[1]}
	if used, err := t.p.CPUTime(); err == nil {
		cpu = capCPU(cpu, used)
	} else {
		wall, ncpu := now.Sub(t.launched), time.Duration(runtime.NumCPU())
		cpu = capCPU(cpu, min(wall, math.MaxInt64/ncpu)*ncpu) // every CPU, all along
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped && t.stopStep == compiling {
		return nil // too late: the compile step was stopped first
	}
	t.status, t.ended = status, ended
	t.compCPU = cpu
	t.step = running
	close(t.switched)
	return nil
}

// capCPU scales user and system time down, in proportion, so that
// together they are at most most (negative ones count as none).
func capCPU(cpu [2]time.Duration, most time.Duration) [2]time.Duration {
	cpu[0], cpu[1] = max(cpu[0], 0), max(cpu[1], 0)
	sum := cpu[0] + cpu[1]
	if sum <= most || sum == 0 {
		return cpu
	}
	most = max(most, 0)
	user := time.Duration(float64(cpu[0]) / float64(sum) * float64(most))
	return [2]time.Duration{user, most - user}
}

// stop stops the program for a limit of step, unless it has already
// been stopped or has left that step.
func (t *twoSteps) stop(step stepName, reason sandbox.Reason) {
	t.mu.Lock()
	if t.stopped || t.step != step {
		t.mu.Unlock()
		return
	}
	t.stopped, t.stopStep, t.reason = true, step, reason
	t.mu.Unlock()
	t.p.Kill()
}

// watch stops the program when the step it is in reaches its wall or CPU
// time, until done. It sleeps as long as the step's limits allow (its
// CPU time spent on every CPU at once), at most a second.
func (t *twoSteps) watch(done <-chan struct{}) {
	ncpu := time.Duration(runtime.NumCPU())
	cpuKnown := true
	for {
		t.mu.Lock()
		step, ended, compCPU := t.step, t.ended, t.compCPU[0]+t.compCPU[1]
		t.mu.Unlock()
		lim, since, spent := t.comp, t.start, time.Duration(0)
		if step == running {
			lim, since, spent = t.run, ended, compCPU
		}
		wait := lim.WallTime - time.Since(since)
		if wait <= 0 {
			t.stop(step, sandbox.ReasonTimeout)
			return
		}
		if cpuKnown {
			used, err := t.p.CPUTime()
			if err != nil {
				cpuKnown = false // the driver's rlimits still bound each process
			} else if left := lim.CPUTime - (used - spent); left <= 0 {
				t.stop(step, sandbox.ReasonCPULimit)
				return
			} else {
				wait = min(wait, max(left/ncpu, 2*time.Millisecond))
			}
		}
		wait = min(wait, time.Second)
		switched := t.switched
		if step == running {
			switched = nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-done:
			timer.Stop()
			return
		case <-switched:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// results makes the compile step's and the run step's results out of the
// whole program's.
func (t *twoSteps) results(ctx context.Context, whole *sandbox.Result, box sandbox.Limits) (*sandbox.Result, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	comp := &sandbox.Result{Runtime: whole.Runtime, Pooled: whole.Pooled,
		Stdout: t.out.before.String(), StdoutTruncated: t.out.before.Truncated(),
		Stderr: t.err.before.String(), StderrTruncated: t.err.before.Truncated()}
	if t.step == compiling {
		// The program ended in its compile step: its end is the step's.
		if t.out.bad != nil {
			// The driver writes no report it cannot read: the compile
			// step wrote this one (see the marker above), and was
			// stopped for it.
			comp.ExitCode, comp.Signal, comp.Reason, comp.Usage = whole.ExitCode, whole.Signal, whole.Reason, whole.Usage
			comp.Error = "the compile step wrote a report of its end that is not the driver's (" + t.out.bad.Error() + ") and was stopped"
			return compileError(comp), false
		}
		comp.ExitCode, comp.Signal, comp.Reason, comp.Error, comp.Usage = whole.ExitCode, whole.Signal, whole.Reason, whole.Error, whole.Usage
		if whole.Reason == sandbox.ReasonMemoryLimit && t.comp.Memory > box.Memory {
			return nil, true
		}
		t.stepStopped(comp, compiling, box)
		if ctx.Err() != nil || comp.Reason == sandbox.ReasonKilled {
			return comp, false
		}
		if comp.OK() {
			// Only the driver's report ends the step well.
			return setupError(whole.Runtime, errors.New("compile: the driver ended without reporting the compile step")), false
		}
		return compileError(comp), false
	}
	comp.Usage = sandbox.Usage{Wall: t.ended.Sub(t.start), CPUUser: t.compCPU[0], CPUSystem: t.compCPU[1], PeakMemory: whole.Usage.PeakMemory}
	comp.Reason = sandbox.ReasonExited
	switch s := t.status; {
	case s > 128 && s < 128+65:
		comp.ExitCode, comp.Signal = -1, signalName(s-128)
		if comp.Signal == "SIGXCPU" {
			comp.Reason, comp.Error = sandbox.ReasonCPULimit, fmt.Sprintf("CPU time limit of %s reached", t.comp.CPUTime)
		}
	default:
		comp.ExitCode = s
	}
	if comp.OK() && (comp.StdoutTruncated || comp.StderrTruncated) {
		// Its output passed the limit but was read only after its end.
		comp.Reason, comp.Error = sandbox.ReasonOutputLimit, fmt.Sprintf("output limit of %s reached", sandbox.FormatBytes(t.comp.OutputBytes))
	}
	if !comp.OK() {
		// The driver stopped after a failed compile step; a memory limit
		// reached is the compile step's.
		if whole.Reason == sandbox.ReasonMemoryLimit {
			if t.comp.Memory > box.Memory {
				return nil, true
			}
			comp.Reason, comp.Error = whole.Reason, whole.Error
		}
		return compileError(comp), false
	}
	res := &sandbox.Result{Runtime: whole.Runtime, Pooled: whole.Pooled, Compile: comp,
		Stdout: t.out.after.String(), StdoutTruncated: t.out.after.Truncated(),
		Stderr: t.err.after.String(), StderrTruncated: t.err.after.Truncated(),
		ExitCode: whole.ExitCode, Signal: whole.Signal, Reason: whole.Reason, Error: whole.Error}
	res.Usage = whole.Usage
	res.Usage.Wall = max(0, whole.Usage.Wall-t.ended.Sub(t.launched))
	res.Usage.CPUUser = max(0, whole.Usage.CPUUser-comp.Usage.CPUUser)
	res.Usage.CPUSystem = max(0, whole.Usage.CPUSystem-comp.Usage.CPUSystem)
	t.stepStopped(res, running, box)
	return res, false
}

// stepStopped sets res's reason when the host stopped the program for a
// limit of step, and words the runtime's own limits (the whole program's
// backstops) as the step's.
func (t *twoSteps) stepStopped(res *sandbox.Result, step stepName, box sandbox.Limits) {
	lim := t.comp
	if step == running {
		lim = t.run
	}
	reason := res.Reason
	if t.stopped && t.stopStep == step {
		reason = t.reason
	}
	switch reason {
	case sandbox.ReasonTimeout:
		res.Reason, res.Error = reason, fmt.Sprintf("wall time limit of %s reached", lim.WallTime)
	case sandbox.ReasonCPULimit:
		res.Reason, res.Error = reason, fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	case sandbox.ReasonOutputLimit:
		res.Reason, res.Error = reason, fmt.Sprintf("output limit of %s reached", sandbox.FormatBytes(lim.OutputBytes))
	}
	if res.Reason == sandbox.ReasonExited && res.Signal == "SIGXCPU" {
		res.Reason, res.Error = sandbox.ReasonCPULimit, fmt.Sprintf("CPU time limit of %s reached", lim.CPUTime)
	}
}

// splitter takes a stream of the program and writes what comes before the
// marker to before and what comes after it to after. With header, the
// marker is followed by three lines, handed to onMarker.
type splitter struct {
	marker        []byte
	header        bool
	before, after *sandbox.OutputBuffer
	onMarker      func(string) error
	onBad         func() // called once when bad is set (may be nil)

	mu      sync.Mutex
	pending []byte // not yet known to be before the marker
	found   bool
	head    []byte
	inHead  bool
	bad     error // a report that cannot be read
}

func (s *splitter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if !s.found {
		s.pending = append(s.pending, p...)
		i := bytes.Index(s.pending, s.marker)
		if i < 0 {
			keep := min(len(s.pending), len(s.marker)-1)
			_, _ = s.before.Write(s.pending[:len(s.pending)-keep])
			s.pending = append(s.pending[:0], s.pending[len(s.pending)-keep:]...)
			return n, nil
		}
		_, _ = s.before.Write(s.pending[:i])
		p = s.pending[i+len(s.marker):]
		s.pending, s.found, s.inHead = nil, true, s.header
	}
	if s.inHead {
		s.head = append(s.head, p...)
		if bytes.Count(s.head, []byte("\n")) < 3 {
			if len(s.head) > maxHeader {
				s.bad, s.inHead = fmt.Errorf("compile step's report too long: %q", s.head[:maxHeader]), false
				s.badSet()
			}
			return n, nil
		}
		end := 0
		for range 3 {
			end += bytes.IndexByte(s.head[end:], '\n') + 1
		}
		p = s.head[end:]
		if err := s.onMarker(string(s.head[:end])); err != nil {
			s.bad = err
			s.badSet()
		}
		s.head, s.inHead = nil, false
	}
	if s.bad == nil {
		_, _ = s.after.Write(p)
	}
	return n, nil
}

func (s *splitter) badSet() {
	if s.onBad != nil {
		s.onBad()
	}
}

// flush hands over what is left once the stream has ended: bytes held
// back in case they began the marker are the compile step's output.
func (s *splitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.found {
		_, _ = s.before.Write(s.pending)
		s.pending = nil
	}
}

// epoch parses Bash's $EPOCHREALTIME ("1700000000.123456").
func epoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(secs, ns), nil
}

// userSystem parses a line of Bash's `times`: "0m0.012s 0m0.004s".
func userSystem(line string) ([2]time.Duration, error) {
	var out [2]time.Duration
	f := strings.Fields(line)
	if len(f) != 2 {
		return out, fmt.Errorf("times %q", line)
	}
	for i, v := range f {
		m, s, ok := strings.Cut(strings.TrimSuffix(v, "s"), "m")
		mins, err1 := strconv.Atoi(m)
		secs, err2 := strconv.ParseFloat(strings.Replace(s, ",", ".", 1), 64)
		if !ok || err1 != nil || err2 != nil {
			return out, fmt.Errorf("times %q", line)
		}
		out[i] = time.Duration(mins)*time.Minute + time.Duration(secs*float64(time.Second))
	}
	return out, nil
}

// signalName names signal n ("SIGKILL").
func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", n)
}
