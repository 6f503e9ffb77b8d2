package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Config describes a session.
type Config struct {
	// Language is sandbox.Python (the default), sandbox.Bash or sandbox.Node.
	Language sandbox.Language
	// Limits bound the session and each of its cells, in the type that
	// bounds a one-shot run: Memory, Processes, OpenFiles and
	// WorkspaceBytes bound the session's sandbox, shared by everything that
	// runs in it for its whole life. WallTime, CPUTime and OutputBytes bound
	// each cell:
	//   - WallTime is a cell's time limit: past it, the cell is interrupted
	//     (SIGINT, KeyboardInterrupt in Python) and keeps the session's state.
	//   - CPUTime, when set, is a cell's CPU-time limit (user and system, of
	//     the interpreter and what it started, as the host accounts it):
	//     past it, the cell is interrupted as at its time limit. Zero: none.
	//   - OutputBytes bounds the bytes of output kept per cell (streams and
	//     rich outputs together, images base64-encoded); the rest is
	//     discarded and the cell says so.
	// Zero fields take DefaultLimits' values.
	Limits sandbox.Limits
	// Grace is how long an interrupted cell has to stop before the
	// interpreter is killed and restarted. Zero means DefaultGrace.
	Grace time.Duration
	// Files are placed in the workspace before the interpreter starts.
	Files []sandbox.File
	// Env adds environment variables to the interpreter's.
	Env map[string]string
	// Preload lists Python modules imported each time the interpreter
	// starts, before the first cell (numpy, pandas, matplotlib.pyplot...);
	// they are bound in the namespace under their usual names (np, pd,
	// plt). A module that fails to import fails the start.
	Preload []string
	// StartTimeout bounds an interpreter's start. Default 60s.
	StartTimeout time.Duration
	// Sandbox, if set, is the sandbox the session runs in instead of a
	// fresh one: its owner's, which Close leaves open (with its files)
	// after stopping the session's interpreter. Files are placed in it.
	// The sandbox's limits are its own; Limits' per-cell ones still apply.
	Sandbox sandbox.Sandbox
}

// DefaultLimits fill the zero fields of Config.Limits: the sandbox's
// defaults for the session's sandbox, 30 seconds and 4 MiB of output per
// cell, and no CPU-time limit per cell (CPUTime zero).
var DefaultLimits = sandbox.Limits{
	WallTime:       30 * time.Second,
	Memory:         sandbox.DefaultLimits.Memory,
	Processes:      sandbox.DefaultLimits.Processes,
	OpenFiles:      sandbox.DefaultLimits.OpenFiles,
	WorkspaceBytes: sandbox.DefaultLimits.WorkspaceBytes,
	OutputBytes:    4 << 20,
}

// DefaultGrace is Config.Grace's default.
const DefaultGrace = 2 * time.Second

// sandboxLimits are the limits of the session's sandbox: l's, without the
// per-cell ones.
func sandboxLimits(l sandbox.Limits) sandbox.Limits {
	return sandbox.Limits{Memory: l.Memory, Processes: l.Processes, OpenFiles: l.OpenFiles, WorkspaceBytes: l.WorkspaceBytes}
}

func (c Config) withDefaults() Config {
	if c.Language == "" {
		c.Language = sandbox.Python
	}
	c.Limits = c.Limits.WithDefaults(DefaultLimits)
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	return c
}

// validate checks c, defaults filled in: its limits as a one-shot run's
// are checked, but for a zero CPUTime, which means none.
func (c Config) validate() error {
	switch c.Language {
	case sandbox.Python:
	case sandbox.Bash, sandbox.Node:
		if len(c.Preload) > 0 {
			return fmt.Errorf("%w: session: Preload is for Python sessions", sandbox.ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: session: language %q has no session driver (python, bash, node)", sandbox.ErrInvalid, c.Language)
	}
	if c.Grace < 0 {
		return fmt.Errorf("%w: session: negative grace period", sandbox.ErrInvalid)
	}
	l := c.Limits
	if l.CPUTime == 0 {
		l.CPUTime = sandbox.MaxLimits.CPUTime // none: stands for any value in range
	}
	return l.Validate()
}

func (c Config) newDriver() driver {
	if c.Language == sandbox.Bash {
		return newBashDriver(c.Env)
	}
	if c.Language == sandbox.Node {
		return &nodeDriver{env: c.Env} // node.go
	}
	return &pythonDriver{preload: c.Preload, outputLimit: c.Limits.OutputBytes, env: c.Env}
}

// Errors a session's methods return.
var (
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session: closed")
	// ErrEvicted is wrapped by *EvictedError.
	ErrEvicted = errors.New("session: evicted")
)

// EvictedError says that a Manager evicted the session, when and why. Every
// later use of the session returns it.
type EvictedError struct {
	ID     string
	Tenant string
	Reason string // "idle" (past the idle timeout) or "capacity" (room for a new session)
	At     time.Time
}

func (e *EvictedError) Error() string {
	return fmt.Sprintf("session %s was evicted at %s (%s)", e.ID, e.At.Format(time.RFC3339), evictionText(e.Reason))
}

func (e *EvictedError) Unwrap() error { return ErrEvicted }

func evictionText(reason string) string {
	switch reason {
	case EvictIdle:
		return "idle for longer than the idle timeout"
	case EvictCapacity:
		return "the least recently used session, to make room for a new one"
	}
	return reason
}

// Session is a notebook-style context: an interpreter whose state (Python
// variables and imports; bash variables, functions and working directory)
// carries from one cell to the next, in a sandbox whose workspace outlives
// interpreter restarts. Cells run one at a time; Execute waits its turn.
// A Session is safe for concurrent use.
type Session struct {
	tenant  string // the tenant whose Manager view made it
	id      string
	cfg     Config
	sb      sandbox.Sandbox
	ownsSB  bool // false when Config.Sandbox gave it
	created time.Time
	pooled  bool
	runtime string // the name of the runtime whose sandbox it runs in

	turn chan struct{} // held by the running Execute, Restart or start

	mu       sync.Mutex
	in       *interp
	running  *run
	last     *run // the last cell run, for output that comes after its end
	history  []*Cell
	lastUsed time.Time
	idleEnd  *Ending // the interpreter ended between cells: the next cell says so
	closed   error   // ErrClosed or *EvictedError
	holds    int     // Hold's, not yet released
	onClose  func()  // the manager's bookkeeping

	// historyBytes is the size of the history's outputs; the outputs of
	// its first trimmed cells were dropped (see keepHistory). Under mu.
	historyBytes int64
	trimmed      int

	// spool is held by the upload being spooled (see UploadFrom); made
	// on first use, under mu.
	spool chan struct{}
}

// New creates a session in a fresh sandbox of rt and starts its interpreter.
func New(ctx context.Context, rt sandbox.Interactive, cfg Config) (*Session, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sb, owns := cfg.Sandbox, cfg.Sandbox == nil
	if owns {
		var err error
		if sb, err = rt.NewSandbox(ctx, sandbox.Spec{Limits: sandboxLimits(cfg.Limits), Files: cfg.Files}); err != nil {
			return nil, fmt.Errorf("session: create sandbox: %w", err)
		}
	} else {
		for _, f := range cfg.Files {
			if err := sb.WriteFile(f.Path, f.Content, f.Mode); err != nil {
				return nil, fmt.Errorf("session: place %s: %w", f.Path, err)
			}
		}
	}
	now := time.Now()
	s := &Session{id: newID(), cfg: cfg, sb: sb, ownsSB: owns, created: now, lastUsed: now, turn: make(chan struct{}, 1),
		runtime: runtimeName(rt)}
	in, err := startInterp(ctx, sb, cfg.newDriver(), s.route, cfg.StartTimeout)
	if err != nil {
		if owns {
			sb.Close()
		}
		return nil, err
	}
	s.in = in
	return s, nil
}

// runtimeName is the name of rt, when it says ("" otherwise).
func runtimeName(rt sandbox.Interactive) string {
	if n, ok := rt.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ID identifies the session.
func (s *Session) ID() string { return s.id }

// Language is the session's language.
func (s *Session) Language() sandbox.Language { return s.cfg.Language }

// Config returns the session's configuration, defaults filled in.
func (s *Session) Config() Config { return s.cfg }

// Exec is one cell to execute.
type Exec struct {
	Code string
	// Timeout overrides Config.Limits.WallTime for this cell.
	Timeout time.Duration
	// OnOutput, if set, receives each output as it arrives, in order, from
	// one goroutine, before Execute returns. Consecutive stream outputs
	// arrive in pieces and are stored merged; TypeClearOutput and
	// TypeUpdateDisplayData are applied to the stored outputs.
	OnOutput func(Output)
	// RetryOf is the Index of a failed cell that this one retries: the
	// code runs in the current state (earlier cells are not run again, the
	// interpreter is not restarted), and the history links the two cells.
	RetryOf int
}

// run is the cell being executed.
type run struct {
	id       int
	in       *interp
	cell     *Cell
	onOutput func(Output)
	limit    int64
	used     int64
	clear    bool // clear_output(wait=True) pending
	started  chan struct{}
	// doneSeen is signalled each time the driver says the cell is done;
	// doneEv is the last such event. The cell is done (done is closed, by
	// wait) only once the host has seen the interpreter idle after it.
	doneSeen chan struct{}
	doneEv   event
	claimed  bool // a done event arrived
	// final is the done event the cell ended on, fixed (by end, under
	// s.mu) before done is closed: a claim that arrives later (a forgery
	// from a thread the cell left behind) changes nothing.
	final event
	done  chan struct{}
	stop  chan struct{} // Interrupt
}

// Execute runs one cell and returns it once it has ended: ok, failed,
// interrupted, timed out, or with the interpreter dead (then restarted). An
// error means the cell could not be run at all (the session is closed or
// evicted, the code or RetryOf is invalid, no interpreter could be
// started). Cancelling ctx interrupts the cell as Interrupt does.
func (s *Session) Execute(ctx context.Context, e Exec) (*Cell, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()

	s.mu.Lock()
	if e.RetryOf != 0 {
		if e.RetryOf < 0 || e.RetryOf > len(s.history) {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: session: RetryOf %d: no such cell", sandbox.ErrInvalid, e.RetryOf)
		}
		if st := s.history[e.RetryOf-1].Status; st == StatusOK {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: session: RetryOf %d: that cell did not fail", sandbox.ErrInvalid, e.RetryOf)
		}
	}
	in := s.in
	var idleEnd *Ending
	if in != nil && !in.alive() && !in.reported {
		idleEnd = in.ending
		idleEnd.Idle = true
		in.reported = true
	}
	s.mu.Unlock()

	cell := &Cell{Code: e.Code, RetryOf: e.RetryOf}
	if idleEnd != nil {
		// The interpreter ended between cells: this cell says so first.
		cell.Ended, cell.Restarted = idleEnd, true
		cell.Outputs = append(cell.Outputs, Output{Type: TypeStream, Name: "stderr",
			Text: "coderun: " + idleEnd.Message + " (after the previous cell); a new interpreter was started: variables and imports are gone, files are kept.\n"})
	}
	if in == nil || !in.alive() {
		var err error
		if in, err = s.startLocked(ctx); err != nil {
			if idleEnd != nil {
				err = fmt.Errorf("%s (after the previous cell), and a new one could not be started: %w", idleEnd.Message, err)
			}
			return nil, err
		}
	}
	if len(e.Code) > sandbox.MaxCodeBytes {
		return nil, fmt.Errorf("%w: session: the cell's code is longer than %s", sandbox.ErrInvalid, sandbox.FormatBytes(sandbox.MaxCodeBytes))
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Limits.WallTime
	}
	s.mu.Lock()
	cell.Index = len(s.history) + 1 // the history grows only under the turn we hold
	s.mu.Unlock()
	req, err := in.drv.request(cell.Index, e.Code) // validates the code
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	r := &run{id: cell.Index, in: in, cell: cell, onOutput: e.OnOutput, limit: s.cfg.Limits.OutputBytes,
		started: make(chan struct{}, 1), doneSeen: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{}, 1)}
	s.running = r
	s.lastUsed = time.Now()
	s.mu.Unlock()

	cell.Started = time.Now()
	sendErr := in.send(ctx, req)
	stopped := s.wait(ctx, r, timeout, sendErr)
	cell.Duration = time.Since(cell.Started)
	if r.isDone() && r.final.exiting {
		// exit(): the interpreter ends after the cell, which says so.
		select {
		case <-in.dead:
		case <-time.After(s.cfg.Grace):
			in.kill(killProtocol)
			<-in.dead
		}
	}

	s.mu.Lock()
	s.running, s.last = nil, r
	died := s.finish(r, stopped)
	if r.isDone() && r.final.exiting {
		cell.Ended, died = in.ending, true
		cell.Outputs = append(cell.Outputs, Output{Type: TypeStream, Name: "stderr",
			Text: "coderun: " + in.ending.Message + "; a new interpreter was started: variables and imports are gone, files are kept.\n"})
	}
	if died {
		in.reported = true
	}
	if e.RetryOf != 0 {
		s.history[e.RetryOf-1].RetriedBy = cell.Index
	}
	s.history = append(s.history, cell)
	s.keepHistory()
	s.lastUsed = time.Now()
	closing := s.closed != nil
	s.mu.Unlock()

	// A cell that took its interpreter down leaves a fresh one behind,
	// unless the session is being restarted or closed anyway.
	if died && in.cause() != killRestart && !closing {
		cell.Restarted = true
		// Even when ctx was what stopped the cell: the session stays usable.
		if _, err := s.startLocked(context.WithoutCancel(ctx)); err != nil {
			cell.RestartError = err.Error()
		}
	}
	s.mu.Lock()
	out := cell.clone()
	s.mu.Unlock()
	return out, nil
}

// exitClaimed reports whether the driver said the cell was done and the
// interpreter would exit after it (exit(), quit()).
func (s *Session) exitClaimed(r *run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.claimed && r.doneEv.exiting
}

// end ends the cell on the done event last claimed.
func (s *Session) end(r *run) {
	s.mu.Lock()
	r.final = r.doneEv
	s.mu.Unlock()
	close(r.done)
}

func (r *run) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// stopReason is why a cell was asked to stop.
type stopReason int

const (
	notStopped stopReason = iota
	stopInterrupt
	stopTimeout
	stopCPULimit
)

// wait follows the cell until it ends or its interpreter does. When it is
// asked to stop (time limit, Interrupt, ctx), it sends SIGINT once the
// driver has started the cell, and kills the interpreter if the cell is
// still running a grace period later. It reports why the cell was stopped.
//
// The driver's "done" is a claim, which the cell's own code could make: the
// cell ends when, after a claim, the host sees the interpreter waiting for
// its next request (idleCheck). Until then the cell runs, with its limits.
func (s *Session) wait(ctx context.Context, r *run, timeout time.Duration, sendErr error) stopReason {
	in := r.in
	if sendErr != nil {
		in.kill(killProtocol)
		<-in.dead
		return notStopped
	}
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	cpuDone := make(chan struct{})
	defer close(cpuDone)
	cpuLimit := watchCellCPU(in.proc, s.cfg.Limits.CPUTime, cpuDone)
	var grace <-chan time.Time
	started, signalled := false, false
	reason := notStopped
	ctxDone := ctx.Done()
	check := newIdleCheck(in, func() { _ = in.send(context.WithoutCancel(ctx), in.drv.ping()) })
	defer check.stop()
	stop := func(why stopReason) {
		if reason == notStopped {
			reason = why
		}
		if grace == nil {
			grace = time.After(s.cfg.Grace)
		}
		if started && !signalled {
			signalled = true
			_ = in.proc.Signal(syscall.SIGINT)
		}
	}
	for {
		select {
		case <-r.doneSeen:
			if check.claimed() {
				s.end(r)
				return reason
			}
		case <-check.poll():
			check.polled()
		case <-in.dead:
			if s.exitClaimed(r) {
				s.end(r) // exit(): the cell ended, then its interpreter
			}
			return reason
		case <-r.started:
			started = true
			if reason != notStopped {
				stop(reason)
			}
		case <-limit.C:
			stop(stopTimeout)
		case <-cpuLimit:
			cpuLimit = nil
			stop(stopCPULimit)
		case <-r.stop:
			stop(stopInterrupt)
		case <-ctxDone:
			ctxDone = nil
			stop(stopInterrupt)
		case <-grace:
			cause := killInterrupt
			if reason == stopTimeout || reason == stopCPULimit {
				cause = killTimeout
			}
			in.kill(cause)
			<-in.dead
			return reason
		}
	}
}

// limit is the limit a stop for a limit names.
func (r stopReason) limit() sandbox.Reason {
	if r == stopCPULimit {
		return sandbox.ReasonCPULimit
	}
	return sandbox.ReasonTimeout
}

// watchCellCPU returns a channel that fires once the interpreter has used
// budget of CPU time from now on, checking no later than the budget left
// could run out on every CPU at once; nil (never) with no budget, or when
// the runtime cannot measure CPU time. It stops when done is closed.
func watchCellCPU(p sandbox.Process, budget time.Duration, done <-chan struct{}) <-chan struct{} {
	if budget <= 0 {
		return nil
	}
	base, err := p.CPUTime()
	if err != nil {
		return nil
	}
	fired := make(chan struct{})
	go func() {
		for {
			used, err := p.CPUTime()
			if err != nil {
				return // the program has ended: the cell ends with it
			}
			left := budget - (used - base)
			if left <= 0 {
				close(fired)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(max(left/time.Duration(runtime.NumCPU()), 10*time.Millisecond)):
			}
		}
	}()
	return fired
}

// finish sets the cell's status from how it ended, and reports whether
// the interpreter ended before the cell did. s.mu is held.
func (s *Session) finish(r *run, stopped stopReason) (died bool) {
	c := r.cell
	defer func() {
		if c.OutputTruncated {
			c.Outputs = append(c.Outputs, Output{Type: TypeStream, Name: "stderr",
				Text: fmt.Sprintf("coderun: the cell's output exceeded %s; the rest was discarded.\n", sandbox.FormatBytes(r.limit))})
		}
	}()
	select {
	case <-r.done:
		ev := r.final
		c.ExecutionCount = ev.count
		c.OutputTruncated = c.OutputTruncated || ev.truncated
		c.Status = StatusOK
		if !ev.ok {
			c.Status = StatusError
		}
		if s.cfg.Language == sandbox.Bash {
			c.ExitStatus = ev.exit
			if ev.exit != 0 && stopped == notStopped {
				c.Outputs = append(c.Outputs, Output{Type: TypeError, Ename: "ExitStatus",
					Evalue:    fmt.Sprintf("the cell's last command exited with status %d", ev.exit),
					Traceback: []string{fmt.Sprintf("exit status %d", ev.exit)}})
			}
		}
		switch stopped {
		case stopTimeout, stopCPULimit:
			c.Status, c.Limit = StatusTimeout, stopped.limit()
			what := "time limit"
			if stopped == stopCPULimit {
				what = "CPU-time limit (" + s.cfg.Limits.CPUTime.String() + ")"
			}
			c.Outputs = append(c.Outputs, Output{Type: TypeStream, Name: "stderr",
				Text: "coderun: the cell reached its " + what + " and was interrupted; the session's state is kept.\n"})
			if s.cfg.Language == sandbox.Bash {
				c.Outputs = append(c.Outputs, interruptError())
			}
		case stopInterrupt:
			c.Status = StatusInterrupted
			if s.cfg.Language == sandbox.Bash {
				c.Outputs = append(c.Outputs, interruptError())
			}
		}
	default:
		// The interpreter ended (or was killed) before the cell did.
		end := r.in.ending
		c.Ended = end
		switch stopped {
		case stopTimeout, stopCPULimit:
			c.Status, c.Limit = StatusTimeout, stopped.limit()
		case stopInterrupt:
			c.Status = StatusInterrupted
		default:
			c.Status = StatusDied
		}
		c.Outputs = append(c.Outputs, deathError(end, s.cfg.Language))
		return true
	}
	return false
}

func interruptError() Output {
	return Output{Type: TypeError, Ename: "KeyboardInterrupt", Evalue: "interrupted (SIGINT)", Traceback: []string{"KeyboardInterrupt"}}
}

// deathError is the error output of a cell whose interpreter ended.
func deathError(e *Ending, lang sandbox.Language) Output {
	ename := "InterpreterDied"
	switch {
	case e.Reason == sandbox.ReasonMemoryLimit:
		ename = "MemoryLimitExceeded"
	case e.Reason == sandbox.ReasonExited && e.Signal == "":
		ename = "InterpreterExited"
	}
	msg := e.Message + "; the session starts a new interpreter: variables and imports are gone, files are kept"
	tb := []string{ename + ": " + msg}
	if e.Diagnostics != "" {
		tb = append(tb, splitTraceback([]string{e.Diagnostics})...)
	}
	return Output{Type: TypeError, Ename: ename, Evalue: msg, Traceback: tb}
}

// route receives the interpreter's events from its dispatcher, in order.
func (s *Session) route(in *interp, ev event) {
	s.mu.Lock()
	r := s.running
	if r == nil || r.in != in || ev.id != r.id {
		// Output of background work after its cell ended belongs to that
		// cell, as in Jupyter, within the same limit; it is stored, not
		// delivered.
		if last := s.last; last != nil && last.in == in && ev.id == last.id && ev.kind == evOutput &&
			ev.out.Type != TypeClearOutput && !ev.update {
			last.add(ev)
		}
		s.mu.Unlock()
		return
	}
	switch ev.kind {
	case evStarted:
		r.cell.ExecutionCount = ev.count
		s.mu.Unlock()
		select {
		case r.started <- struct{}{}:
		default:
		}
		return
	case evDone:
		// Only a claim: wait checks it (see idleCheck).
		r.doneEv, r.claimed = ev, true
		s.mu.Unlock()
		select {
		case r.doneSeen <- struct{}{}:
		default:
		}
		return
	case evProtocol:
		ev.out = Output{Type: TypeStream, Name: "stderr", Text: "coderun: " + ev.err + "\n"}
	}
	if ev.update {
		// A display shown by an earlier cell is updated where it is.
		for _, c := range s.history {
			for i := range c.Outputs {
				if c.Outputs[i].DisplayID == ev.out.DisplayID {
					c.Outputs[i].Data, c.Outputs[i].Metadata = ev.out.Data, ev.out.Metadata
				}
			}
		}
	}
	out, deliver := r.add(ev)
	select {
	case <-r.done:
		deliver = false // Execute may have returned: the output is only stored
	default:
	}
	cb := r.onOutput
	s.mu.Unlock()
	if deliver && cb != nil {
		cb(out)
	}
}

// add applies an output to the cell (s.mu held) and returns what to
// deliver to OnOutput, if anything.
func (r *run) add(ev event) (Output, bool) {
	o := ev.out
	c := r.cell
	switch {
	case o.Type == TypeClearOutput:
		if o.Wait {
			r.clear = true
		} else {
			c.Outputs = c.Outputs[:0]
		}
		return o, true
	case ev.update:
		for i := range c.Outputs {
			if c.Outputs[i].DisplayID == o.DisplayID {
				c.Outputs[i].Data, c.Outputs[i].Metadata = o.Data, o.Metadata
			}
		}
		o.Type = TypeUpdateDisplayData
		return o, true
	}
	n := outputSize(o)
	if r.used+n > r.limit {
		c.OutputTruncated = true
		return o, false
	}
	r.used += n
	if r.clear {
		r.clear = false
		c.Outputs = c.Outputs[:0]
	}
	c.Outputs = appendOutput(c.Outputs, o)
	return o, true
}

func outputSize(o Output) int64 {
	n := int64(len(o.Text) + len(o.Evalue))
	for _, v := range o.Data {
		if s, ok := v.(string); ok {
			n += int64(len(s))
		} else {
			n += 64
		}
	}
	for _, l := range o.Traceback {
		n += int64(len(l))
	}
	return n
}

// appendOutput merges consecutive stream outputs of the same name.
func appendOutput(outs []Output, o Output) []Output {
	if o.Type == TypeStream && len(outs) > 0 {
		last := &outs[len(outs)-1]
		if last.Type == TypeStream && last.Name == o.Name {
			last.Text += o.Text
			return outs
		}
	}
	return append(outs, o)
}

// Interrupt stops the running cell as Ctrl-C would (SIGINT: a
// KeyboardInterrupt in Python), keeping the session's state; if the cell
// does not stop within the grace period, the interpreter is killed and
// restarted. It does nothing when no cell runs.
func (s *Session) Interrupt() {
	s.mu.Lock()
	r := s.running
	s.mu.Unlock()
	if r != nil {
		select {
		case r.stop <- struct{}{}:
		default:
		}
	}
}

// Restart replaces the interpreter by a fresh one (a running cell is
// killed and reports it); the workspace and the history are kept.
func (s *Session) Restart(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.mu.Lock()
	in := s.in
	s.mu.Unlock()
	if in != nil {
		in.kill(killRestart)
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, err := s.startLocked(ctx)
	return err
}

// startLocked replaces the interpreter (killing the current one if it is
// alive). The caller holds the turn.
func (s *Session) startLocked(ctx context.Context) (*interp, error) {
	s.mu.Lock()
	old := s.in
	s.mu.Unlock()
	if old != nil {
		if old.alive() {
			old.kill(killRestart)
		}
		<-old.dead
		s.mu.Lock()
		old.reported = true // replaced on purpose: nothing to tell the next cell
		s.mu.Unlock()
	}
	in, err := startInterp(ctx, s.sb, s.cfg.newDriver(), s.route, s.cfg.StartTimeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if s.closed != nil {
		in.kill(killClose)
		return nil, s.closed
	}
	s.in = in
	return in, nil
}

// acquire takes the session's turn (one cell, restart or start at a time).
func (s *Session) acquire(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if err := s.usable(); err != nil {
		<-s.turn
		return err
	}
	return nil
}

func (s *Session) release() { <-s.turn }

func (s *Session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// History returns copies of the session's cells, oldest first.
func (s *Session) History() []Cell {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Cell, len(s.history))
	for i, c := range s.history {
		out[i] = *c.clone()
	}
	return out
}

// Info is a session's state at a glance.
type Info struct {
	ID string `json:"id"`
	// Tenant owns the session when a Manager made it ("" otherwise).
	Tenant   string           `json:"tenant,omitempty"`
	Language sandbox.Language `json:"language"`
	Created  time.Time        `json:"created"`
	LastUsed time.Time        `json:"last_used"`
	Cells    int              `json:"cells"`
	Busy     bool             `json:"busy"`
	// Alive is false when the interpreter has ended and not yet been
	// restarted (the next cell restarts it).
	Alive bool `json:"alive"`
	// Pooled is set when the session came from a warm pool.
	Pooled bool `json:"pooled"`
	// Runtime names the runtime whose sandbox the session runs in (linux,
	// gvisor, docker), when the runtime has a name.
	Runtime string `json:"runtime,omitempty"`
	// Interpreter names the interpreter ("Python 3.11.2, IPython 8.5.0").
	Interpreter string `json:"interpreter,omitempty"`
	Closed      string `json:"closed,omitempty"`
}

// Info reports the session's state.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := Info{ID: s.id, Tenant: s.tenant, Language: s.cfg.Language, Created: s.created, LastUsed: s.lastUsed,
		Cells: len(s.history), Busy: s.running != nil, Pooled: s.pooled, Runtime: s.runtime}
	if s.in != nil {
		info.Alive = s.in.alive()
		info.Interpreter = describeInterp(s.cfg.Language, s.in.info)
	}
	if s.closed != nil {
		info.Closed = s.closed.Error()
	}
	return info
}

func describeInterp(lang sandbox.Language, info map[string]any) string {
	if lang == sandbox.Bash {
		return "bash"
	}
	if lang == sandbox.Node {
		v, _ := info["version"].(string)
		return "Node.js " + v
	}
	v, _ := info["version"].(string)
	ip, _ := info["ipython"].(string)
	if v == "" {
		return "Python"
	}
	return "Python " + v + ", IPython " + ip
}

func (s *Session) cells() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.history)
}

func (s *Session) lastUse() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed, s.running != nil || len(s.turn) > 0 || s.holds > 0
}

// Upload writes a file into the workspace (path relative to /work).
func (s *Session) Upload(path string, data []byte, mode fs.FileMode) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.sb.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("session: upload %s: %w", path, err)
	}
	s.touch()
	return nil
}

// Download reads a regular file of the workspace, at most max bytes
// (truncated says there was more). Links are never followed.
func (s *Session) Download(path string, max int64) (data []byte, truncated bool, err error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	data, truncated, err = s.sb.ReadFile(path, max)
	if err != nil {
		return nil, false, fmt.Errorf("session: download %s: %w", path, err)
	}
	s.touch()
	return data, truncated, nil
}

// Files lists the workspace.
func (s *Session) Files() ([]sandbox.FileInfo, bool, error) {
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	files, truncated, err := s.sb.Files()
	if err != nil {
		return nil, false, fmt.Errorf("session: list files: %w", err)
	}
	return files, truncated, nil
}

func (s *Session) touch() {
	s.mu.Lock()
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// Hold marks the session in use, as a running cell does, until the
// function it returns is called (once): a caller whose own work keeps the
// session in use between cells (an E2B sandbox's commands, which run
// beside its interpreter) keeps a Manager from evicting it as idle.
func (s *Session) Hold() (release func()) {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds--
			s.lastUsed = time.Now()
			s.mu.Unlock()
		})
	}
}

// Close stops the interpreter and removes the sandbox and its files. A
// running cell ends with its interpreter and says so.
func (s *Session) Close() error { return s.closeWith(ErrClosed) }

func (s *Session) closeWith(reason error) error {
	s.mu.Lock()
	if s.closed != nil {
		s.mu.Unlock()
		return nil
	}
	s.closed = reason
	in := s.in
	onClose := s.onClose
	s.mu.Unlock()
	if in != nil {
		in.killNote(killClose, reason.Error())
		<-in.dead
	}
	var err error
	if s.ownsSB {
		err = s.sb.Close()
	}
	if onClose != nil {
		onClose()
	}
	if err != nil {
		return fmt.Errorf("session: close sandbox: %w", err)
	}
	return nil
}

// Closed reports why the session can no longer be used (ErrClosed, an
// *EvictedError), or nil.
func (s *Session) Closed() error { return s.usable() }
