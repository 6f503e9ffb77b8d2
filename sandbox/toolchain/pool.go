package toolchain

import (
	"context"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// pool keeps sandboxes ready for compiled languages (Options.Pool): each
// made under the limits of the default steps, its driver started and
// waiting for its job, so that a run takes one and skips a sandbox's
// set-up. Each sandbox serves one run and is then closed.
//
// A run fits a pool's sandbox (fits) when its memory and workspace are the
// pool's (the sandbox's cgroup and tmpfs hold them), and its processes,
// open files, output and the sum of its steps' times at most the pool's:
// the driver sets each step's rlimits and the host holds each step to its
// own output, wall and CPU time, so that the pool's are only the
// backstops. SandboxFusion's runs, with time limits of their own, fit
// (only runs with exactly the default limits did).
//
// The pool refills once the run that took a sandbox has ended, not when it
// took it: a sandbox's set-up costs as much CPU as a small compile, and on
// a busy host, made beside the run, it would slow the very run the pool
// was to speed up. At most size sandboxes are made or waiting at once.
//
// Some runtimes (gvisor, docker) count a program's wall time from its
// start, and a pooled driver starts before its run: a sandbox made under
// box alone, having waited longer than the run's own limits, was stopped
// the moment a run took it. So a sandbox is made with maxAge more wall
// time than box (the host's watch still holds each step to its own), and
// one that has waited longer than maxAge is replaced, never taken.
type pool struct {
	irt    sandbox.Interactive
	box    sandbox.Limits // what runs are matched against: the default steps'
	maxAge time.Duration  // the longest a sandbox waits to be taken
	// room holds a token for each sandbox the pool may make: size at
	// first, one more each time a run that took one ends.
	room   chan struct{}
	ready  chan *waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// poolMaxAge is how long a pooled sandbox waits at most (see pool).
const poolMaxAge = 2 * time.Minute

func newPool(irt sandbox.Interactive, size int) *pool {
	return newPoolOf(irt, size, boxLimits(sandbox.DefaultCompileLimits, sandbox.DefaultLimits), poolMaxAge)
}

// newPoolOf is a pool of size sandboxes for runs that fit box, each
// waiting at most maxAge.
func newPoolOf(irt sandbox.Interactive, size int, box sandbox.Limits, maxAge time.Duration) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{irt: irt, box: box, maxAge: maxAge, room: make(chan struct{}, size), ready: make(chan *waiting, size), cancel: cancel}
	for range size {
		p.room <- struct{}{}
	}
	p.wg.Add(1)
	go p.fill(ctx)
	return p
}

// fits reports whether a run whose sandbox would have the limits box can
// take a sandbox of the pool (see pool).
func (p *pool) fits(box sandbox.Limits) bool {
	return box.Memory == p.box.Memory && box.WorkspaceBytes == p.box.WorkspaceBytes &&
		box.Processes <= p.box.Processes && box.OpenFiles <= p.box.OpenFiles && box.OutputBytes <= p.box.OutputBytes &&
		box.WallTime <= p.box.WallTime && box.CPUTime <= p.box.CPUTime
}

// fill makes a sandbox each time there is room for one, until the pool
// closes; a failure is retried after a growing pause (runs without the
// pool report it).
func (p *pool) fill(ctx context.Context) {
	defer p.wg.Done()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.room:
		}
		made := p.box
		made.WallTime += p.maxAge
		w, err := startProgram(ctx, p.irt, made, nil, nil, nil, waitDriver)
		if err != nil {
			p.room <- struct{}{} // the token taken: there is still room
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		w.pooled, w.done = true, p.release
		p.ready <- w // never blocks: at most size sandboxes hold a token
	}
}

// release makes room for one more sandbox: a run that took one has ended.
func (p *pool) release() {
	select {
	case p.room <- struct{}{}:
	default: // cannot happen: each token is given back once
	}
}

// take returns a ready sandbox, or nil when none is waiting; one that has
// waited past maxAge is closed (the pool makes another) and not taken.
func (p *pool) take() *waiting {
	for {
		select {
		case w := <-p.ready:
			if time.Since(w.launched) > p.maxAge {
				w.close()
				continue
			}
			return w
		default:
			return nil
		}
	}
}

// close stops the filling and closes the sandboxes still waiting.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case w := <-p.ready:
			w.sb.Close()
		default:
			return
		}
	}
}
