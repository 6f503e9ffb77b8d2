package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/store"
)

// Settings are a run's settings as a request gives them; zero fields take
// the server's configuration.
type Settings struct {
	// Model is "provider:model"; empty means the configured model.
	Model string
	// Mode is agent.ModeSingle or agent.ModeSteps; empty means configured.
	Mode agent.Mode
	// Format is agent.FormatTool or agent.FormatFenced; empty means
	// configured.
	Format agent.Format
	// Approve is ApproveDefer, ApproveAll or ApproveNone.
	Approve string
	// MaxRetries and TimeoutRetries, when set, replace the configured
	// bounds (0: none).
	MaxRetries     *int
	TimeoutRetries *int
	// MaxSteps, MaxTokens and MaxTime replace the configured budgets when
	// not zero.
	MaxSteps  int
	MaxTokens int64
	MaxTime   time.Duration
	// Limits' non-zero fields replace the configured limits of each
	// execution.
	Limits sandbox.Limits
}

// The approval modes of a run started over HTTP. There is no one to ask
// at a terminal: code the policy asks about either waits for a decision
// through the API (defer), or is decided by the mode.
const (
	ApproveDefer = "defer" // the run pauses, awaiting approval
	ApproveAll   = "all"   // approve everything the policy does not deny
	ApproveNone  = "none"  // reject everything the policy asks about
)

// Agents builds the agent that drives a run of a tenant: from the
// server's configuration with s's settings over it, recording into st and
// telling observe of each step as it is stored. An error for settings it
// cannot use (an unknown model, no key for it, an unknown mode) should be
// a *SettingsError, which the API answers with 400.
type Agents interface {
	Agent(ctx context.Context, st store.Tenant, s Settings, observe func(agent.Event)) (*agent.Agent, error)
}

// SettingsError is a run's settings that cannot be used.
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

// Options configure a Service.
type Options struct {
	// Store holds every tenant's records.
	Store store.Store
	// Agents builds the agents that drive runs.
	Agents Agents
	// MaxFileBytes bounds the input files of a run together; 0 means
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxRunning bounds the runs a tenant has driven at once (started,
	// resumed, decided); beyond it a request is answered 429. 0 means
	// DefaultMaxRunning.
	MaxRunning int
	// Logger logs runs that end in an error of the service's own; nil
	// discards.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxFileBytes = 16 << 20
	DefaultMaxRunning   = 8
)

// errTooMany is the answer to a tenant already driving MaxRunning runs.
var errTooMany = errors.New("too many runs running")

// ErrCancelled is the cause of the context of a run cancelled through
// the API.
var ErrCancelled = errors.New("cancelled through the API")

// Service serves the runs API and drives the runs it starts. Its methods
// are safe for concurrent use.
type Service struct {
	opts Options
	base context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup

	// shutting is closed when the server begins to shut down: the event
	// streams end then (see Shutdown).
	shutting     chan struct{}
	shuttingOnce sync.Once

	mu      sync.Mutex
	closed  bool
	driving map[runKey]*driving
	active  map[string]int // runs driven per tenant
	watch   map[runKey]map[chan struct{}]struct{}
}

type runKey struct{ tenant, id string }

// driving is a run driven by the service: how to cancel it.
type driving struct{ cancel context.CancelCauseFunc }

// New returns a service over opts.
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Agents == nil {
		return nil, errors.New("runs: a store and an agent builder are required")
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancelCause(context.Background())
	return &Service{opts: opts, base: base, stop: stop, shutting: make(chan struct{}),
		driving: map[runKey]*driving{}, active: map[string]int{}, watch: map[runKey]map[chan struct{}]struct{}{}}, nil
}

// Shutdown ends the event streams, each with event "shutdown" (the run as
// it is), so that a server shutting down need not wait for streams that
// would not end by themselves (a run awaiting approval): call it as the
// shutdown begins. The runs are left to Close, which suspends them,
// resumable.
func (s *Service) Shutdown() { s.shuttingOnce.Do(func() { close(s.shutting) }) }

// Close suspends the runs the service drives (agent.ErrSuspended): each is
// left at its last checkpoint, to be resumed. It waits for them to stop
// until ctx is done.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop(agent.ErrSuspended)
	if err := server.Wait(ctx, &s.wg); err != nil {
		return fmt.Errorf("runs: runs still stopping: %w", err)
	}
	return nil
}

// tenant returns the records of a tenant.
func (s *Service) tenant(name string) (store.Tenant, error) {
	st, err := s.opts.Store.Tenant(name)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	return st, nil
}

// errClosed is the answer to a request to drive a run after Close.
var errClosed = errors.New("the server is shutting down")

// drive runs f (an agent's Run or Resume) in a goroutine of the service,
// under a context of its own, and returns the run's id as soon as the
// first step is stored (or f's error, when it fails before that). Until f
// returns, the run can be cancelled (cancel) and its watchers hear of
// every step. cancelAtOnce cancels the run as soon as its first step is
// stored: a paused run resumed only to be ended.
func (s *Service) drive(tenant string, build func(observe func(agent.Event)) (*agent.Agent, error),
	f func(context.Context, *agent.Agent) (*agent.Result, error), cancelAtOnce bool) (string, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", errClosed
	}
	if n := s.active[tenant]; n >= s.opts.MaxRunning {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %d of this tenant's runs are running (at most %d at once)", errTooMany, n, s.opts.MaxRunning)
	}
	s.active[tenant]++
	s.wg.Add(1)
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		if s.active[tenant]--; s.active[tenant] == 0 {
			delete(s.active, tenant)
		}
		s.mu.Unlock()
		s.wg.Done()
	}
	ctx, cancel := context.WithCancelCause(s.base)
	started := make(chan string, 1)
	var once sync.Once
	var key runKey
	self := &driving{cancel: cancel}
	observe := func(e agent.Event) {
		once.Do(func() {
			key = runKey{tenant, e.RunID}
			s.mu.Lock()
			s.driving[key] = self
			s.mu.Unlock()
			if cancelAtOnce {
				cancel(ErrCancelled)
			}
			started <- e.RunID
		})
		s.notify(runKey{tenant, e.RunID})
	}
	ag, err := build(observe)
	if err != nil {
		cancel(nil)
		done()
		return "", err
	}
	failed := make(chan error, 1)
	go func() {
		defer done()
		defer cancel(nil)
		_, err := f(ctx, ag)
		s.mu.Lock()
		if key.id != "" && s.driving[key] == self {
			delete(s.driving, key)
		}
		s.mu.Unlock()
		if key.id != "" {
			s.notify(key)
		}
		if err != nil {
			s.opts.Logger.Error("agent run", "tenant", tenant, "run", key.id, "error", err.Error())
		}
		failed <- err
	}()
	select {
	case id := <-started:
		return id, nil
	case err := <-failed:
		select {
		case id := <-started:
			return id, nil
		default:
		}
		if err == nil {
			err = errors.New("the run stopped before its first step")
		}
		return "", err
	}
}

// cancelDriven cancels a run this service drives; false if it drives none
// by that id.
func (s *Service) cancelDriven(k runKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.driving[k]
	if ok {
		d.cancel(ErrCancelled)
	}
	return ok
}

// driven reports whether this service drives the run.
func (s *Service) driven(k runKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.driving[k]
	return ok
}

// subscribe returns a channel that receives a value whenever the run
// records a step or stops being driven here, and the function that ends
// the subscription.
func (s *Service) subscribe(k runKey) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.watch[k] == nil {
		s.watch[k] = map[chan struct{}]struct{}{}
	}
	s.watch[k][ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.watch[k], ch)
		if len(s.watch[k]) == 0 {
			delete(s.watch, k)
		}
		s.mu.Unlock()
	}
}

func (s *Service) notify(k runKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.watch[k] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already waiting
		}
	}
}
