package linux

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// pool keeps sandboxes ready, their interpreters started and waiting for
// code, so that a run skips namespace setup and interpreter start. Each
// sandbox serves exactly one run and is then destroyed; the pool refills in
// the background.
type pool struct {
	ready  map[sandbox.Language]chan *box
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPool(rt *Runtime, langs []sandbox.Language, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{ready: map[sandbox.Language]chan *box{}, cancel: cancel}
	workers := max(1, min(size, runtime.NumCPU()))
	for _, l := range langs {
		interp, _ := sandbox.LookupInterpreter(l)
		ch := make(chan *box, size)
		p.ready[l] = ch
		for range workers {
			p.wg.Add(1)
			go p.fill(ctx, rt, interp, ch)
		}
	}
	return p
}

// fill creates sandboxes and offers them until the pool closes. Failures
// are logged and retried with a growing pause.
func (p *pool) fill(ctx context.Context, rt *Runtime, interp sandbox.Interpreter, ch chan *box) {
	defer p.wg.Done()
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		b, err := rt.create(ctx, interp, nil, true, nil, 0)
		if err != nil {
			if ctx.Err() == nil {
				rt.logf("coderun: pool: prepare %s sandbox: %v", interp.Language, err)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
			}
			continue
		}
		backoff = 10 * time.Millisecond
		select {
		case ch <- b:
		case <-ctx.Done():
			b.destroy()
		}
	}
}

// take returns a ready sandbox for lang, or nil when none is waiting.
func (p *pool) take(lang sandbox.Language) *box {
	select {
	case b := <-p.ready[lang]:
		return b
	default:
		return nil
	}
}

// waiting reports how many sandboxes for lang are ready.
func (p *pool) waiting(lang sandbox.Language) int { return len(p.ready[lang]) }

func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
	for _, ch := range p.ready {
		close(ch)
		for b := range ch {
			b.destroy()
		}
	}
}
