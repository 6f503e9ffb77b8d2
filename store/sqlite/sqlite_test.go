package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
	"github.com/coderun/coderun/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		leaseHelper()
		return
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, lease time.Duration) storetest.Opener {
		dir := t.TempDir()
		return func(t *testing.T) store.Store {
			db, err := sqlite.Open(context.Background(), dir, sqlite.Options{Lease: lease})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
	})
}

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CODERUN_DATA_DIR": "/d", "XDG_DATA_HOME": "/x", "HOME": "/h"}, "/d"},
		{map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/coderun"},
		{map[string]string{"HOME": "/h"}, "/h/.local/share/coderun"},
	} {
		got, err := sqlite.DefaultDir(func(k string) string { return c.env[k] })
		if err != nil || got != c.want {
			t.Errorf("%v: %q %v, want %q", c.env, got, err, c.want)
		}
	}
	if _, err := sqlite.DefaultDir(func(string) string { return "" }); err == nil {
		t.Error("no error without any directory")
	}
}

// A database made by schema version 1 (testdata/v1.sql) opens, its records
// in the default tenant, and keeps working.
func TestMigrateFromV1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	fixture, err := os.ReadFile("testdata/v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(fixture)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err := sqlite.OpenFile(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tn, _ := db.Tenant(store.DefaultTenant)
	runs, err := tn.ListRuns(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != "feedfacecafe" || runs[2].ID != "a1b2c3d4e5f6" {
		t.Fatalf("runs: %+v", runs)
	}
	done, err := tn.GetRun(ctx, "a1b2")
	if err != nil {
		t.Fatal(err)
	}
	if done.Tenant != store.DefaultTenant || done.Status != store.StatusSucceeded || done.Answer != "The mean is 2." ||
		done.Scorecard.InputTokens != 150 || len(done.Inputs) != 1 || done.Steps != 3 || !done.FinishedAt.Equal(time.Date(2025, 11, 1, 10, 0, 5, 0, time.UTC)) {
		t.Errorf("finished run: %+v", done)
	}
	steps, _ := tn.Steps(ctx, done.ID)
	files, _ := tn.Files(ctx, done.ID, "")
	if len(steps) != 3 || steps[1].Kind != "execution" || !strings.Contains(string(steps[1].Data), `2.0\n`) ||
		len(files) != 2 || string(files[0].Content) != "x\n1\n2\n" || files[1].Step != 2 {
		t.Errorf("steps %+v files %+v", steps, files)
	}
	items, _ := tn.Reviews(ctx, "", true)
	if len(items) != 2 || items[0].ID != 7 || items[0].Note != "fine" || items[1].ID != 8 || items[1].Status != store.ReviewOpen {
		t.Errorf("review items: %+v", items)
	}
	// The run whose old owner is gone holds no lease: interrupted, claimable.
	orphan, _ := tn.GetRun(ctx, "0badc0ffee00")
	if orphan.Shown() != store.StatusInterrupted {
		t.Errorf("orphan shown %s", orphan.Shown())
	}
	me := store.NewOwner()
	if _, err := tn.Claim(ctx, orphan.ID, me); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Record(ctx, orphan.ID, me, store.Update{Steps: []store.Step{{Kind: "resume", Summary: "resumed"}}}); err != nil {
		t.Fatal(err)
	}
	if s, _ := tn.Steps(ctx, orphan.ID); len(s) != 2 || s[1].Seq != 2 {
		t.Errorf("orphan's steps: %+v", s)
	}
	// The paused run keeps its pending code; new review items number on.
	paused, _ := tn.GetRun(ctx, "feedfacecafe")
	if paused.Shown() != store.StatusAwaitingApproval || !strings.Contains(string(paused.Pending), `"code":"import subprocess"`) {
		t.Errorf("paused run: %+v", paused)
	}
	if _, err := tn.Claim(ctx, paused.ID, me); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Record(ctx, paused.ID, me, store.Update{Review: &store.NewReview{Kind: store.ReviewFailure, Reason: "x"}}); err != nil {
		t.Fatal(err)
	}
	if items, _ := tn.Reviews(ctx, paused.ID, true); len(items) != 2 || items[1].ID <= 8 {
		t.Errorf("new item: %+v", items)
	}
	// Other tenants see none of it; a new run lands beside the old ones.
	acme, _ := db.Tenant("acme")
	if list, _ := acme.ListRuns(ctx, store.Filter{}); len(list) != 0 {
		t.Errorf("acme sees %d runs", len(list))
	}
	if _, err := tn.CreateRun(ctx, store.NewRun{Task: "new", Owner: me}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Opening again migrates nothing.
	db2, err := sqlite.OpenFile(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	tn2, _ := db2.Tenant(store.DefaultTenant)
	if list, _ := tn2.ListRuns(ctx, store.Filter{}); len(list) != 4 {
		t.Errorf("after reopening: %d runs", len(list))
	}
}

// A database of version 2 (runs, before jobs) keeps its runs and gains
// the job tables.
func TestMigrateFromV2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db, err := sqlite.OpenFile(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := db.Tenant("acme")
	r, err := tn.CreateRun(ctx, store.NewRun{Task: "t", Owner: store.NewOwner()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, _ := sql.Open("sqlite", "file:"+path)
	if _, err := raw.Exec("DROP TABLE job_verdicts; DROP TABLE jobs; PRAGMA user_version = 2"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err = sqlite.OpenFile(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tn, _ = db.Tenant("acme")
	if got, err := tn.GetRun(ctx, r.ID); err != nil || got.Task != "t" {
		t.Fatalf("the run after the migration: %+v %v", got, err)
	}
	j, err := tn.CreateJob(ctx, store.NewJob{Owner: store.NewOwner(), Total: 1})
	if err != nil {
		t.Fatalf("a job after the migration: %v", err)
	}
	if list, err := tn.ListJobs(ctx); err != nil || len(list) != 1 || list[0].ID != j.ID {
		t.Errorf("jobs: %+v %v", list, err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	raw, _ := sql.Open("sqlite", "file:"+path)
	if _, err := raw.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if db, err := sqlite.OpenFile(context.Background(), path, sqlite.Options{}); err == nil {
		db.Close()
		t.Fatal("opened a database of a newer schema")
	}
}

const helperEnv = "CODERUN_STORE_LEASE_HELPER"

// leaseHelper is the test binary re-executed as a process that owns a
// run: it claims the run named in its environment, keeps the lease alive,
// says so on stdout, and waits to be killed.
func leaseHelper() {
	ctx := context.Background()
	lease, _ := time.ParseDuration(os.Getenv("LEASE"))
	db, err := sqlite.Open(ctx, os.Getenv("DIR"), sqlite.Options{Lease: lease})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	tn, _ := db.Tenant("acme")
	me := store.NewOwner()
	r, err := tn.Claim(ctx, os.Getenv("RUN"), me)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	store.KeepAlive(ctx, tn, r.ID, me, r.LeaseUntil)
	fmt.Println("owner", me)
	select {}
}

// A process that owns a run and is killed with SIGKILL keeps its run while
// it lives (it renews its lease) and loses it to another process once the
// lease expires — never before.
func TestKilledOwnerLosesRunWhenLeaseExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for leases")
	}
	ctx := context.Background()
	const lease = 2 * time.Second
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tn, _ := db.Tenant("acme")
	first := store.NewOwner()
	r, err := tn.CreateRun(ctx, store.NewRun{Task: "t", Owner: first})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Record(ctx, r.ID, first, store.Update{Release: true}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "DIR="+dir, "RUN="+r.ID, "LEASE="+lease.String())
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "owner ") {
		t.Fatalf("helper: %q %v", line, err)
	}
	helper := store.Owner(strings.TrimSpace(strings.TrimPrefix(line, "owner ")))

	// While the helper lives, its lease is renewed: no claim succeeds for
	// twice the lease.
	me := store.NewOwner()
	for end := time.Now().Add(2 * lease); time.Now().Before(end); time.Sleep(lease / 8) {
		if _, err := tn.Claim(ctx, r.ID, me); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("claimed from a live owner: %v", err)
		}
	}
	got, _ := tn.GetRun(ctx, r.ID)
	if got.Owner != helper || got.Shown() != store.StatusRunning {
		t.Fatalf("run of the live helper: %+v", got)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	got, _ = tn.GetRun(ctx, r.ID)
	until := got.LeaseUntil // the helper's last renewal
	if got.Owner != helper || until.Before(killed.Add(-lease)) {
		t.Fatalf("after the kill: %+v", got)
	}
	attempts := 0
	for {
		before := time.Now()
		_, err := tn.Claim(ctx, r.ID, me)
		after := time.Now()
		attempts++
		if err == nil {
			if after.Before(until) {
				t.Fatalf("claimed at %s, before the dead owner's lease ran out at %s", after.Format(time.StampMilli), until.Format(time.StampMilli))
			}
			break
		}
		if !errors.Is(err, store.ErrNotOwner) {
			t.Fatal(err)
		}
		if before.After(until.Add(lease / 2)) {
			t.Fatalf("still refused at %s, the lease ran out at %s: %v", before.Format(time.StampMilli), until.Format(time.StampMilli), err)
		}
		if got, _ := tn.GetRun(ctx, r.ID); got.Shown() != store.StatusRunning && time.Now().Before(until) {
			t.Fatalf("shown %s before the lease ran out", got.Shown())
		}
		time.Sleep(lease / 20)
	}
	if attempts < 2 {
		t.Errorf("claimed at the first attempt, %s after the kill: the lease did not hold", time.Since(killed))
	}
	got, _ = tn.GetRun(ctx, r.ID)
	if got.Owner != me {
		t.Errorf("owner %q", got.Owner)
	}
}
