package session

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// PoolOptions size a Pool.
type PoolOptions struct {
	// Size is the number of ready sessions kept. Default 2.
	Size int
	// Workers start sessions in parallel. Default 1: starting IPython is
	// CPU-bound and should not crowd out the cells of sessions in use.
	Workers int
	// Logf receives start failures (the pool keeps trying, more slowly).
	Logf func(format string, args ...any)
}

// Pool keeps sessions started and ready (the driver up, IPython
// initialised, the configuration's Preload imported), so that a new
// session costs no interpreter start. Each pooled session is handed out
// once; the pool refills in the background.
type Pool struct {
	rt     sandbox.Interactive
	cfg    Config
	ready  chan *Session
	cancel context.CancelFunc
	wg     sync.WaitGroup
	logf   func(string, ...any)
}

// NewPool starts filling a pool of sessions made with cfg.
func NewPool(rt sandbox.Interactive, cfg Config, opts PoolOptions) (*Pool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if opts.Size <= 0 {
		opts.Size = 2
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{rt: rt, cfg: cfg, ready: make(chan *Session, opts.Size), cancel: cancel, logf: opts.Logf}
	for range opts.Workers {
		p.wg.Add(1)
		go p.fill(ctx)
	}
	return p, nil
}

func (p *Pool) fill(ctx context.Context) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		s, err := New(ctx, p.rt, p.cfg)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.logf("session pool: %v", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select {
		case p.ready <- s:
		case <-ctx.Done():
			s.Close()
			return
		}
	}
}

// Get returns a ready session, or starts one if none is waiting.
func (p *Pool) Get(ctx context.Context) (*Session, error) {
	select {
	case s := <-p.ready:
		now := time.Now()
		s.mu.Lock()
		s.pooled, s.created, s.lastUsed = true, now, now
		s.mu.Unlock()
		return s, nil
	default:
		return New(ctx, p.rt, p.cfg)
	}
}

// Ready is the number of sessions waiting.
func (p *Pool) Ready() int { return len(p.ready) }

// Config is the configuration of the pool's sessions.
func (p *Pool) Config() Config { return p.cfg }

// fits reports whether a session made with cfg would be the same as one of
// the pool's, but for Files (uploaded when it is handed out).
func (p *Pool) fits(cfg Config) bool {
	cfg = cfg.withDefaults()
	return cfg.Sandbox == nil && cfg.Language == p.cfg.Language && cfg.Limits == p.cfg.Limits && cfg.Grace == p.cfg.Grace &&
		maps.Equal(cfg.Env, p.cfg.Env) && slices.Equal(cfg.Preload, p.cfg.Preload)
}

// Close stops refilling and closes the sessions waiting.
func (p *Pool) Close() {
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case s := <-p.ready:
			s.Close()
		default:
			return
		}
	}
}
