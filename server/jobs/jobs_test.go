package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/eval"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/linux/linuxtest"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/input"
	"github.com/coderun/coderun/server/jobs"
	"github.com/coderun/coderun/server/openapitest"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// The jobs API is tested over HTTP with real sandboxes, mounted on the
// server with its authentication; every answer is held to /openapi.json.

var shared = linuxtest.Shared{Options: linux.Options{}}

// runtime is the linux runtime, shared by the tests (linuxtest.Shared).
func runtime(t *testing.T) sandbox.Runtime {
	t.Helper()
	return shared.Runtime(t)
}

type env struct {
	t    *testing.T
	http *httptest.Server
	doc  *openapitest.Checker
	svc  *jobs.Service
}

// The tenants' keys.
var keys = map[string]string{"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef0"}

// newStore is a store in a fresh data directory, closed when the test ends.
func newStore(t *testing.T, lease time.Duration) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newEnv serves a jobs service over opts (the runtime, and a new store
// unless given) on the server, on loopback.
func newEnv(t *testing.T, opts jobs.Options) *env {
	t.Helper()
	opts.Runtime = runtime(t)
	if opts.Store == nil {
		opts.Store = newStore(t, 0)
	}
	svc, err := jobs.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for tenant, key := range keys {
		entries = append(entries, tenant+":"+key)
	}
	ks, err := server.ParseKeys(entries)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := server.New(server.Options{Keys: ks, Surfaces: []server.Surface{svc.Surface()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hs.Handler())
	doc, err := openapitest.New(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
		srv.Close()
	})
	return &env{t: t, http: srv, doc: doc, svc: svc}
}

func (e *env) do(tenant, method, path string, body any, out any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.http.URL+path, rd)
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+keys[tenant])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := e.doc.Check(method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), b); err != nil {
		e.t.Error(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode, b
}

// events reads a job's stream to its end and returns the event names and
// the last event's job.
func (e *env) events(id string) ([]string, jobs.View) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+"/v1/jobs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+keys["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var names []string
	var last jobs.View
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
			names = append(names, name)
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			schema := "Job"
			if name == "verdict" {
				schema = "Verdict"
			} else if err := json.Unmarshal(data, &last); err != nil {
				e.t.Fatal(err)
			}
			if err := e.doc.Event(schema, data); err != nil {
				e.t.Error(err)
			}
		}
	}
	return names, last
}

const problems = `{"id": "ok", "code": "def f():\n    return 1", "test": "assert f() == 1"}
{"id": "wrong", "code": "def f():\n    return 2", "test": "assert f() == 1"}
not json at all
{"task_id": "HumanEval/0", "prompt": "def add(a, b):\n", "canonical_solution": "    return a + b\n", "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n", "entry_point": "add"}
`

func TestJobRunsAndReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t, jobs.Options{Concurrency: 2})
	var v jobs.View
	if code, body := e.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: problems, K: []int{1}}, &v); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	if v.Total != 3 || len(v.Skipped) != 1 || v.Skipped[0].Line != 3 {
		t.Fatalf("job: %+v", v)
	}
	names, last := e.events(v.ID)
	if strings.Count(strings.Join(names, " "), "verdict") != 3 || names[len(names)-1] != "end" {
		t.Errorf("events: %v", names)
	}
	if last.Status != jobs.StatusSucceeded || last.Done != 3 || last.Passed != 2 || last.Summary.Counts[eval.Failed] != 1 || last.Summary.PassAtK["pass@1"] == 0 {
		t.Fatalf("ended job: %+v", last)
	}
	var vs jobs.Verdicts
	e.do("alice", "GET", "/v1/jobs/"+v.ID+"/verdicts", nil, &vs)
	byID := map[string]eval.Verdict{}
	for _, x := range vs.Verdicts {
		byID[x.ID] = x
	}
	if byID["ok"].Status != eval.Passed || byID["HumanEval/0"].Status != eval.Passed || byID["wrong"].Status != eval.Failed ||
		!strings.Contains(byID["wrong"].Error, "AssertionError") {
		t.Errorf("verdicts: %+v", vs.Verdicts)
	}
	e.do("alice", "GET", "/v1/jobs/"+v.ID+"/verdicts?after=2", nil, &vs)
	if len(vs.Verdicts) != 1 {
		t.Errorf("verdicts after 2: %d", len(vs.Verdicts))
	}
	var sum eval.Summary
	e.do("alice", "GET", "/v1/jobs/"+v.ID+"/summary", nil, &sum)
	if sum.Items != 3 || sum.Passed != 2 {
		t.Errorf("summary: %+v", sum)
	}
	var list jobs.List
	e.do("alice", "GET", "/v1/jobs", nil, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != v.ID {
		t.Errorf("list: %+v", list)
	}
	// Another tenant's job is not found.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/jobs/" + v.ID}, {"GET", "/v1/jobs/" + v.ID + "/events"}, {"GET", "/v1/jobs/" + v.ID + "/verdicts"},
		{"GET", "/v1/jobs/" + v.ID + "/summary"}, {"POST", "/v1/jobs/" + v.ID + "/cancel"},
	} {
		if code, _ := e.do("bob", r.method, r.path, nil, nil); code != http.StatusNotFound {
			t.Errorf("bob %s %s: %d", r.method, r.path, code)
		}
	}
	e.do("bob", "GET", "/v1/jobs", nil, &list)
	if len(list.Jobs) != 0 {
		t.Errorf("bob's jobs: %+v", list)
	}
}

func TestJobCancelAndBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, jobs.Options{Concurrency: 1, MaxRunning: 1})
	slow := `{"id": "slow", "code": "import time\ntime.sleep(60)", "test": ""}` + "\n"
	var v jobs.View
	if code, body := e.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: slow, Limits: input.Limits{WallTime: input.Duration(90 * time.Second), CPUTime: input.Duration(90 * time.Second)}}, &v); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	if code, body := e.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: slow}, nil); code != http.StatusTooManyRequests {
		t.Errorf("a second running job: %d %s", code, body)
	}
	start := time.Now()
	if code, body := e.do("alice", "POST", "/v1/jobs/"+v.ID+"/cancel", nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	_, last := e.events(v.ID)
	if last.Status != jobs.StatusCancelled || time.Since(start) > 20*time.Second {
		t.Errorf("cancelled job: %+v after %s", last, time.Since(start))
	}
	if code, _ := e.do("alice", "POST", "/v1/jobs/"+v.ID+"/cancel", nil, nil); code != http.StatusConflict {
		t.Errorf("cancelling an ended job: %d", code)
	}
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"no problems", map[string]any{"problems": ""}, "no problem"},
		{"strict", map[string]any{"problems": problems, "strict": true}, "line 3"},
		{"bad format", map[string]any{"problems": problems, "format": "apps"}, "format"},
		{"bad k", map[string]any{"problems": problems, "k": []int{0}}, "k: 0"},
		{"unknown field", map[string]any{"problem": problems}, "problem"},
		{"samples of no known task", map[string]any{"problems": problems, "samples": `{"task_id": "nope", "completion": "x"}`}, "nothing to run"},
	} {
		code, body := e.do("alice", "POST", "/v1/jobs", c.body, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
	}
	if code, _ := e.do("", "GET", "/v1/jobs", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("no tenant: %d", code)
	}
}

// TestJobShutdown: a server shutting down stops its running jobs, which
// are left interrupted, saying why, and their event streams end with "end"
// then (they held the shutdown for its whole grace period); no job is
// taken after.
func TestJobShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, jobs.Options{Concurrency: 1})
	slow := `{"id": "slow", "code": "import time\ntime.sleep(60)", "test": ""}` + "\n"
	var v jobs.View
	if code, body := e.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: slow, Limits: input.Limits{WallTime: input.Duration(90 * time.Second), CPUTime: input.Duration(90 * time.Second)}}, &v); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	start := time.Now()
	e.svc.Shutdown()
	names, last := e.events(v.ID)
	if len(names) == 0 || names[len(names)-1] != "end" || last.Status != jobs.StatusInterrupted || !strings.Contains(last.Error, "resume") || time.Since(start) > 20*time.Second {
		t.Errorf("after shutdown: events %v, job %+v after %s", names, last, time.Since(start))
	}
	if code, body := e.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: slow}, nil); code != http.StatusServiceUnavailable {
		t.Errorf("a job after shutdown: %d %s", code, body)
	}
}

// A batch none of whose lines could be read is refused saying why: the
// 400 names the first bad line and its error, as the job would list it
// among its skipped lines, rather than only that there was nothing to run.
func TestJobNothingToRunSaysWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, jobs.Options{Concurrency: 1})
	for _, c := range []struct {
		name string
		body any
		want []string
	}{
		{"problems all bad", map[string]any{"problems": "not json at all\n{\"id\": 5}\n"}, []string{"no problem to run", "problems line 1:", "1 more line"}},
		{"samples all bad", map[string]any{"problems": problems, "samples": "garbage\n"}, []string{"nothing to run", "samples line 1:"}},
	} {
		code, body := e.do("alice", "POST", "/v1/jobs", c.body, nil)
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", c.name, code, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s: %s, want it to say %q", c.name, body, w)
			}
		}
	}
}

// waitFor polls job id until ok(view) holds, or fails the test after a
// minute.
func (e *env) waitFor(tenant, id string, ok func(jobs.View) bool) jobs.View {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var v jobs.View
		if code, body := e.do(tenant, "GET", "/v1/jobs/"+id, nil, &v); code != http.StatusOK {
			e.t.Fatalf("get job %s: %d %s", id, code, body)
		}
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s: still %+v", id, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobsSurviveARestart: the store keeps the jobs. A finished job's
// verdicts and summary are served as they were by a server started anew
// on the same store; a job the first server stopped as it shut down is
// interrupted there, its verdict kept, and resumes: only the item without
// a verdict runs again, and the job ends with both.
func TestJobsSurviveARestart(t *testing.T) {
	t.Parallel()
	db := newStore(t, 0)
	first := newEnv(t, jobs.Options{Concurrency: 1, Store: db})
	var done, stopped jobs.View
	if code, body := first.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: problems, K: []int{1}}, &done); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	first.events(done.ID)
	var before jobs.Verdicts
	first.do("alice", "GET", "/v1/jobs/"+done.ID+"/verdicts", nil, &before)
	// One quick item, then one that runs long enough to be stopped.
	twoSteps := `{"id": "quick", "code": "def f():\n    return 1", "test": "assert f() == 1"}
{"id": "slow", "code": "import time\ntime.sleep(8)", "test": "assert True"}
`
	if code, body := first.do("alice", "POST", "/v1/jobs", jobs.Request{Problems: twoSteps}, &stopped); code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", code, body)
	}
	first.waitFor("alice", stopped.ID, func(v jobs.View) bool { return v.Done == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := first.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}

	second := newEnv(t, jobs.Options{Concurrency: 1, Store: db})
	var got jobs.View
	if code, body := second.do("alice", "GET", "/v1/jobs/"+done.ID, nil, &got); code != http.StatusOK {
		t.Fatalf("the finished job after the restart: %d %s", code, body)
	}
	if got.Status != jobs.StatusSucceeded || got.Done != 3 || got.Passed != 2 || got.Total != 3 || len(got.Skipped) != 1 ||
		got.Summary.Items != 3 || got.Summary.PassAtK["pass@1"] == 0 || got.FinishedAt.IsZero() {
		t.Errorf("the finished job after the restart: %+v", got)
	}
	var after jobs.Verdicts
	second.do("alice", "GET", "/v1/jobs/"+done.ID+"/verdicts", nil, &after)
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Errorf("verdicts before the restart:\n%s\nafter:\n%s", b1, b2)
	}
	var sum eval.Summary
	second.do("alice", "GET", "/v1/jobs/"+done.ID+"/summary", nil, &sum)
	if sum.Items != 3 || sum.Passed != 2 {
		t.Errorf("summary after the restart: %+v", sum)
	}
	if code, _ := second.do("bob", "GET", "/v1/jobs/"+done.ID, nil, nil); code != http.StatusNotFound {
		t.Errorf("bob reads alice's job after the restart: %d", code)
	}
	var list jobs.List
	second.do("alice", "GET", "/v1/jobs", nil, &list)
	if len(list.Jobs) != 2 || list.Jobs[0].ID != stopped.ID || list.Jobs[1].ID != done.ID {
		t.Errorf("jobs after the restart: %+v", list)
	}

	second.do("alice", "GET", "/v1/jobs/"+stopped.ID, nil, &got)
	if got.Status != jobs.StatusInterrupted || got.Done != 1 || got.Total != 2 || !strings.Contains(got.Error, "resume") {
		t.Fatalf("the stopped job after the restart: %+v", got)
	}
	names, last := second.events(stopped.ID)
	if strings.Join(names, " ") != "verdict end" || last.Status != jobs.StatusInterrupted {
		t.Errorf("the stopped job's events: %v %+v", names, last)
	}
	var quick jobs.Verdicts
	second.do("alice", "GET", "/v1/jobs/"+stopped.ID+"/verdicts", nil, &quick)
	if code, _ := second.do("bob", "POST", "/v1/jobs/"+stopped.ID+"/resume", nil, nil); code != http.StatusNotFound {
		t.Errorf("bob resumes alice's job: %d", code)
	}
	if code, body := second.do("alice", "POST", "/v1/jobs/"+done.ID+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming a finished job: %d %s", code, body)
	}
	if code, body := second.do("alice", "POST", "/v1/jobs/"+stopped.ID+"/resume", nil, &got); code != http.StatusAccepted || got.Status != jobs.StatusRunning {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, body := second.do("alice", "POST", "/v1/jobs/"+stopped.ID+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming a running job: %d %s", code, body)
	}
	_, last = second.events(stopped.ID)
	if last.Status != jobs.StatusSucceeded || last.Done != 2 || last.Passed != 2 || last.Summary.Resumed != 1 {
		t.Errorf("the resumed job: %+v", last)
	}
	var all jobs.Verdicts
	second.do("alice", "GET", "/v1/jobs/"+stopped.ID+"/verdicts", nil, &all)
	if len(all.Verdicts) != 2 || all.Verdicts[0].ID != "quick" || !all.Verdicts[0].Finished.Equal(quick.Verdicts[0].Finished) || all.Verdicts[1].ID != "slow" {
		t.Errorf("the resumed job's verdicts (the quick one kept, not run again): %+v", all.Verdicts)
	}
}

// TestJobOfADeadServer: a job whose server died (it stopped renewing its
// lease, and released nothing) shows as interrupted once the lease has
// expired, and another server resumes it.
func TestJobOfADeadServer(t *testing.T) {
	t.Parallel()
	db := newStore(t, time.Second)
	st, _ := db.Tenant("alice")
	spec, _ := json.Marshal(map[string]any{"request": jobs.Request{Problems: problems}, "skipped": []jobs.Skipped{{Input: "problems", Line: 3, Error: "bad"}}})
	rec, err := st.CreateJob(context.Background(), store.NewJob{Owner: store.NewOwner(), Total: 3, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, jobs.Options{Concurrency: 2, Store: db})
	var v jobs.View
	e.do("alice", "GET", "/v1/jobs/"+rec.ID, nil, &v)
	if v.Status != jobs.StatusRunning {
		t.Errorf("a job under a live lease: %+v", v)
	}
	if code, _ := e.do("alice", "POST", "/v1/jobs/"+rec.ID+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming a job another server runs: %d", code)
	}
	if code, _ := e.do("alice", "POST", "/v1/jobs/"+rec.ID+"/cancel", nil, nil); code != http.StatusConflict {
		t.Errorf("cancelling a job another server runs: %d", code)
	}
	time.Sleep(time.Until(rec.LeaseUntil) + 50*time.Millisecond)
	e.do("alice", "GET", "/v1/jobs/"+rec.ID, nil, &v)
	if v.Status != jobs.StatusInterrupted || v.Done != 0 {
		t.Fatalf("a job whose lease expired: %+v", v)
	}
	if code, body := e.do("alice", "POST", "/v1/jobs/"+rec.ID+"/resume", nil, nil); code != http.StatusAccepted {
		t.Fatalf("resume: %d %s", code, body)
	}
	_, last := e.events(rec.ID)
	if last.Status != jobs.StatusSucceeded || last.Done != 3 || last.Passed != 2 || len(last.Skipped) != 1 {
		t.Errorf("the resumed job: %+v", last)
	}
}

// TestCancelInterruptedJob: an interrupted job can be cancelled, which
// ends it for good with its verdicts.
func TestCancelInterruptedJob(t *testing.T) {
	t.Parallel()
	db := newStore(t, 0)
	st, _ := db.Tenant("alice")
	owner := store.NewOwner()
	spec, _ := json.Marshal(map[string]any{"request": jobs.Request{Problems: problems}})
	rec, err := st.CreateJob(context.Background(), store.NewJob{Owner: owner, Total: 3, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseJob(context.Background(), rec.ID, owner); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, jobs.Options{Store: db})
	var v jobs.View
	if code, body := e.do("alice", "POST", "/v1/jobs/"+rec.ID+"/cancel", nil, &v); code != http.StatusAccepted || v.Status != jobs.StatusCancelled {
		t.Fatalf("cancel an interrupted job: %d %s", code, body)
	}
	if code, _ := e.do("alice", "POST", "/v1/jobs/"+rec.ID+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming a cancelled job: %d", code)
	}
}
