package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// interp is one interpreter: a driver program running in the session's
// sandbox, from its start to its end. Its output is read by the driver's
// readers and handed, in order, to route by one dispatching goroutine.
type interp struct {
	proc    sandbox.Process
	drv     driver
	events  chan event
	ready   chan event    // the driver's first evReady
	dead    chan struct{} // closed once the program has ended and all its output was routed
	ending  *Ending       // set before dead is closed
	diag    *tail
	started time.Time
	info    map[string]any // from the ready event
	// reported is set (under the session's mu) once a cell has told how
	// the interpreter ended.
	reported bool

	mu       sync.Mutex
	killedBy killCause
	note     string // why, in words, when the cause needs them
}

// killCause is why the session killed an interpreter.
type killCause int

const (
	notKilled     killCause = iota
	killTimeout             // the cell did not stop within the grace period after its time limit
	killInterrupt           // the cell did not stop within the grace period after Interrupt
	killRestart             // Restart
	killClose               // Close or eviction
	killProtocol            // the driver stopped speaking the protocol
	killStart               // it did not become ready
)

// startInterp starts drv's program in sb and waits until it is ready.
// route receives every event but the ready one.
func startInterp(ctx context.Context, sb sandbox.Sandbox, drv driver, route func(*interp, event), timeout time.Duration) (*interp, error) {
	proc, err := sb.Start(ctx, drv.program())
	if err != nil {
		return nil, fmt.Errorf("session: start interpreter: %w", err)
	}
	in := &interp{proc: proc, drv: drv, events: make(chan event, 64), ready: make(chan event, 1),
		dead: make(chan struct{}), diag: newTail(8 << 10), started: time.Now()}
	readersDone := make(chan struct{})
	go func() {
		defer close(readersDone)
		drv.read(proc.Stdout(), proc.Stderr(), func(ev event) { in.events <- ev }, in.diag)
	}()
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		first := true
		for ev := range in.events {
			if ev.kind == evReady && first {
				first = false
				in.ready <- ev
				continue
			}
			route(in, ev)
		}
	}()
	go in.watch(readersDone, dispatched)

	if hello, err := drv.hello(); err != nil {
		in.kill(killStart)
		<-in.dead
		return nil, err
	} else if hello != nil {
		if err := in.send(ctx, hello); err != nil {
			in.kill(killStart)
			<-in.dead
			return nil, err
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	fail := func(err error) (*interp, error) {
		in.kill(killStart)
		<-in.dead
		return nil, err
	}
	select {
	case ev := <-in.ready:
		if ev.err != "" {
			return fail(fmt.Errorf("session: interpreter failed to start: %s", ev.err))
		}
		in.info = ev.info
		return in, nil
	case <-in.dead:
		return nil, fmt.Errorf("session: interpreter ended while starting: %s", in.ending.describe())
	case <-t.C:
		return fail(fmt.Errorf("session: interpreter not ready after %s", timeout))
	case <-ctx.Done():
		return fail(fmt.Errorf("session: start interpreter: %w", context.Cause(ctx)))
	}
}

// watch waits for the program to end and its output to be read, then
// records how it ended and closes dead. A program that stops talking
// (closes its protocol stream) but does not exit is killed.
func (in *interp) watch(readersDone, dispatched chan struct{}) {
	waited := make(chan *sandbox.Result, 1)
	go func() { waited <- in.proc.Wait(context.Background()) }()
	var res *sandbox.Result
	select {
	case res = <-waited:
	case <-readersDone:
		select {
		case res = <-waited:
		case <-time.After(2 * time.Second):
			in.kill(killProtocol)
			res = <-waited
		}
	}
	// Every process of the sandbox is gone: the pipes reach their end.
	<-readersDone
	close(in.events)
	<-dispatched
	in.ending = in.makeEnding(res)
	close(in.dead)
}

// kill stops the interpreter at once; the first cause is kept.
func (in *interp) kill(cause killCause) { in.killNote(cause, "") }

func (in *interp) killNote(cause killCause, note string) {
	in.mu.Lock()
	if in.killedBy == notKilled {
		in.killedBy, in.note = cause, note
	}
	in.mu.Unlock()
	in.proc.Kill()
}

func (in *interp) cause() killCause {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.killedBy
}

func (in *interp) alive() bool {
	select {
	case <-in.dead:
		return false
	default:
		return true
	}
}

// send writes data to the driver's stdin. A write that cannot complete
// (ctx ends, the program is gone) leaves the protocol broken, so the
// interpreter is killed.
func (in *interp) send(ctx context.Context, data []byte) error {
	written := make(chan error, 1)
	go func() {
		_, err := in.proc.Stdin().Write(data)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return fmt.Errorf("session: send to interpreter: %w", err)
		}
		return nil
	case <-in.dead:
		return errors.New("session: the interpreter ended")
	case <-ctx.Done():
		in.kill(killProtocol)
		return fmt.Errorf("session: send to interpreter: %w", context.Cause(ctx))
	}
}

func (in *interp) makeEnding(res *sandbox.Result) *Ending {
	e := &Ending{Reason: res.Reason, ExitCode: res.ExitCode, Signal: res.Signal, Usage: res.Usage,
		Diagnostics: in.diag.String()}
	in.mu.Lock()
	cause, note := in.killedBy, in.note
	in.mu.Unlock()
	switch {
	case res.Reason == sandbox.ReasonMemoryLimit:
		e.Message = "the interpreter was killed: the session exceeded its memory limit"
		if res.Error != "" {
			e.Message += " (" + res.Error + ")"
		}
	case cause == killTimeout:
		e.Message = "the interpreter was killed: the cell did not stop within the grace period after reaching its time limit"
	case cause == killInterrupt:
		e.Message = "the interpreter was killed: the cell did not stop within the grace period after it was interrupted"
	case cause == killRestart:
		e.Message = "the interpreter was killed to restart the session"
	case cause == killClose && note != "":
		e.Message = "the interpreter was stopped: " + note
	case cause == killClose:
		e.Message = "the interpreter was stopped: the session was closed"
	case cause == killProtocol:
		e.Message = "the interpreter was killed: its driver stopped answering"
	case cause == killStart:
		e.Message = "the interpreter was killed: it did not start properly"
	case res.Reason == sandbox.ReasonExited && res.Signal != "":
		e.Message = "the interpreter was terminated by " + res.Signal
	case res.Reason == sandbox.ReasonExited:
		e.Message = fmt.Sprintf("the interpreter exited with code %d", res.ExitCode)
	default:
		e.Message = "the interpreter ended: " + res.Summary()
	}
	return e
}

func (e *Ending) describe() string {
	if e == nil {
		return "unknown"
	}
	s := e.Message
	if e.Diagnostics != "" {
		s += ": " + clip(e.Diagnostics, 2000)
	}
	return s
}
