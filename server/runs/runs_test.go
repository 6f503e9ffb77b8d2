package runs_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/server/input"
	"github.com/coderun/coderun/server/runs"
	"github.com/coderun/coderun/store"
)

func TestRunAnswersWhileStreamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c1", "python", "import csv\nrows = list(csv.DictReader(open('sales.csv')))\nprint('total', sum(int(r['amount']) for r in rows))\n").WithUsage(90, 30),
		llmtest.Reply("The total is 350.").WithUsage(60, 8),
	)
	id := e.startRun(runs.StartRequest{Task: "What is the total amount?", Files: []input.File{
		{Path: "sales.csv", ContentBase64: ptr(base64.StdEncoding.EncodeToString([]byte("month,amount\njan,150\nfeb,200\n")))}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := until(t, e.stream(ctx, id), func(ev event) bool { return ev.Name == "end" })
	kinds := names(evs)
	for _, want := range []string{"start", "model_call", "code", "review", "execution", "answer", "end(succeeded)"} {
		if !strings.Contains(kinds, want) {
			t.Errorf("events lack %s: %s", want, kinds)
		}
	}
	v := e.run(id)
	if v.Status != store.StatusSucceeded || v.Answer != "The total is 350." || v.Scorecard.InputTokens != 150 {
		t.Fatalf("run: %+v", v)
	}
	var steps runs.StepList
	e.do("alice", "GET", "/v1/runs/"+id+"/steps", nil, &steps)
	var ex agent.ExecutionRecord
	for _, s := range steps.Steps {
		if s.Kind == agent.StepExecution {
			if err := json.Unmarshal(s.Data, &ex); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.Contains(ex.Stdout, "total 350") {
		t.Errorf("execution: %+v", ex)
	}
	// The stream picks up after Last-Event-ID: only the end follows the
	// last step.
	evs = until(t, e.streamQuery(ctx, id, "?after="+lastStep(evs).ID), func(ev event) bool { return ev.Name == "end" })
	if got := names(evs); got != "status(succeeded) end(succeeded)" {
		t.Errorf("resumed stream: %s", got)
	}
	var list runs.RunList
	e.do("alice", "GET", "/v1/runs?status=succeeded&q=TOTAL", nil, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != id {
		t.Errorf("list: %+v", list)
	}
	e.do("alice", "GET", "/v1/runs?status=failed", nil, &list)
	if len(list.Runs) != 0 {
		t.Errorf("failed runs: %+v", list)
	}
	var files runs.FileList
	e.do("alice", "GET", "/v1/runs/"+id+"/files", nil, &files)
	if len(files.Files) != 1 || files.Files[0].Path != "sales.csv" || files.Files[0].Role != store.RoleInput || files.Files[0].Content != nil {
		t.Errorf("files: %+v", files)
	}
	if code, body := e.do("alice", "GET", "/v1/runs/"+id+"/files/sales.csv", nil, nil); code != 200 || !strings.HasPrefix(string(body), "month,amount") {
		t.Errorf("file: %d %s", code, body)
	}
	var stats runs.Stats
	e.do("alice", "GET", "/v1/stats?since=7d", nil, &stats)
	if stats.Runs != 1 || stats.Answered != 1 || len(stats.Days) != 1 || stats.Days[0].Answered != 1 || stats.Days[0].Tokens != 188 {
		t.Errorf("stats: %+v", stats)
	}
}

// lastStep is the last step event of evs.
func lastStep(evs []event) event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Name == "step" {
			return evs[i]
		}
	}
	return event{}
}

const childCode = "import subprocess\nout = subprocess.run(['echo', 'words:', '42'], capture_output=True, text=True).stdout\nprint('child said', out)\n"

func TestPendingStepApprovedThenCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c1", "python", childCode),
		llmtest.Reply("The child said 42."),
	)
	id := e.startRun(runs.StartRequest{Task: "Ask a child process for a number."})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := e.stream(ctx, id)
	until(t, evs, isStatus("status", store.StatusAwaitingApproval))
	v := e.run(id)
	var pending agent.PendingApproval
	if err := json.Unmarshal(v.Pending, &pending); err != nil || !strings.Contains(pending.Code, "subprocess") || len(pending.Findings) == 0 {
		t.Fatalf("pending: %s %v", v.Pending, err)
	}
	var queue runs.ReviewList
	e.do("alice", "GET", "/v1/review", nil, &queue)
	if len(queue.Items) != 1 || queue.Items[0].RunID != id || queue.Items[0].Kind != store.ReviewApproval {
		t.Fatalf("review queue: %+v", queue)
	}
	if code, body := e.do("alice", "POST", "/v1/runs/"+id+"/approve", runs.Decision{Note: "echo is harmless", By: "alice"}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	until(t, evs, isStatus("end", store.StatusSucceeded))
	if v := e.run(id); v.Answer != "The child said 42." {
		t.Fatalf("run: %+v", v)
	}
	e.do("alice", "GET", "/v1/review?all=true", nil, &queue)
	if len(queue.Items) != 1 || queue.Items[0].Status != store.ReviewClosed || queue.Items[0].Resolution != "approved" || queue.Items[0].Note != "echo is harmless" {
		t.Errorf("review queue: %+v", queue)
	}
	if code, _ := e.do("alice", "POST", "/v1/runs/"+id+"/approve", runs.Decision{}, nil); code != http.StatusConflict {
		t.Errorf("approving an ended run: %d", code)
	}
}

// TestShutdownEndsStreams: a stream following a run awaiting approval
// (which would stay open) ends as the server begins to shut down, with
// event "shutdown"; it held the shutdown for its whole grace period.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c1", "python", childCode),
		llmtest.Reply("The child said 42."),
	)
	id := e.startRun(runs.StartRequest{Task: "Ask a child process for a number."})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := e.stream(ctx, id)
	until(t, evs, isStatus("status", store.StatusAwaitingApproval))
	e.svc.Shutdown()
	until(t, evs, isStatus("shutdown", store.StatusAwaitingApproval))
	select {
	case ev, ok := <-evs:
		if ok {
			t.Errorf("an event after shutdown: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open after shutdown")
	}
}

func TestRejectionGoesBackToTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c1", "python", childCode),
		llmtest.RunCode("c2", "python", "print('words: 42')\n"),
		llmtest.Reply("It says 42."),
	)
	id := e.startRun(runs.StartRequest{Task: "Print the words."})
	e.await(id, store.StatusAwaitingApproval)
	if code, body := e.do("alice", "POST", "/v1/runs/"+id+"/reject", runs.Decision{Note: "no child processes, please"}, nil); code != http.StatusOK {
		t.Fatalf("reject: %d %s", code, body)
	}
	e.await(id, store.StatusSucceeded)
	reqs := e.model.Requests()
	if len(reqs) < 2 || !strings.Contains(string(reqs[1].Body), "no child processes, please") {
		t.Errorf("the model was not told the note")
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c1", "python", "import time\nprint('working', flush=True)\ntime.sleep(60)\n"),
		llmtest.RunCode("c2", "python", childCode),
	)
	// A run whose code is running is cancelled at once.
	id := e.startRun(runs.StartRequest{Task: "Work for a minute."})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := e.stream(ctx, id)
	until(t, evs, func(ev event) bool {
		var s store.Step
		return ev.Name == "step" && json.Unmarshal(ev.Data, &s) == nil && s.Kind == agent.StepReview
	})
	start := time.Now()
	if code, body := e.do("alice", "POST", "/v1/runs/"+id+"/cancel", nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	until(t, evs, isStatus("end", store.StatusCancelled))
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancelling took %s", d)
	}
	if code, _ := e.do("alice", "POST", "/v1/runs/"+id+"/cancel", nil, nil); code != http.StatusConflict {
		t.Errorf("cancelling an ended run: %d", code)
	}

	// A run awaiting approval, driven by no one, is cancelled too, and
	// leaves the review queue.
	id = e.startRun(runs.StartRequest{Task: "Ask a child."})
	e.await(id, store.StatusAwaitingApproval)
	if code, body := e.do("alice", "POST", "/v1/runs/"+id+"/cancel", nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	e.await(id, store.StatusCancelled)
	var queue runs.ReviewList
	e.do("alice", "GET", "/v1/review", nil, &queue)
	if len(queue.Items) != 0 {
		t.Errorf("open review items: %+v", queue)
	}
}

func TestShutdownLeavesRunsResumable(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		llmtest.RunCode("c0", "python", "print('never')\n").WithDelay(time.Minute),
		llmtest.RunCode("c1", "python", "print(6*7)\n"),
		llmtest.Reply("It is 42."),
	)
	id := e.startRun(runs.StartRequest{Task: "What is 6*7?"})
	for e.model.Pending() == 3 { // until the model call is under way
		time.Sleep(10 * time.Millisecond)
	}
	e.stop()
	e.start()
	v := e.run(id)
	if v.Status != store.StatusInterrupted || v.Outcome != "" || len(v.Failure) != 0 {
		t.Fatalf("after shutdown: %+v", v)
	}
	if code, body := e.do("alice", "POST", "/v1/runs/"+id+"/resume", nil, nil); code != http.StatusAccepted {
		t.Fatalf("resume: %d %s", code, body)
	}
	if v := e.await(id, store.StatusSucceeded); v.Answer != "It is 42." {
		t.Fatalf("resumed: %+v", v)
	}
	if code, _ := e.do("alice", "POST", "/v1/runs/"+id+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming an ended run: %d", code)
	}
}

func TestAnotherTenantsRunIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, llmtest.RunCode("c1", "python", childCode))
	id := e.startRun(runs.StartRequest{Task: "Ask a child."})
	e.await(id, store.StatusAwaitingApproval)
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/runs/" + id},
		{"GET", "/v1/runs/" + id + "/steps"},
		{"GET", "/v1/runs/" + id + "/events"},
		{"GET", "/v1/runs/" + id + "/files"},
		{"GET", "/v1/runs/" + id + "/notebook"},
		{"POST", "/v1/runs/" + id + "/approve"},
		{"POST", "/v1/runs/" + id + "/reject"},
		{"POST", "/v1/runs/" + id + "/cancel"},
		{"POST", "/v1/runs/" + id + "/resume"},
	} {
		if code, body := e.do("bob", r.method, r.path, nil, nil); code != http.StatusNotFound || !strings.Contains(string(body), `"not_found"`) {
			t.Errorf("bob %s %s: %d %s", r.method, r.path, code, body)
		}
	}
	var list runs.RunList
	e.do("bob", "GET", "/v1/runs", nil, &list)
	var queue runs.ReviewList
	e.do("bob", "GET", "/v1/review", nil, &queue)
	if len(list.Runs) != 0 || len(queue.Items) != 0 {
		t.Errorf("bob sees %+v %+v", list, queue)
	}
	if code, _ := e.do("", "GET", "/v1/runs", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("no tenant: %d", code)
	}
	// The run is still alice's to decide.
	if v := e.run(id); v.Status != store.StatusAwaitingApproval {
		t.Errorf("alice's run: %s", v.Status)
	}
}

func TestBadStartRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b64 := base64.StdEncoding.EncodeToString([]byte("x"))
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"empty task", map[string]any{"task": "  "}, "task: empty"},
		{"unknown field", map[string]any{"task": "x", "modle": "openai:x"}, "modle"},
		{"bad mode", map[string]any{"task": "x", "mode": "many"}, "mode"},
		{"bad approve", map[string]any{"task": "x", "approve": "maybe"}, "approve"},
		{"negative budget", map[string]any{"task": "x", "max_tokens": -1}, "max_tokens"},
		{"path out of the workspace", map[string]any{"task": "x", "files": []map[string]string{{"path": "../etc/passwd", "content_base64": b64}}}, "files[0]"},
		{"content not base64", map[string]any{"task": "x", "files": []map[string]string{{"path": "a.txt", "content_base64": "%%%"}}}, "base64"},
		{"bad duration", map[string]any{"task": "x", "max_time": "soon"}, "duration"},
		{"negative limit", map[string]any{"task": "x", "limits": map[string]any{"memory": -1}}, "limits.memory"},
		{"unknown provider", map[string]any{"task": "x", "model": "nosuch:model"}, "nosuch"},
	} {
		code, body := e.do("alice", "POST", "/v1/runs", c.body, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) || !strings.Contains(string(body), `"bad_request"`) {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
	}
	var list runs.RunList
	e.do("alice", "GET", "/v1/runs", nil, &list)
	if len(list.Runs) != 0 {
		t.Errorf("bad requests created runs: %+v", list.Runs)
	}
	if code, _ := e.do("alice", "GET", "/v1/runs?status=weird", nil, nil); code != http.StatusBadRequest {
		t.Errorf("bad status filter: %d", code)
	}
	if code, _ := e.do("alice", "GET", "/v1/stats?since=yesterday", nil, nil); code != http.StatusBadRequest {
		t.Errorf("bad since: %d", code)
	}
}

func ptr[T any](v T) *T { return &v }

func TestRunsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, runs.Options{MaxRunning: 1},
		llmtest.RunCode("c0", "python", "print('slow')\n").WithDelay(time.Minute),
		llmtest.RunCode("c1", "python", "print(6*7)\n"),
		llmtest.Reply("It is 42."),
	)
	first := e.startRun(runs.StartRequest{Task: "Think for a minute."})
	code, body := e.do("alice", "POST", "/v1/runs", runs.StartRequest{Task: "What is 6*7?", Model: "openai:test-model"}, nil)
	if code != http.StatusTooManyRequests || !strings.Contains(string(body), "at most 1") {
		t.Fatalf("a second run at once: %d %s", code, body)
	}
	// Another tenant has its own bound.
	if code, body := e.do("bob", "POST", "/v1/runs", runs.StartRequest{Task: "x", Model: "nosuch:model"}, nil); code != http.StatusBadRequest {
		t.Errorf("bob: %d %s", code, body)
	}
	e.do("alice", "POST", "/v1/runs/"+first+"/cancel", nil, nil)
	e.await(first, store.StatusCancelled)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v runs.RunView
		code, body := e.do("alice", "POST", "/v1/runs", runs.StartRequest{Task: "What is 6*7?", Model: "openai:test-model"}, &v)
		if code == http.StatusAccepted {
			e.await(v.ID, store.StatusSucceeded)
			break
		}
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after the first run ended: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond) // the first run's goroutine is finishing
	}
}
