package session

import (
	"errors"
	"time"
)

// idleCheck confirms a driver's claim that a cell is done by what the
// host sees from outside the sandbox: the interpreter's main thread
// blocked reading its requests (sandbox.Process.AwaitingInput). The cell's
// own code runs in the driver's process and can write anything the driver
// writes, a "done" included; it cannot make the kernel say that the
// interpreter is waiting for the host while it is still running.
//
// An honest driver reaches its read microseconds after its "done", so the
// check made as the claim arrives nearly always succeeds. After a failed
// one, checks repeat with a growing interval. One of those that finds the
// interpreter idle does not end the cell by itself: what the interpreter
// wrote before it blocked (a real "done" after a forged one, the outputs
// before it) may not have been read yet. It asks the interpreter to say
// "done" again (driver.ping); that claim, read after everything written
// before it, is checked as the first was.
type idleCheck struct {
	in      *interp
	ping    func()
	timer   *time.Timer
	c       <-chan time.Time // nil while no check is due
	backoff time.Duration
	pinged  bool // since the last claim
}

const (
	idleFirstRetry = 20 * time.Microsecond
	idleMaxRetry   = 5 * time.Millisecond
)

// newIdleCheck makes a check of in; ping asks in to repeat its claim.
func newIdleCheck(in *interp, ping func()) *idleCheck { return &idleCheck{in: in, ping: ping} }

// poll fires when the next check is due.
func (c *idleCheck) poll() <-chan time.Time { return c.c }

// claimed checks a claim that just arrived, and reports whether the cell
// is done.
func (c *idleCheck) claimed() bool {
	c.pinged, c.backoff = false, 0
	if c.in.idle() {
		c.c = nil
		return true
	}
	c.schedule()
	return false
}

// polled makes a check that is due. When the interpreter is idle, it asks
// for the claim again, once per claim.
func (c *idleCheck) polled() {
	c.c = nil
	if !c.in.idle() {
		c.schedule()
		return
	}
	if !c.pinged {
		c.pinged = true
		c.ping()
	}
}

func (c *idleCheck) schedule() {
	c.backoff = min(max(2*c.backoff, idleFirstRetry), idleMaxRetry)
	if c.timer == nil {
		c.timer = time.NewTimer(c.backoff)
	} else {
		c.timer.Reset(c.backoff)
	}
	c.c = c.timer.C
}

func (c *idleCheck) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// idle reports whether the interpreter is waiting for its next request, as
// the sandbox's runtime sees it from outside. A runtime that cannot tell
// leaves the session to take the driver at its word.
func (in *interp) idle() bool {
	ok, err := in.proc.AwaitingInput()
	if errors.Is(err, errors.ErrUnsupported) {
		return true
	}
	return ok && err == nil
}
