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
// set-up. A run whose limits or environment differ starts its own. Each
// sandbox serves one run and is then closed; the pool refills in the
// background.
type pool struct {
	irt    sandbox.Interactive
	box    sandbox.Limits
	ready  chan *waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPool(irt sandbox.Interactive, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{irt: irt, box: boxLimits(sandbox.DefaultCompileLimits, sandbox.DefaultLimits), ready: make(chan *waiting, size), cancel: cancel}
	p.wg.Add(1)
	go p.fill(ctx)
	return p
}

// fill makes sandboxes and offers them until the pool closes; a failure
// is retried after a growing pause (runs without the pool report it).
func (p *pool) fill(ctx context.Context) {
	defer p.wg.Done()
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		w, err := startProgram(ctx, p.irt, p.box, nil, nil, nil, waitDriver)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		w.pooled = true
		select {
		case p.ready <- w:
		case <-ctx.Done():
			w.close()
		}
	}
}

// take returns a ready sandbox, or nil when none is waiting.
func (p *pool) take() *waiting {
	select {
	case w := <-p.ready:
		return w
	default:
		return nil
	}
}

// close stops the filling and closes the sandboxes still waiting.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case w := <-p.ready:
			w.close()
		default:
			return
		}
	}
}
