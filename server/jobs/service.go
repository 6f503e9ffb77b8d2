package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/store"
)

// Options configure a Service.
type Options struct {
	// Runtime runs the items.
	Runtime sandbox.Runtime
	// Store keeps the jobs, their progress and verdicts, so that a
	// restarted server still serves them.
	Store store.Store
	// Concurrency bounds the items one job runs at once (a request may ask
	// for fewer); 0 means the number of CPUs.
	Concurrency int
	// Limits are the default limits of each item.
	Limits sandbox.Limits
	// MaxRunning bounds the jobs a tenant runs at once in this server; 0
	// means DefaultMaxRunning.
	MaxRunning int
	// Keep is how many jobs that are not running a tenant keeps (the
	// oldest go first, verdicts and all); 0 means DefaultKeep.
	Keep int
}

// Defaults of Options.
const (
	DefaultMaxRunning = 2
	DefaultKeep       = 50
)

// Status is where a job stands.
type Status = store.JobStatus

// The statuses of a job.
const (
	StatusRunning   = store.JobRunning
	StatusSucceeded = store.JobSucceeded // every item has a verdict
	StatusFailed    = store.JobFailed    // the runtime failed: Error says how
	StatusCancelled = store.JobCancelled // cancelled by its tenant
	// StatusInterrupted: the server running it shut down or died; its
	// verdicts so far are kept, and POST /v1/jobs/{id}/resume runs the
	// items left.
	StatusInterrupted = store.JobInterrupted
)

// Service runs the tenants' jobs and serves them from the store. Its
// methods are safe for concurrent use.
type Service struct {
	opts  Options
	owner store.Owner // this service, as the owner of the jobs it runs
	base  context.Context
	stop  context.CancelCauseFunc
	wg    sync.WaitGroup

	mu     sync.Mutex
	closed bool
	live   map[string]*job // the jobs this service runs, by key(tenant, id)
	ended  map[string]*job // jobs read back that ended for good, by key
}

// New returns a service over opts.
func New(opts Options) (*Service, error) {
	if opts.Runtime == nil {
		return nil, errors.New("jobs: a runtime is required")
	}
	if opts.Store == nil {
		return nil, errors.New("jobs: a store is required")
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
	return &Service{opts: opts, owner: store.NewOwner(), base: base, stop: stop, live: map[string]*job{}, ended: map[string]*job{}}, nil
}

// Shutdown refuses new jobs and stops the running ones, which are left
// interrupted in the store (their verdicts kept, resumable), and whose
// event streams then end with event "end": call it as a shutdown begins,
// so that the streams need not hold the shutdown for its grace period.
func (s *Service) Shutdown() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop(errClosed)
}

// Close stops the running jobs (see Shutdown) and waits for them to stop
// until ctx is done.
func (s *Service) Close(ctx context.Context) error {
	s.Shutdown()
	if err := server.Wait(ctx, &s.wg); err != nil {
		return fmt.Errorf("jobs: jobs still stopping: %w", err)
	}
	return nil
}

func key(tenant, id string) string { return tenant + "/" + id }

// spec is what the store keeps of a submission: the request (to resume
// it) and the lines that were skipped.
type spec struct {
	Request Request   `json:"request"`
	Skipped []Skipped `json:"skipped"`
}

// job is one submitted batch and what became of it: one this service
// runs (live: it changes, and signals each change), or a snapshot read
// back from the store.
type job struct {
	id, tenant string
	created    time.Time
	total      int
	skipped    []Skipped
	ks         []int
	live       bool
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

// errConflict is a job that cannot be resumed (or cancelled) as it stands.
var errConflict = errors.New("conflict")

// errLost is a job whose lease another server took.
var errLost = errors.New("another server has taken over the job")

// tenantStore is tenant's records.
func (s *Service) tenantStore(tenant string) (store.Tenant, error) {
	st, err := s.opts.Store.Tenant(tenant)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return st, nil
}

// admit checks that tenant may start one more job here; s.mu is held.
func (s *Service) admit(tenant string) error {
	if s.closed {
		return errClosed
	}
	running := 0
	for _, j := range s.live {
		if j.tenant == tenant && j.current() == StatusRunning {
			running++
		}
	}
	if running >= s.opts.MaxRunning {
		return fmt.Errorf("%w: %d of this tenant's jobs are running (at most %d at once)", errTooMany, running, s.opts.MaxRunning)
	}
	return nil
}

// submit records a job of tenant's over items and starts it.
func (s *Service) submit(ctx context.Context, tenant string, req *Request, items []eval.Item, skipped []Skipped) (*job, error) {
	st, err := s.tenantStore(tenant)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admit(tenant); err != nil {
		return nil, err
	}
	if err := s.prune(ctx, st); err != nil {
		return nil, err
	}
	data, err := json.Marshal(spec{Request: *req, Skipped: skipped})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	rec, err := st.CreateJob(ctx, store.NewJob{ID: newID(), Owner: s.owner, Total: len(items), Spec: data})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	j := &job{id: rec.ID, tenant: tenant, created: rec.CreatedAt, total: len(items), skipped: skipped, ks: req.K, live: true,
		status: StatusRunning, started: time.Now(), changed: make(chan struct{})}
	s.start(st, j, rec.LeaseUntil, items, req)
	return j, nil
}

// resume claims tenant's interrupted job id and runs its items that have
// no verdict yet.
func (s *Service) resume(ctx context.Context, tenant, id string) (*job, error) {
	st, err := s.tenantStore(tenant)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.live[key(tenant, id)]; j != nil && j.current() == StatusRunning {
		return nil, fmt.Errorf("%w: job %s is running", errConflict, id)
	}
	if err := s.admit(tenant); err != nil {
		return nil, err
	}
	rec, err := st.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if shown := rec.Shown(); shown != StatusInterrupted {
		return nil, fmt.Errorf("%w: job %s is %s: only an interrupted job resumes", errConflict, id, shown)
	}
	var sp spec
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return nil, fmt.Errorf("jobs: job %s: read what was submitted: %w", id, err)
	}
	items, _, err := sp.Request.items()
	if err != nil {
		return nil, fmt.Errorf("jobs: job %s: read what was submitted: %w", id, err)
	}
	rec, err = st.ClaimJob(ctx, id, s.owner)
	switch {
	case errors.Is(err, store.ErrNotOwner), errors.Is(err, store.ErrEnded):
		return nil, fmt.Errorf("%w: %v", errConflict, err)
	case err != nil:
		return nil, err
	}
	j, err := load(ctx, st, rec)
	if err != nil {
		_ = st.ReleaseJob(ctx, id, s.owner)
		return nil, err
	}
	// The items left: those without a verdict made for the same program.
	have := map[string]string{}
	for _, v := range j.verdicts {
		have[v.ID] = v.Hash
	}
	var left []eval.Item
	for _, it := range items {
		if h, ok := have[it.ID]; !ok || (h != "" && h != it.Hash()) {
			left = append(left, it)
		}
	}
	j.live, j.status, j.err, j.finished, j.started = true, StatusRunning, "", time.Time{}, time.Now()
	j.tally = eval.Tally{}
	for _, v := range j.verdicts {
		j.tally.Add(v, false) // made before: not this run's timings
	}
	delete(s.ended, key(tenant, id))
	s.start(st, j, rec.LeaseUntil, left, &sp.Request)
	return j, nil
}

// start runs items as j, recording each verdict, keeping the lease alive,
// and ending the job in the store; s.mu is held.
func (s *Service) start(st store.Tenant, j *job, leaseUntil time.Time, items []eval.Item, req *Request) {
	ctx, cancel := context.WithCancelCause(s.base)
	j.cancel = func() { cancel(context.Canceled) }
	s.live[key(j.tenant, j.id)] = j
	concurrency := req.Concurrency
	if concurrency <= 0 || concurrency > s.opts.Concurrency {
		concurrency = s.opts.Concurrency
	}
	limits, _ := req.Limits.Limits() // checked when submitted
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel(nil)
		stopRenewing := store.KeepAlive(ctx, store.JobRenewer{Jobs: st}, j.id, s.owner, leaseUntil)
		// Records outlive the job's context: a verdict made as it is
		// cancelled is still kept, and the job's end is still written.
		rctx := context.WithoutCancel(ctx)
		err := eval.Run(ctx, s.opts.Runtime, eval.Feed(items...), eval.Options{Concurrency: concurrency, Limits: limits.WithDefaults(s.opts.Limits)},
			func(v eval.Verdict) error {
				data, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if _, err := st.AddVerdicts(rctx, j.id, s.owner, data); err != nil {
					if errors.Is(err, store.ErrNotOwner) {
						return errLost
					}
					return fmt.Errorf("record a verdict: %w", err)
				}
				j.add(v)
				return nil
			})
		stopRenewing()
		j.end(rctx, st, s.owner, err, context.Cause(ctx))
	}()
}

// prune removes the tenant's oldest jobs that are not running beyond
// Keep - 1 (a new one is coming); s.mu is held.
func (s *Service) prune(ctx context.Context, st store.Tenant) error {
	recs, err := st.ListJobs(ctx)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	var idle []*store.Job
	for _, r := range recs {
		if r.Shown() != StatusRunning {
			idle = append(idle, r)
		}
	}
	sort.Slice(idle, func(a, b int) bool { return idle[a].CreatedAt.Before(idle[b].CreatedAt) })
	for len(idle) > s.opts.Keep-1 {
		k := key(st.Name(), idle[0].ID)
		if err := st.DeleteJob(ctx, idle[0].ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("jobs: forget an old job: %w", err)
		}
		delete(s.live, k)
		delete(s.ended, k)
		idle = idle[1:]
	}
	return nil
}

// get returns tenant's job by id: the one this service runs or ran, else
// the store's; store.ErrNotFound for none (or another tenant's).
func (s *Service) get(ctx context.Context, tenant, id string) (*job, error) {
	k := key(tenant, id)
	s.mu.Lock()
	j := s.live[k]
	if j == nil {
		j = s.ended[k]
	}
	s.mu.Unlock()
	if j != nil {
		return j, nil
	}
	st, err := s.tenantStore(tenant)
	if err != nil {
		return nil, err
	}
	rec, err := st.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.loaded(ctx, st, rec)
}

// loaded reads rec's job back, keeping it once it has ended for good.
func (s *Service) loaded(ctx context.Context, st store.Tenant, rec *store.Job) (*job, error) {
	j, err := load(ctx, st, rec)
	if err != nil {
		return nil, err
	}
	if j.status.Final() {
		s.mu.Lock()
		s.ended[key(st.Name(), rec.ID)] = j
		s.mu.Unlock()
	}
	return j, nil
}

// list returns tenant's jobs, newest first.
func (s *Service) list(ctx context.Context, tenant string) ([]*job, error) {
	st, err := s.tenantStore(tenant)
	if err != nil {
		return nil, err
	}
	recs, err := st.ListJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	var out []*job
	for _, rec := range recs {
		k := key(tenant, rec.ID)
		s.mu.Lock()
		j := s.live[k]
		if j == nil {
			j = s.ended[k]
		}
		s.mu.Unlock()
		if j == nil {
			// Listed without what was submitted: read the whole record.
			full, err := st.GetJob(ctx, rec.ID)
			if errors.Is(err, store.ErrNotFound) {
				continue // gone since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("jobs: %w", err)
			}
			if j, err = s.loaded(ctx, st, full); err != nil {
				return nil, err
			}
		}
		out = append(out, j)
	}
	return out, nil
}

// load reads a job back from its record and verdicts: a snapshot.
func load(ctx context.Context, st store.Tenant, rec *store.Job) (*job, error) {
	var sp spec
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return nil, fmt.Errorf("jobs: job %s: read what was submitted: %w", rec.ID, err)
	}
	raw, err := st.JobVerdicts(ctx, rec.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	j := &job{id: rec.ID, tenant: rec.Tenant, created: rec.CreatedAt, total: rec.Total, skipped: sp.Skipped, ks: sp.Request.K,
		status: rec.Shown(), err: rec.Error, started: rec.CreatedAt, finished: rec.FinishedAt, changed: make(chan struct{})}
	if j.status == StatusInterrupted {
		j.err = interruptedNote
	}
	for i, data := range raw {
		var v eval.Verdict
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("jobs: job %s: verdict %d: %w", rec.ID, i+1, err)
		}
		j.verdicts = append(j.verdicts, v)
		j.tally.Add(v, true)
	}
	return j, nil
}

// interruptedNote is the error of an interrupted job.
const interruptedNote = "the server running the job stopped before it ended: POST /v1/jobs/{id}/resume runs the items left"

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

// end records how the job ended: err is eval.Run's, cause its context's.
// Stopped by a shutdown, or taken over by another server, the job is left
// interrupted (released; resumable); otherwise its final status is
// written.
func (j *job) end(ctx context.Context, st store.Tenant, owner store.Owner, err, cause error) {
	status, msg := StatusSucceeded, ""
	switch {
	case err == nil:
	case errors.Is(err, errLost):
		status, msg = StatusInterrupted, err.Error()
	case errors.Is(cause, errClosed):
		status, msg = StatusInterrupted, interruptedNote
	case errors.Is(err, context.Canceled):
		status = StatusCancelled
	default:
		status, msg = StatusFailed, err.Error()
	}
	var rerr error
	switch status {
	case StatusInterrupted:
		if !errors.Is(err, errLost) {
			rerr = st.ReleaseJob(ctx, j.id, owner)
		}
	default:
		rerr = st.EndJob(ctx, j.id, owner, status, msg)
	}
	if rerr != nil && !errors.Is(rerr, store.ErrNotOwner) {
		// The store could not take the end: the record stays running
		// under a lease nobody renews, so it shows as interrupted.
		status, msg = StatusInterrupted, fmt.Sprintf("%s (the end of the job could not be recorded: %v)", interruptedNote, rerr)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.finished = time.Now()
	j.status, j.err = status, msg
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
	// Error says why a failed job failed (or why an interrupted one
	// stopped).
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
	switch {
	case !j.finished.IsZero():
		end = j.finished
	case j.status == StatusInterrupted:
		// As far as it got: its last verdict.
		end = j.started
		if n := len(j.verdicts); n > 0 && j.verdicts[n-1].Finished.After(end) {
			end = j.verdicts[n-1].Finished
		}
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
		Total: j.total, Done: j.tally.Done(), Passed: j.tally.Passed(), Skipped: skipped, Summary: sum}
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

// cancelInterrupted ends an interrupted job as cancelled, its verdicts
// kept.
func (s *Service) cancelInterrupted(ctx context.Context, j *job) error {
	st, err := s.tenantStore(j.tenant)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := st.ClaimJob(ctx, j.id, s.owner); err != nil {
		if errors.Is(err, store.ErrNotOwner) || errors.Is(err, store.ErrEnded) {
			return fmt.Errorf("%w: %v", errConflict, err)
		}
		return err
	}
	if err := st.EndJob(ctx, j.id, s.owner, StatusCancelled, ""); err != nil {
		return err
	}
	k := key(j.tenant, j.id)
	delete(s.live, k)
	delete(s.ended, k)
	return nil
}

// newID is a new job id: 64 random bits, not to be guessed.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}
