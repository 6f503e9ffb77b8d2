// Package storetest is the shared suite every store of agent runs
// (store.Store) must pass: create, claim, record and finish; leases that
// expire and renew; concurrent claimers and writers; crash consistency (a
// failed record changes nothing); the review queue; files; statistics; and
// the isolation of tenants (no record of one tenant can be listed, read,
// claimed, changed or closed through another's handle); and the records of
// batch-eval jobs (jobs.go): verdicts in order, leases, isolation.
//
// A backend's test calls [Run] with a function that makes a new, empty
// store and returns an [Opener] of handles on it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, lease time.Duration) storetest.Opener {
//			path := filepath.Join(t.TempDir(), "runs.db")
//			return func(t *testing.T) store.Store { ... open path with lease ... }
//		})
//	}
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/store"
)

// Opener opens a new handle on one store, as another client (another
// process) would; the handle is closed when the test ends.
type Opener func(t *testing.T) store.Store

// NewStore makes a new empty store whose leases last lease.
type NewStore func(t *testing.T, lease time.Duration) Opener

// lease is the suite's lease: long enough for a loaded machine's
// transactions, short enough to wait for.
const lease = 1500 * time.Millisecond

// Run runs the whole suite against the stores newStore makes.
func Run(t *testing.T, newStore NewStore) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, Opener)
	}{
		{"TenantNames", testTenantNames},
		{"CreateClaimRecordFinish", testLifecycle},
		{"CrashConsistency", testCrashConsistency},
		{"LeaseExpiresAndRenews", testLeases},
		{"ConcurrentClaimers", testConcurrentClaimers},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ReviewQueue", testReviewQueue},
		{"Files", testFiles},
		{"Stats", testStats},
		{"TenantIsolation", testTenantIsolation},
		{"Jobs", testJobs},
		{"JobLeases", testJobLeases},
		{"ConcurrentJobWriters", testConcurrentJobWriters},
		{"JobIsolation", testJobIsolation},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, newStore(t, lease))
		})
	}
}

func tenant(t *testing.T, s store.Store, name string) store.Tenant {
	t.Helper()
	tn, err := s.Tenant(name)
	if err != nil {
		t.Fatal(err)
	}
	if tn.Name() != name {
		t.Fatalf("tenant %q is named %q", name, tn.Name())
	}
	return tn
}

func newRun(t *testing.T, tn store.Tenant, owner store.Owner) *store.Run {
	t.Helper()
	r, err := tn.CreateRun(context.Background(), store.NewRun{Task: "mean of 1, 2, 3", Model: "openai:m", Mode: "single",
		Inputs:     []store.InputFile{{Path: "data.csv", Size: 6, Summary: "CSV"}},
		InputFiles: []store.File{{Path: "data.csv", Kind: "file", Size: 6, Mode: 0o644, Content: []byte("x\n1\n2\n")}},
		Config:     json.RawMessage(`{"mode":"single"}`),
		State:      json.RawMessage(`{"phase":"generate"}`), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// note is a step with an opaque payload: the store never looks inside.
func note(kind string, n int) store.Step {
	return store.Step{Kind: store.StepKind(kind), Attempt: 1, Summary: fmt.Sprintf("%s %d", kind, n),
		Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"x"}`, n))}
}

func testTenantNames(t *testing.T, open Opener) {
	s := open(t)
	for _, bad := range []string{"", "-x", "a b", "a/b", "ü", string(make([]byte, 65))} {
		if _, err := s.Tenant(bad); err == nil {
			t.Errorf("tenant %q accepted", bad)
		}
	}
	for _, good := range []string{store.DefaultTenant, "acme", "Acme-2.prod_x"} {
		tenant(t, s, good)
	}
}

func testLifecycle(t *testing.T, open Opener) {
	ctx := context.Background()
	tn := tenant(t, open(t), "acme")
	me := store.NewOwner()
	r := newRun(t, tn, me)
	if r.Tenant != "acme" || r.Status != store.StatusRunning || r.Shown() != store.StatusRunning || r.Steps != 0 ||
		r.Owner != me || !r.LeaseUntil.After(time.Now()) || string(r.Config) != `{"mode":"single"}` || len(r.Inputs) != 1 {
		t.Fatalf("new run: %+v", r)
	}
	sc := store.Scorecard{Attempts: 1}
	sc.AddError("retryable", "NameError")
	steps, err := tn.Record(ctx, r.ID, me, store.Update{
		Steps:     []store.Step{note("start", 1), note("execution", 2)},
		State:     json.RawMessage(`{"phase":"interpret"}`),
		Scorecard: &sc,
		Files:     []store.File{{Path: "plot.png", Kind: "file", Size: 3, Content: []byte("png")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Seq != 1 || steps[1].Seq != 2 || steps[0].At.IsZero() {
		t.Fatalf("steps: %+v", steps)
	}
	got, err := tn.GetRun(ctx, r.ID[:5])
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Steps != 2 || string(got.State) != `{"phase":"interpret"}` || got.Scorecard.ErrorKinds["NameError"] != 1 {
		t.Errorf("run after record: %+v", got)
	}
	all, err := tn.Steps(ctx, r.ID)
	if err != nil || len(all) != 2 || all[1].Kind != "execution" || string(all[1].Data) != `{"n":2,"text":"x"}` {
		t.Fatalf("steps: %+v %v", all, err)
	}
	if only, _ := tn.Steps(ctx, r.ID, "start"); len(only) != 1 || only[0].Seq != 1 {
		t.Errorf("steps of a kind: %+v", only)
	}

	// Pausing: pending code, review item, released.
	pa := json.RawMessage(`{"code":"import os"}`)
	if _, err := tn.Record(ctx, r.ID, me, store.Update{Status: store.StatusAwaitingApproval, Pending: pa, Release: true,
		Review: &store.NewReview{Kind: store.ReviewApproval, Reason: "asks"}}); err != nil {
		t.Fatal(err)
	}
	got, _ = tn.GetRun(ctx, r.ID)
	if got.Shown() != store.StatusAwaitingApproval || got.Owner != "" || string(got.Pending) != `{"code":"import os"}` {
		t.Fatalf("paused run: %+v", got)
	}
	if _, err := tn.Record(ctx, r.ID, me, store.Update{}); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("record after release: %v", err)
	}
	// Anyone may claim a paused run.
	other := store.NewOwner()
	if _, err := tn.Claim(ctx, r.ID, other); err != nil {
		t.Fatal(err)
	}
	// Ending the run: final fields, owner released, review items, no more records or claims.
	_, err = tn.Record(ctx, r.ID, other, store.Update{
		Steps:  []store.Step{note("failure", 3)},
		Status: store.StatusFailed, Outcome: "stuck", Failure: json.RawMessage(`{"summary":"s"}`),
		ClearPending: true,
		CloseReviews: &store.CloseReviews{Kind: store.ReviewApproval, Resolution: "stuck"},
		Review:       &store.NewReview{Kind: store.ReviewFailure, Reason: "stuck"}, Release: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = tn.GetRun(ctx, r.ID)
	if got.Status != store.StatusFailed || got.Shown() != store.StatusFailed || got.Outcome != "stuck" ||
		string(got.Failure) != `{"summary":"s"}` || got.Owner != "" || got.FinishedAt.IsZero() || got.Pending != nil || got.Steps != 3 {
		t.Errorf("ended run: %+v", got)
	}
	if _, err := tn.Record(ctx, r.ID, other, store.Update{}); !errors.Is(err, store.ErrEnded) {
		t.Errorf("recorded into an ended run: %v", err)
	}
	if _, err := tn.Claim(ctx, r.ID, me); !errors.Is(err, store.ErrEnded) {
		t.Errorf("claimed an ended run: %v", err)
	}
	items, _ := tn.Reviews(ctx, r.ID, true)
	if len(items) != 2 || items[0].Kind != store.ReviewApproval || items[0].Status != store.ReviewClosed || items[0].Resolution != "stuck" ||
		items[1].Kind != store.ReviewFailure || items[1].Status != store.ReviewOpen || items[1].Tenant != "acme" {
		t.Errorf("review items: %+v", items)
	}
	if _, err := tn.GetRun(ctx, "zz"+r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
	if err := tn.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.GetRun(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted run: %v", err)
	}
	if items, _ := tn.Reviews(ctx, "", true); len(items) != 0 {
		t.Errorf("a deleted run's review items: %+v", items)
	}
}

// A record is all or nothing, and what one handle committed another sees
// whole.
func testCrashConsistency(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	me := store.NewOwner()
	r := newRun(t, a, me)
	if _, err := a.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("start", 1)}, State: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	// A record that fails half-way (its review item is invalid, after its
	// steps, state, scorecard and files) leaves no trace.
	sc := store.Scorecard{Attempts: 9}
	_, err := a.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("x", 2), note("y", 3)}, State: json.RawMessage(`{"n":2}`),
		Scorecard: &sc, Status: store.StatusFailed, Outcome: "x", Files: []store.File{{Path: "out.txt", Content: []byte("x")}},
		Review: &store.NewReview{}})
	if err == nil {
		t.Fatal("a review item without a kind was accepted")
	}
	// So does a stranger's record.
	if _, err := a.Record(ctx, r.ID, store.NewOwner(), store.Update{Steps: []store.Step{note("z", 2)}}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("stranger recorded: %v", err)
	}
	got, err := b.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := b.Steps(ctx, r.ID)
	files, _ := b.Files(ctx, r.ID, store.RoleOutput)
	if got.Steps != 1 || len(steps) != 1 || string(got.State) != `{"n":1}` || got.Scorecard.Attempts != 0 ||
		got.Status != store.StatusRunning || len(files) != 0 {
		t.Fatalf("after failed records: run %+v steps %d files %d", got, len(steps), len(files))
	}
	if items, _ := b.Reviews(ctx, "", true); len(items) != 0 {
		t.Errorf("review items: %+v", items)
	}
	// The owner goes on where it was.
	st, err := a.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("z", 2)}, State: json.RawMessage(`{"n":2}`)})
	if err != nil || st[0].Seq != 2 {
		t.Fatalf("record after failures: %+v %v", st, err)
	}
	if got, _ := b.GetRun(ctx, r.ID); got.Steps != 2 || string(got.State) != `{"n":2}` {
		t.Errorf("other handle: %+v", got)
	}
}

// claim tries to claim a run whose lease runs until until, and checks the
// rule: refused while the lease runs, granted once it has expired. It
// reports whether the claim was granted.
func claim(t *testing.T, tn store.Tenant, id string, owner store.Owner, until time.Time) bool {
	t.Helper()
	before := time.Now()
	r, err := tn.Claim(context.Background(), id, owner)
	after := time.Now()
	switch {
	case err == nil:
		if after.Before(until) {
			t.Fatalf("claimed at %s, before the lease ran out at %s", after.Format(time.StampMilli), until.Format(time.StampMilli))
		}
		if r.Owner != owner || !r.LeaseUntil.After(before) {
			t.Fatalf("claimed run: owner %q lease %s", r.Owner, r.LeaseUntil)
		}
		return true
	case errors.Is(err, store.ErrNotOwner):
		if before.After(until.Add(lease / 4)) {
			t.Fatalf("claim refused at %s, after the lease ran out at %s: %v", before.Format(time.StampMilli), until.Format(time.StampMilli), err)
		}
		return false
	}
	t.Fatal(err)
	return false
}

func testLeases(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	owner, thief := store.NewOwner(), store.NewOwner()
	r := newRun(t, a, owner)
	if d := time.Until(r.LeaseUntil); d <= 0 || d > lease+time.Second {
		t.Fatalf("lease of a new run: %s", d)
	}
	claim(t, b, r.ID, thief, r.LeaseUntil)
	if list, _ := b.ListRuns(ctx, store.Filter{Status: store.StatusRunning}); len(list) != 1 && time.Now().Before(r.LeaseUntil) {
		t.Errorf("running runs: %d", len(list))
	}
	// Renewal keeps the run its owner's across several lease durations.
	until := r.LeaseUntil
	for i := 0; i < 4; i++ {
		time.Sleep(lease / 2)
		next, err := a.Renew(ctx, r.ID, owner)
		if err != nil {
			t.Fatal(err)
		}
		if !next.After(until) {
			t.Fatalf("renewal did not extend the lease: %s → %s", until, next)
		}
		until = next
		claim(t, b, r.ID, thief, until)
	}
	if _, err := b.Renew(ctx, r.ID, thief); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("a stranger renewed: %v", err)
	}
	// A record renews too.
	time.Sleep(lease / 2)
	if _, err := a.Record(ctx, r.ID, owner, store.Update{Steps: []store.Step{note("n", 1)}}); err != nil {
		t.Fatal(err)
	}
	got, _ := b.GetRun(ctx, r.ID)
	if !got.LeaseUntil.After(until) {
		t.Errorf("record did not renew: %s, was %s", got.LeaseUntil, until)
	}
	until = got.LeaseUntil
	// The owner stops renewing (it died): claimable once the lease expires.
	for !claim(t, b, r.ID, thief, until) {
		time.Sleep(lease / 10)
	}
	got, _ = a.GetRun(ctx, r.ID)
	if got.Owner != thief || got.Shown() != store.StatusRunning {
		t.Errorf("claimed run: %+v", got)
	}
	// The old owner is fenced off.
	if _, err := a.Record(ctx, r.ID, owner, store.Update{Steps: []store.Step{note("late", 2)}}); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("the old owner recorded: %v", err)
	}
	if _, err := a.Renew(ctx, r.ID, owner); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("the old owner renewed: %v", err)
	}
	// An expired lease shows as interrupted.
	time.Sleep(time.Until(got.LeaseUntil) + 10*time.Millisecond)
	got, _ = a.GetRun(ctx, r.ID)
	if got.Shown() != store.StatusInterrupted {
		t.Errorf("shown %s after the lease expired", got.Shown())
	}
	if list, _ := a.ListRuns(ctx, store.Filter{Status: store.StatusInterrupted}); len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("interrupted runs: %+v", list)
	}
	if list, _ := a.ListRuns(ctx, store.Filter{Status: store.StatusRunning}); len(list) != 0 {
		t.Errorf("running runs: %+v", list)
	}

	// KeepAlive renews in the background until stopped.
	r2 := newRun(t, a, owner)
	stop := store.KeepAlive(ctx, a, r2.ID, owner, r2.LeaseUntil)
	deadline := time.Now().Add(3 * lease)
	for time.Now().Before(deadline) {
		time.Sleep(lease / 4)
		if _, err := b.Claim(ctx, r2.ID, thief); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("claim of a kept-alive run: %v", err)
		}
	}
	stop()
	got, _ = a.GetRun(ctx, r2.ID)
	for !claim(t, b, r2.ID, thief, got.LeaseUntil) {
		time.Sleep(lease / 10)
	}
}

// Several clients claim one run at once: exactly one wins.
func testConcurrentClaimers(t *testing.T, open Opener) {
	ctx := context.Background()
	first := tenant(t, open(t), "acme")
	for round := 0; round < 3; round++ {
		r := newRun(t, first, store.NewOwner())
		if _, err := first.Record(ctx, r.ID, r.Owner, store.Update{Release: true}); err != nil {
			t.Fatal(err)
		}
		const n = 6
		var wg sync.WaitGroup
		won := make(chan store.Owner, n)
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			tn := tenant(t, open(t), "acme")
			wg.Add(1)
			go func() {
				defer wg.Done()
				me := store.NewOwner()
				<-start
				_, err := tn.Claim(ctx, r.ID, me)
				switch {
				case err == nil:
					won <- me
				case !errors.Is(err, store.ErrNotOwner):
					errs <- err
				}
			}()
		}
		close(start)
		wg.Wait()
		close(won)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var winners []store.Owner
		for w := range won {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d claimers won", round, len(winners))
		}
		if got, _ := first.GetRun(ctx, r.ID); got.Owner != winners[0] {
			t.Fatalf("owner %q, winner %q", got.Owner, winners[0])
		}
	}
}

func testConcurrentWriters(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	me := store.NewOwner()
	var runs []*store.Run
	for i := 0; i < 4; i++ {
		runs = append(runs, newRun(t, a, me))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i, r := range runs {
		h := a
		if i%2 == 1 {
			h = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := h.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("retry", j)}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range runs {
		steps, _ := a.Steps(ctx, r.ID)
		if len(steps) != 20 || steps[19].Seq != 20 || string(steps[19].Data) != `{"n":19,"text":"x"}` {
			t.Errorf("run %s: %d steps", r.ID, len(steps))
		}
	}
}

func testReviewQueue(t *testing.T, open Opener) {
	ctx := context.Background()
	tn := tenant(t, open(t), "acme")
	me := store.NewOwner()
	r1, r2 := newRun(t, tn, me), newRun(t, tn, me)
	if _, err := tn.Record(ctx, r1.ID, me, store.Update{Review: &store.NewReview{Kind: store.ReviewFailure, Reason: "one"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Record(ctx, r2.ID, me, store.Update{Review: &store.NewReview{Kind: store.ReviewUnverified, Reason: "two"}}); err != nil {
		t.Fatal(err)
	}
	open1, _ := tn.Reviews(ctx, "", false)
	if len(open1) != 2 || open1[0].RunID != r1.ID || open1[0].Reason != "one" || open1[1].RunID != r2.ID || open1[0].CreatedAt.IsZero() {
		t.Fatalf("open items: %+v", open1)
	}
	if only, _ := tn.Reviews(ctx, r2.ID, false); len(only) != 1 || only[0].Kind != store.ReviewUnverified {
		t.Errorf("one run's items: %+v", only)
	}
	if err := tn.CloseReview(ctx, open1[0].ID, "resolved", "fixed the prompt"); err != nil {
		t.Fatal(err)
	}
	if err := tn.CloseReview(ctx, open1[0].ID, "resolved", ""); err == nil {
		t.Error("closed twice")
	}
	if err := tn.CloseReview(ctx, 1<<40, "resolved", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("closed a missing item: %v", err)
	}
	if items, _ := tn.Reviews(ctx, "", false); len(items) != 1 || items[0].RunID != r2.ID {
		t.Errorf("open items: %+v", items)
	}
	all, _ := tn.Reviews(ctx, "", true)
	if len(all) != 2 || all[0].Status != store.ReviewClosed || all[0].Resolution != "resolved" || all[0].Note != "fixed the prompt" || all[0].ClosedAt.IsZero() {
		t.Errorf("all items: %+v", all)
	}
}

func testFiles(t *testing.T, open Opener) {
	ctx := context.Background()
	tn := tenant(t, open(t), "acme")
	me := store.NewOwner()
	r := newRun(t, tn, me)
	if _, err := tn.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("a", 1), note("b", 2)},
		Files: []store.File{{Path: "b.txt", Kind: "file", Size: 1, Mode: 0o600, Content: []byte("1")},
			{Path: "link", Kind: "symlink", LinkTarget: "/etc/passwd"},
			{Path: "big.bin", Kind: "file", Size: 1 << 30, Content: []byte("head"), Truncated: true, Step: 2}}}); err != nil {
		t.Fatal(err)
	}
	// A later version of a path replaces the earlier one.
	if _, err := tn.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("c", 3)},
		Files: []store.File{{Path: "b.txt", Kind: "file", Size: 2, Mode: 0o644, Content: []byte("22")}}}); err != nil {
		t.Fatal(err)
	}
	outs, err := tn.Files(ctx, r.ID, store.RoleOutput)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 3 || outs[0].Path != "b.txt" || string(outs[0].Content) != "22" || outs[0].Step != 3 || outs[0].Mode != 0o644 ||
		outs[1].Path != "big.bin" || !outs[1].Truncated || outs[1].Size != 1<<30 || outs[1].Step != 2 ||
		outs[2].Kind != "symlink" || outs[2].LinkTarget != "/etc/passwd" || outs[2].Content != nil || outs[2].Step != 1 {
		t.Fatalf("outputs: %+v", outs)
	}
	ins, _ := tn.Files(ctx, r.ID, store.RoleInput)
	if len(ins) != 1 || ins[0].Role != store.RoleInput || string(ins[0].Content) != "x\n1\n2\n" || ins[0].Mode != 0o644 {
		t.Errorf("inputs: %+v", ins)
	}
	if both, _ := tn.Files(ctx, r.ID, ""); len(both) != 4 || both[0].Role != store.RoleInput {
		t.Errorf("all files: %+v", both)
	}
	if _, err := tn.Files(ctx, "nosuchrun", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("files of a missing run: %v", err)
	}
	exp, err := store.Gather(ctx, tn, r.ID, false)
	if err != nil || len(exp.Files) != 4 || exp.Files[1].Content != nil || len(exp.Steps) != 3 {
		t.Errorf("gather: %v %+v", err, exp)
	}
}

func testStats(t *testing.T, open Opener) {
	ctx := context.Background()
	tn := tenant(t, open(t), "acme")
	me := store.NewOwner()
	end := func(outcome, answer string, sc store.Scorecard, status store.Status) {
		r := newRun(t, tn, me)
		u := store.Update{Status: status, Outcome: outcome, Answer: answer, Scorecard: &sc, Release: true}
		if answer == "" {
			u.Review = &store.NewReview{Kind: store.ReviewFailure, Reason: outcome}
		}
		if _, err := tn.Record(ctx, r.ID, me, u); err != nil {
			t.Fatal(err)
		}
	}
	a := store.Scorecard{Outcome: "answered", Attempts: 1, ModelCalls: 2, InputTokens: 100, OutputTokens: 10, ModelMS: 1000, ExecMS: 500}
	b := store.Scorecard{Outcome: "answered", Attempts: 2, Retries: 1, ModelCalls: 3, InputTokens: 200, OutputTokens: 20, ModelMS: 2000, ExecMS: 700}
	b.AddError("retryable", "NameError")
	c := store.Scorecard{Outcome: "timeout", Attempts: 1, ModelCalls: 1, InputTokens: 50, ExecMS: 1000}
	c.AddError("fatal", "timeout")
	end("answered", "x", a, store.StatusSucceeded)
	end("answered", "y", b, store.StatusSucceeded)
	end("timeout", "", c, store.StatusFailed)
	newRun(t, tn, me) // still running
	s, err := store.Summarize(ctx, tn, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs != 4 || s.ByStatus[store.StatusRunning] != 1 || s.ByOutcome["answered"] != 2 || s.ByOutcome["timeout"] != 1 ||
		s.Attempts != 4 || s.Retries != 1 || s.InputTokens != 350 || s.Errors["fatal"] != 1 || s.ErrorKinds["NameError"] != 1 ||
		s.ExecTime.Milliseconds() != 2200 || s.FirstTry != 0.5 || s.Answered < 0.66 || s.Answered > 0.67 || s.ReviewsOpen != 1 {
		t.Errorf("stats: %+v", s)
	}
	if s, _ := store.Summarize(ctx, tn, store.Filter{Since: time.Now().Add(time.Hour)}); s.Runs != 0 {
		t.Errorf("stats of the future: %+v", s)
	}
	if list, _ := tn.ListRuns(ctx, store.Filter{Limit: 2}); len(list) != 2 {
		t.Errorf("limit 2: %d runs", len(list))
	}
	if list, _ := tn.ListRuns(ctx, store.Filter{Status: store.StatusSucceeded}); len(list) != 2 {
		t.Errorf("succeeded: %d runs", len(list))
	}
}

// Nothing of one tenant can be listed, read, claimed, changed or closed
// through another tenant's handle, even knowing its ids.
func testTenantIsolation(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	acme, other := tenant(t, s, "acme"), tenant(t, s, "other")
	me := store.NewOwner()
	r := newRun(t, acme, me)
	if _, err := acme.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("a", 1)},
		Files: []store.File{{Path: "out.txt", Content: []byte("secret")}}, Review: &store.NewReview{Kind: store.ReviewFailure, Reason: "r"}}); err != nil {
		t.Fatal(err)
	}
	items, _ := acme.Reviews(ctx, "", false)
	if len(items) != 1 {
		t.Fatalf("acme's items: %+v", items)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of another tenant's run: %v", what, err)
		}
	}
	_, err := other.GetRun(ctx, r.ID)
	notFound("get", err)
	_, err = other.GetRun(ctx, r.ID[:4])
	notFound("get by prefix", err)
	_, err = other.Steps(ctx, r.ID)
	notFound("steps", err)
	_, err = other.Files(ctx, r.ID, "")
	notFound("files", err)
	_, err = other.Claim(ctx, r.ID, store.NewOwner())
	notFound("claim", err)
	_, err = other.Renew(ctx, r.ID, me)
	notFound("renew", err)
	_, err = other.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{note("b", 2)}})
	notFound("record (with the right owner)", err)
	notFound("close review", other.CloseReview(ctx, items[0].ID, "resolved", ""))
	notFound("delete", other.DeleteRun(ctx, r.ID))
	if list, err := other.ListRuns(ctx, store.Filter{}); err != nil || len(list) != 0 {
		t.Errorf("other lists %d runs: %v", len(list), err)
	}
	if list, _ := other.Reviews(ctx, "", true); len(list) != 0 {
		t.Errorf("other lists review items: %+v", list)
	}
	if list, _ := other.Reviews(ctx, r.ID, true); len(list) != 0 {
		t.Errorf("other lists the run's review items: %+v", list)
	}
	if st, _ := store.Summarize(ctx, other, store.Filter{}); st.Runs != 0 || st.ReviewsOpen != 0 {
		t.Errorf("other's stats: %+v", st)
	}
	// The same id in another tenant is another run.
	r2, err := other.CreateRun(ctx, store.NewRun{ID: r.ID, Task: "other task", Owner: me})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Tenant != "other" || r2.Task != "other task" {
		t.Errorf("other's run: %+v", r2)
	}
	if err := other.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	// acme's run is untouched.
	got, err := acme.GetRun(ctx, r.ID)
	if err != nil || got.Steps != 1 || got.Task != r.Task || got.Tenant != "acme" {
		t.Fatalf("acme's run: %+v %v", got, err)
	}
	if files, _ := acme.Files(ctx, r.ID, store.RoleOutput); len(files) != 1 || string(files[0].Content) != "secret" {
		t.Errorf("acme's files: %+v", files)
	}
	if items, _ := acme.Reviews(ctx, "", false); len(items) != 1 {
		t.Errorf("acme's items: %+v", items)
	}
}
