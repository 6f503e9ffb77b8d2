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

// verdict is a verdict as a server would write one.
func verdict(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":"item-%d","status":"passed"}`, n))
}

// testJobs: a job is created running under its owner's lease, takes
// verdicts in order (a second handle, another process, sees them),
// ends with a final status, and is listed newest first; a stranger can
// neither add to it nor end it, and nothing is recorded into an ended job.
func testJobs(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	owner, stranger := store.NewOwner(), store.NewOwner()
	spec := json.RawMessage(`{"problems":"{\"id\":\"x\"}","k":[1]}`)
	j, err := a.CreateJob(ctx, store.NewJob{Owner: owner, Total: 3, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID == "" || j.Tenant != "acme" || j.Status != store.JobRunning || j.Shown() != store.JobRunning || j.Total != 3 ||
		j.Verdicts != 0 || j.Owner != owner || j.CreatedAt.IsZero() || !j.FinishedAt.IsZero() {
		t.Fatalf("new job: %+v", j)
	}
	var gotSpec, wantSpec any
	json.Unmarshal(j.Spec, &gotSpec)
	json.Unmarshal(spec, &wantSpec)
	if fmt.Sprint(gotSpec) != fmt.Sprint(wantSpec) {
		t.Errorf("spec: %s, want %s", j.Spec, spec)
	}
	if _, err := a.CreateJob(ctx, store.NewJob{Total: 1}); err == nil {
		t.Error("a job without an owner was created")
	}
	if n, err := a.AddVerdicts(ctx, j.ID, owner, verdict(1)); err != nil || n != 1 {
		t.Fatalf("add verdict 1: %d %v", n, err)
	}
	if n, err := a.AddVerdicts(ctx, j.ID, owner, verdict(2), verdict(3)); err != nil || n != 3 {
		t.Fatalf("add verdicts 2, 3: %d %v", n, err)
	}
	if _, err := b.AddVerdicts(ctx, j.ID, stranger, verdict(9)); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("a stranger added a verdict: %v", err)
	}
	if err := b.EndJob(ctx, j.ID, stranger, store.JobSucceeded, ""); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("a stranger ended the job: %v", err)
	}
	if _, err := b.AddVerdicts(ctx, j.ID, owner, json.RawMessage(`{not json`)); err == nil {
		t.Error("a verdict that is not JSON was added")
	}
	all, err := b.JobVerdicts(ctx, j.ID, 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("verdicts: %s %v", all, err)
	}
	for i, v := range all {
		var got struct{ ID string }
		json.Unmarshal(v, &got)
		if got.ID != fmt.Sprintf("item-%d", i+1) {
			t.Errorf("verdict %d: %s", i+1, v)
		}
	}
	if rest, err := b.JobVerdicts(ctx, j.ID, 2); err != nil || len(rest) != 1 {
		t.Errorf("verdicts after 2: %s %v", rest, err)
	}
	if rest, err := b.JobVerdicts(ctx, j.ID, 3); err != nil || rest == nil || len(rest) != 0 {
		t.Errorf("verdicts after 3: %v %v (want an empty list)", rest, err)
	}
	if err := b.DeleteJob(ctx, j.ID); err == nil {
		t.Error("a running job was deleted")
	}
	if err := a.EndJob(ctx, j.ID, owner, store.JobRunning, ""); err == nil {
		t.Error("a job was ended as running")
	}
	if err := a.EndJob(ctx, j.ID, owner, store.JobFailed, "the runtime broke"); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobFailed || got.Shown() != store.JobFailed || got.Error != "the runtime broke" || got.Verdicts != 3 ||
		got.FinishedAt.IsZero() || got.Owner != "" {
		t.Errorf("ended job: %+v", got)
	}
	if _, err := a.AddVerdicts(ctx, j.ID, owner, verdict(4)); !errors.Is(err, store.ErrEnded) {
		t.Errorf("a verdict was added to an ended job: %v", err)
	}
	if _, err := b.ClaimJob(ctx, j.ID, stranger); !errors.Is(err, store.ErrEnded) {
		t.Errorf("an ended job was claimed: %v", err)
	}
	// Listed newest first.
	time.Sleep(2 * time.Millisecond)
	k, err := a.CreateJob(ctx, store.NewJob{Owner: owner, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.ListJobs(ctx)
	if err != nil || len(list) != 2 || list[0].ID != k.ID || list[1].ID != j.ID {
		t.Fatalf("jobs: %+v %v", list, err)
	}
	if list[1].Spec != nil || list[1].Verdicts != 3 || list[1].Status != store.JobFailed {
		t.Errorf("a job as listed (counts, no spec): %+v", list[1])
	}
	if err := b.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetJob(ctx, j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a deleted job: %v", err)
	}
	if _, err := b.JobVerdicts(ctx, j.ID, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a deleted job's verdicts: %v", err)
	}
}

// testJobLeases: a job whose owner released it, or stopped renewing it,
// shows as interrupted with its verdicts kept, and can be claimed by
// another owner, which fences the old one off; renewals keep it its
// owner's.
func testJobLeases(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	owner, next := store.NewOwner(), store.NewOwner()
	j, err := a.CreateJob(ctx, store.NewJob{Owner: owner, Total: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(j.LeaseUntil); d <= 0 || d > lease+time.Second {
		t.Fatalf("lease of a new job: %s", d)
	}
	if _, err := a.AddVerdicts(ctx, j.ID, owner, verdict(1)); err != nil {
		t.Fatal(err)
	}
	// Released (a server shutting down): interrupted at once, claimable.
	if err := a.ReleaseJob(ctx, j.ID, owner); err != nil {
		t.Fatal(err)
	}
	got, _ := b.GetJob(ctx, j.ID)
	if got.Status != store.JobRunning || got.Shown() != store.JobInterrupted || got.Verdicts != 1 {
		t.Fatalf("released job: %+v shown %s", got, got.Shown())
	}
	if _, err := a.AddVerdicts(ctx, j.ID, owner, verdict(2)); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("the owner that released the job added to it: %v", err)
	}
	c, err := b.ClaimJob(ctx, j.ID, next)
	if err != nil {
		t.Fatal(err)
	}
	if c.Owner != next || c.Shown() != store.JobRunning || c.Verdicts != 1 {
		t.Errorf("claimed job: %+v", c)
	}
	if _, err := a.ClaimJob(ctx, j.ID, owner); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("claimed while another's lease runs: %v", err)
	}
	// Renewals keep it next's across several lease durations.
	for range 3 {
		time.Sleep(lease / 2)
		if _, err := b.RenewJob(ctx, j.ID, next); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ClaimJob(ctx, j.ID, owner); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("claimed while the lease is renewed: %v", err)
		}
	}
	if _, err := a.RenewJob(ctx, j.ID, owner); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("a stranger renewed: %v", err)
	}
	// next stops renewing (it died): interrupted once the lease expires.
	got, _ = a.GetJob(ctx, j.ID)
	time.Sleep(time.Until(got.LeaseUntil) + 10*time.Millisecond)
	got, _ = a.GetJob(ctx, j.ID)
	if got.Shown() != store.JobInterrupted {
		t.Errorf("shown %s after the lease expired", got.Shown())
	}
	if _, err := a.ClaimJob(ctx, j.ID, owner); err != nil {
		t.Fatalf("claim after the lease expired: %v", err)
	}
	if _, err := b.AddVerdicts(ctx, j.ID, next, verdict(2)); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("the fenced-off owner added a verdict: %v", err)
	}
	if n, err := a.AddVerdicts(ctx, j.ID, owner, verdict(2)); err != nil || n != 2 {
		t.Errorf("the new owner's verdict: %d %v", n, err)
	}
}

// testConcurrentJobWriters: verdicts added at once by several goroutines
// of the owner, through two handles, all land, numbered without gaps.
func testConcurrentJobWriters(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := tenant(t, open(t), "acme"), tenant(t, open(t), "acme")
	owner := store.NewOwner()
	j, err := a.CreateJob(ctx, store.NewJob{Owner: owner, Total: 40})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		h := a
		if i%2 == 1 {
			h = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.AddVerdicts(ctx, j.ID, owner, verdict(i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := a.JobVerdicts(ctx, j.ID, 0)
	if err != nil || len(all) != 40 {
		t.Fatalf("%d verdicts, %v", len(all), err)
	}
	seen := map[string]bool{}
	for _, v := range all {
		seen[string(v)] = true
	}
	if len(seen) != 40 {
		t.Errorf("%d distinct verdicts of 40", len(seen))
	}
	if got, _ := b.GetJob(ctx, j.ID); got.Verdicts != 40 {
		t.Errorf("the job counts %d verdicts", got.Verdicts)
	}
}

// testJobIsolation: another tenant's job cannot be read, listed, claimed,
// added to, ended, released or deleted.
func testJobIsolation(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	acme, other := tenant(t, s, "acme"), tenant(t, s, "other")
	owner := store.NewOwner()
	j, err := acme.CreateJob(ctx, store.NewJob{Owner: owner, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acme.AddVerdicts(ctx, j.ID, owner, verdict(1)); err != nil {
		t.Fatal(err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of another tenant's job: %v, want not found", what, err)
		}
	}
	_, err = other.GetJob(ctx, j.ID)
	notFound("get", err)
	_, err = other.JobVerdicts(ctx, j.ID, 0)
	notFound("verdicts", err)
	_, err = other.ClaimJob(ctx, j.ID, store.NewOwner())
	notFound("claim", err)
	_, err = other.AddVerdicts(ctx, j.ID, owner, verdict(2))
	notFound("add verdicts (with the owner's token)", err)
	_, err = other.RenewJob(ctx, j.ID, owner)
	notFound("renew", err)
	notFound("end", other.EndJob(ctx, j.ID, owner, store.JobSucceeded, ""))
	notFound("release", other.ReleaseJob(ctx, j.ID, owner))
	notFound("delete", other.DeleteJob(ctx, j.ID))
	if list, err := other.ListJobs(ctx); err != nil || len(list) != 0 {
		t.Errorf("other lists %d jobs, %v", len(list), err)
	}
	if got, err := acme.GetJob(ctx, j.ID); err != nil || got.Verdicts != 1 || got.Shown() != store.JobRunning {
		t.Errorf("acme's job after the attempts: %+v %v", got, err)
	}
}
