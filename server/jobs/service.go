package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
)

// Options configure a Service.
type Options struct {
	// Runtime runs the items.
	Runtime sandbox.Runtime
	// Concurrency bounds the items one job runs at once (a request may ask
	// for fewer); 0 means the number of CPUs.
	Concurrency int
	// Limits are the default limits of each item.
	Limits sandbox.Limits
	// MaxRunning bounds the jobs a tenant runs at once; 0 means
	// DefaultMaxRunning.
	MaxRunning int
	// Keep is how many ended jobs a tenant keeps (the oldest go first);
	// 0 means DefaultKeep.
	Keep int
}

// Defaults of Options.
const (
	DefaultMaxRunning = 2
	DefaultKeep       = 50
)

// Status is where a job stands.
type Status string

// The statuses of a job.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded" // every item has a verdict
	StatusFailed    Status = "failed"    // the runtime failed: Error says how
	StatusCancelled Status = "cancelled" // cancelled, or the server shut down
)

// Service runs and keeps the tenants' jobs. Its methods are safe for
// concurrent use.
type Service struct {
	opts Options
	base context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	jobs   map[string]*job // by id
}

// New returns a service over opts.
func New(opts Options) (*Service, error) {
	if opts.Runtime == nil {
		return nil, errors.New("jobs: a runtime is required")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = runtime.NumCPU()
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	base, stop := context.WithCancelCause(context.Background())
	return &Service{opts: opts, base: base, stop: stop, jobs: map[string]*job{}}, nil
}

// Shutdown refuses new jobs and cancels the running ones (status
// cancelled, error "the server is shutting down"), whose event streams
// then end with event "end": call it as a shutdown begins, so that the
// streams need not hold the shutdown for its grace period.
func (s *Service) Shutdown() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop(errClosed)
}

// Close cancels the running jobs (see Shutdown) and waits for them to
// stop until ctx is done.
func (s *Service) Close(ctx context.Context) error {
	s.Shutdown()
	if err := server.Wait(ctx, &s.wg); err != nil {
		return fmt.Errorf("jobs: jobs still stopping: %w", err)
	}
	return nil
}

// job is one submitted batch and what became of it.
type job struct {
	id, tenant string
	created    time.Time
	items      []eval.Item
	skipped    []Skipped
	ks         []int
	cancel     context.CancelFunc

	mu       sync.Mutex
	status   Status
	err      string
	started  time.Time
	finished time.Time
	tally    eval.Tally
	verdicts []eval.Verdict
	changed  chan struct{} // closed and replaced at every change
}

// Skipped is an input line that was not used, and why.
type Skipped struct {
	Input string `json:"input"` // "problems" or "samples"
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// errTooMany is the answer to a tenant already running MaxRunning jobs.
var errTooMany = errors.New("too many jobs running")

// errClosed is the answer to a job submitted after Close.
var errClosed = errors.New("the server is shutting down")

// submit starts a job of tenant's over items.
func (s *Service) submit(tenant string, items []eval.Item, skipped []Skipped, ks []int, concurrency int, limits sandbox.Limits) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	running := 0
	for _, j := range s.jobs {
		if j.tenant == tenant && j.current() == StatusRunning {
			running++
		}
	}
	if running >= s.opts.MaxRunning {
		return nil, fmt.Errorf("%w: %d of this tenant's jobs are running (at most %d at once)", errTooMany, running, s.opts.MaxRunning)
	}
	s.prune(tenant)
	ctx, cancel := context.WithCancel(s.base)
	j := &job{id: newID(), tenant: tenant, created: time.Now(), items: items, skipped: skipped, ks: ks, cancel: cancel,
		status: StatusRunning, started: time.Now(), changed: make(chan struct{})}
	s.jobs[j.id] = j
	if concurrency <= 0 || concurrency > s.opts.Concurrency {
		concurrency = s.opts.Concurrency
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		err := eval.Run(ctx, s.opts.Runtime, eval.Feed(items...), eval.Options{Concurrency: concurrency, Limits: limits.WithDefaults(s.opts.Limits)},
			func(v eval.Verdict) error {
				j.add(v)
				return nil
			})
		if err != nil && errors.Is(context.Cause(ctx), errClosed) {
			err = errClosed
		}
		j.end(err)
	}()
	return j, nil
}

// prune forgets the tenant's oldest ended jobs beyond Keep - 1 (a new one
// is coming); s.mu is held.
func (s *Service) prune(tenant string) {
	var ended []*job
	for _, j := range s.jobs {
		if j.tenant == tenant && j.current() != StatusRunning {
			ended = append(ended, j)
		}
	}
	sort.Slice(ended, func(a, b int) bool { return ended[a].created.Before(ended[b].created) })
	for len(ended) > s.opts.Keep-1 {
		delete(s.jobs, ended[0].id)
		ended = ended[1:]
	}
}

// get returns tenant's job by id; nil for none (or another tenant's).
func (s *Service) get(tenant, id string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[id]; j != nil && j.tenant == tenant {
		return j
	}
	return nil
}

// list returns tenant's jobs, newest first.
func (s *Service) list(tenant string) []*job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*job
	for _, j := range s.jobs {
		if j.tenant == tenant {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].created.After(out[b].created) })
	return out
}

// current is the job's status.
func (j *job) current() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.status
}

func (j *job) add(v eval.Verdict) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.tally.Add(v, true)
	j.verdicts = append(j.verdicts, v)
	j.signal()
}

func (j *job) end(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.finished = time.Now()
	switch {
	case err == nil:
		j.status = StatusSucceeded
	case errors.Is(err, errClosed):
		j.status, j.err = StatusCancelled, err.Error()
	case errors.Is(err, context.Canceled):
		j.status = StatusCancelled
	default:
		j.status, j.err = StatusFailed, err.Error()
	}
	j.signal()
}

// signal wakes the job's watchers; j.mu is held.
func (j *job) signal() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// watch returns a channel closed at the job's next change.
func (j *job) watch() <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.changed
}

// View is a job as the API shows it.
type View struct {
	ID         string    `json:"id"`
	Status     Status    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Error says why a failed job failed (or that the server shut down,
	// cancelling it).
	Error string `json:"error,omitempty"`
	// Total is the number of items; Done those with a verdict, Passed
	// those that passed.
	Total  int `json:"total"`
	Done   int `json:"done"`
	Passed int `json:"passed"`
	// Skipped are the input lines that were not used.
	Skipped []Skipped `json:"skipped"`
	// Summary sums up the verdicts so far.
	Summary eval.Summary `json:"summary"`
}

func (j *job) view() View {
	j.mu.Lock()
	defer j.mu.Unlock()
	end := time.Now()
	if !j.finished.IsZero() {
		end = j.finished
	}
	skipped := j.skipped
	if skipped == nil {
		skipped = []Skipped{}
	}
	sum := j.tally.Summary(j.ks, end.Sub(j.started))
	if sum.K == nil {
		sum.K = []int{} // no k that every task has enough samples for (yet)
	}
	return View{ID: j.id, Status: j.status, CreatedAt: j.created, FinishedAt: j.finished, Error: j.err,
		Total: len(j.items), Done: j.tally.Done(), Passed: j.tally.Passed(), Skipped: skipped, Summary: sum}
}

// verdictsAfter returns the verdicts after the first n.
func (j *job) verdictsAfter(n int) []eval.Verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n >= len(j.verdicts) {
		return []eval.Verdict{}
	}
	return append([]eval.Verdict(nil), j.verdicts[n:]...)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}
