package docker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// pool keeps started containers ready, each used by one run only.
type pool struct {
	rt     *Runtime
	ready  chan *box
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// newPool starts filling a pool of n containers with the default limits.
func newPool(rt *Runtime, n int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{rt: rt, ready: make(chan *box, n), cancel: cancel}
	p.done.Add(1)
	go p.fill(ctx)
	return p
}

// fill keeps the pool full until ctx ends, backing off after a failure.
// Its containers wait with Python's interpreter started, under the default
// limits.
func (p *pool) fill(ctx context.Context) {
	defer p.done.Done()
	python, _ := sandbox.LookupInterpreter(sandbox.Python)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// A creation is not cancelled half-way (the engine could finish
		// making a container whose ID the client never learnt): close
		// waits for it instead.
		bctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		b, err := p.rt.newBox(bctx, python, sandbox.DefaultLimits)
		cancel()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		select {
		case <-b.ended: // the interpreter ended before it was ready
			p.rt.discard(b)
			continue
		default:
		}
		backoff = 100 * time.Millisecond
		select {
		case p.ready <- b:
		case <-ctx.Done():
			p.rt.discard(b)
		}
	}
}

// get returns a ready container, or nil when none is.
func (p *pool) get() *box {
	select {
	case b := <-p.ready:
		return b
	default:
		return nil
	}
}

// close stops filling and removes the containers still waiting.
func (p *pool) close() error {
	p.cancel()
	p.done.Wait()
	var errs []error
	for {
		select {
		case b := <-p.ready:
			errs = append(errs, p.rt.destroy(b))
		default:
			return errors.Join(errs...)
		}
	}
}

// PoolReady is the number of started containers waiting in the pool.
func (r *Runtime) PoolReady() int {
	if r.pool == nil {
		return 0
	}
	return len(r.pool.ready)
}
